"""Edges where the device once differed from CPU PyTorch (issue 14): layouts through the CPU
fallback, empty tensors, bad inputs that CPU refuses, and settings that must not lie. Each test
gives the CPU's answer or the CPU's error; test_fuzz.py searches for more of the kind."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

DEV = "opencl"
HERE = os.path.dirname(os.path.abspath(__file__))


pytestmark = pytest.mark.usefixtures("silent_fallback")


def first_line(error):
    """The message's first line, without the note TORCH_CHECK adds to a check with no message and without the
    note a deferred index check adds (where it was recorded)."""
    line = str(error).splitlines()[0].split("  (Could this error message be improved?")[0]
    return line.split(" (recorded by ")[0]


def same_error(fn, *cpu_args):
    """fn raises the same exception type with the same first line on CPU and on the device."""
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(Exception) as dev:
        fn(*[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in cpu_args])
        # The GPU kernel class defers index checks to the next synchronization (kernel_forms.h).
        torch.opencl.synchronize()
    assert type(dev.value) is type(cpu.value), (dev.value, cpu.value)
    assert first_line(dev.value) == first_line(cpu.value)
    assert (torch.ones(2, device=DEV) * 3).sum().item() == 6  # the device keeps working


# --- The fallback keeps layouts -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["det", "slogdet", "logdet"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_det_family_gradient_of_a_strided_input(name, dtype):
    fn = {"det": torch.linalg.det, "slogdet": lambda a: torch.linalg.slogdet(a)[1], "logdet": torch.logdet}[name]
    g = torch.Generator().manual_seed(0)
    base = torch.randn(5, 10, generator=g, dtype=dtype) + 4 * torch.eye(5, 10, dtype=dtype)
    grads = []
    for device in ("cpu", DEV):
        b = base.to(device, copy=True).requires_grad_()
        fn(b[:, ::2]).backward()  # the strided view reaches the CPU kernel with its strides
        grads.append(b.grad.cpu())
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(grads[1], grads[0], rtol=tol, atol=tol)


def test_fallback_results_have_the_cpus_strides():
    x = torch.randn(4, 6)
    for fn in (lambda t: torch.igamma(t.t().abs() + 0.5, t.t().abs() + 0.5),
               lambda t: torch.linalg.inv(t[:, :4] @ t[:, :4].t() + 4 * torch.eye(4, device=t.device)).t(),
               lambda t: torch.linalg.qr(t)[0], lambda t: torch.mvlgamma(t[:, ::2].abs() + 1, 1)):
        want, got = fn(x), fn(x.to(DEV))
        assert got.device.type == DEV and got.stride() == want.stride(), (got.stride(), want.stride())
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_fallback_sees_aliasing_and_overlap_as_cpu_does():
    # Writing to an expanded tensor: CPU refuses (more than one element refers to one location).
    same_error(lambda t: t.expand(3, 4).lgamma_(), torch.rand(4) + 1)
    # Two views of one storage stay one storage: an in-place op through one is seen by the other.
    x = torch.rand(8) + 1
    for t in (x.clone(), x.clone().to(DEV)):
        torch.lgamma(t[:4], out=t[4:])
    d = x.clone().to(DEV)
    c = x.clone()
    torch.lgamma(c[:4], out=c[4:])
    torch.lgamma(d[:4], out=d[4:])
    torch.testing.assert_close(d.cpu(), c)


def test_fallback_views_at_offsets_and_past_the_end():
    base = torch.randn(30)
    for view in (lambda t: t[5:17].view(3, 4).t(), lambda t: t[30:].view(0, 2), lambda t: t[29:].expand(3, 1)):
        want = torch.lgamma(view(base).abs() + 1)
        got = torch.lgamma(view(base.to(DEV)).abs() + 1)
        torch.testing.assert_close(got.cpu(), want)


# --- Empty tensors ------------------------------------------------------------------------------


@pytest.mark.parametrize("reduce", [torch.sum, torch.mean, torch.prod, torch.linalg.vector_norm, torch.amax,
                                    torch.logsumexp])
def test_reductions_of_an_empty_view_at_the_end_of_its_storage(reduce):
    def fn(t):
        empty = t.split_with_sizes([1, 4, 0])[2]
        return reduce(empty) if reduce not in (torch.amax, torch.logsumexp) else reduce(empty, dim=0)

    x = torch.zeros(5, 5, 5)
    try:
        want = fn(x)
    except Exception:  # noqa: BLE001 - amax of an empty dim: the error must match
        same_error(fn, x)
        return
    got = fn(x.to(DEV))
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def test_backward_of_empty_batches_and_empty_splits():
    def run(device):
        g = torch.Generator().manual_seed(0)
        w = torch.randn(4, 3, generator=g).to(device).requires_grad_()
        wb = torch.randn(4, 3, 2, generator=g).to(device).requires_grad_()
        x = torch.randn(5, 3, generator=g).to(device).requires_grad_()
        x0, y0 = torch.randn(0, 3).to(device), torch.randn(0, 2).to(device)
        a, b, c = x.split_with_sizes([1, 4, 0])
        loss = F.linear(x0, w).sum() + F.bilinear(x0, y0, wb).sum() + a.sum() + (b * 2).sum() + c.sum()
        loss.backward()
        return [t.grad.cpu() for t in (w, wb, x)]

    for got, want in zip(run(DEV), run("cpu")):
        torch.testing.assert_close(got, want)


def test_empty_views_everywhere_on_the_launch_path():
    x = torch.arange(24.0).view(4, 6)
    d = x.to(DEV)
    for fn in (lambda t: t[4:] + 1, lambda t: t[:, 6:].exp(), lambda t: t[4:].cumsum(0), lambda t: t[4:].t().contiguous(),
               lambda t: t[4:].softmax(-1), lambda t: t[:, 6:] @ t[:, 6:].t(), lambda t: torch.cat([t[4:], t[4:]]),
               lambda t: t[4:].sort(-1)[0], lambda t: t.view(-1)[24:].index_select(0, torch.zeros(0, dtype=torch.long,
                                                                                                 device=t.device))):
        torch.testing.assert_close(fn(d).cpu(), fn(x))


# --- Bad inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1.5, -0.5, float("nan")])
def test_bernoulli_probability_out_of_range(p):
    same_error(torch.bernoulli, torch.tensor([p, 0.5]))
    same_error(lambda t: torch.empty(2, device=t.device).bernoulli_(t), torch.tensor([p, 0.5]))
    same_error(lambda t: t.bernoulli_(p), torch.zeros(3))


@pytest.mark.parametrize("conv,x,w", [(F.conv1d, (1, 1, 5), (1, 1, 2)), (F.conv2d, (1, 1, 5, 5), (1, 1, 2, 2)),
                                      (F.conv_transpose2d, (1, 1, 5, 5), (1, 1, 2, 2))])
@pytest.mark.parametrize("bad", [dict(dilation=0), dict(dilation=-1), dict(stride=0), dict(padding=-1)])
def test_convolution_with_a_bad_argument_raises(conv, x, w, bad):
    with pytest.raises(RuntimeError) as cpu:
        conv(torch.randn(x), torch.randn(w), **bad)
    with pytest.raises(RuntimeError) as dev:
        conv(torch.randn(x, device=DEV), torch.randn(w, device=DEV), **bad)
    key = next(iter(bad))
    assert key in str(dev.value), (str(dev.value), str(cpu.value))


@pytest.mark.parametrize("conv,x,w", [(F.conv1d, (1, 1, 3), (1, 1, 0)), (F.conv2d, (1, 1, 3, 3), (1, 1, 0, 2)),
                                      (F.conv2d, (1, 1, 3, 3), (1, 1, 2, 0)),
                                      (F.conv_transpose1d, (1, 1, 3), (1, 1, 0)),
                                      (F.conv_transpose2d, (1, 1, 3, 3), (1, 1, 0, 1))])
def test_convolution_with_an_empty_kernel_raises(conv, x, w):
    # Found by the fuzzer: the device returned an output larger than its input.
    same_error(conv, torch.ones(x), torch.ones(w))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_remainder_fmod_and_division_edges(dtype):
    lo = torch.iinfo(dtype).min
    a = torch.tensor([lo, 7, -7, lo, 5], dtype=dtype)
    b = torch.tensor([-1, -1, 2, 3, -1], dtype=dtype)
    # The expected values from Python's integers, wrapped to the dtype as CPU PyTorch 2.13 gives them
    # (MIN / -1 wraps to MIN). Older CPU builds die of SIGFPE computing MIN / -1 in int32 and int64.
    bits = torch.iinfo(dtype).bits

    def wrap(n):
        return (n - lo) % 2**bits + lo

    def trunc_div(x, y):
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    expected = {torch.remainder: lambda x, y: x % y, torch.fmod: lambda x, y: x - y * trunc_div(x, y),
                torch.floor_divide: lambda x, y: x // y, "trunc": trunc_div}
    for key, ref in expected.items():
        fn = (lambda x, y: torch.div(x, y, rounding_mode="trunc")) if key == "trunc" else key
        want = torch.tensor([wrap(ref(x, y)) for x, y in zip(a.tolist(), b.tolist())], dtype=dtype)
        assert torch.equal(fn(a.to(DEV), b.to(DEV)).cpu(), want), key
    zero = torch.tensor([1, 0], dtype=dtype)
    for fn in (torch.remainder, torch.fmod, torch.floor_divide, lambda x, y: torch.div(x, y, rounding_mode="trunc"),
               lambda x, y: x.remainder_(y)):
        same_error(fn, a[:2].clone(), zero)  # CPU: ZeroDivisionError
    unsigned = torch.tensor([200, 3], dtype=torch.uint8)
    torch.testing.assert_close(torch.remainder(unsigned.to(DEV), 255).cpu(), torch.remainder(unsigned, 255))


@pytest.mark.parametrize("fn", [torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor, lambda x, y: torch.bitwise_not(x),
                                lambda x, y: x << y])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_integer_only_operators_refuse_floats(fn, dtype):
    # Their float expression is absent: that once reached the code generator as a null pointer (a crash).
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError):  # NotImplementedError is one, as on CPU
        fn(x, x)
    with pytest.raises(RuntimeError):
        fn(x.to(DEV), x.to(DEV))
    with pytest.raises(RuntimeError):
        fn(x[:0].to(DEV), x[:0].to(DEV))  # empty, as on CPU
    assert (torch.ones(2, device=DEV) * 3).sum().item() == 6


def test_abs_of_bool_is_not_implemented():
    for device in ("cpu", DEV):
        with pytest.raises(NotImplementedError):
            torch.abs(torch.tensor([True, False], device=device))


@pytest.mark.parametrize("fn", [torch.floor_divide, torch.remainder, torch.fmod,
                                lambda x, y: torch.div(x, y, rounding_mode="trunc")])
@pytest.mark.parametrize("sizes", [(), (3,), (0,)])
def test_integer_division_of_bool_is_not_implemented(fn, sizes):
    # A 0-dim, a 1-d and an empty pair: CPU refuses bool in each (found by the fuzzer: a value came back).
    x = torch.ones(sizes, dtype=torch.bool)
    with pytest.raises(NotImplementedError):
        fn(x, x)
    with pytest.raises(NotImplementedError):
        fn(x.to(DEV), x.to(DEV))
    assert (torch.ones(2, device=DEV) * 3).sum().item() == 6


@pytest.mark.parametrize("fn", [torch.floor, torch.ceil, torch.round, torch.trunc])
def test_rounding_of_bool_is_not_implemented_and_of_integers_is_identity(fn):
    for sizes in [(), (3,), (0,)]:  # found by the fuzzer: bool came back unchanged
        for device in ("cpu", DEV):
            with pytest.raises(NotImplementedError):
                fn(torch.ones(sizes, dtype=torch.bool, device=device))
    x = torch.tensor([-3, 0, 7], dtype=torch.int32)
    assert torch.equal(fn(x.to(DEV)).cpu(), fn(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_of_a_reduced_input_with_float_statistics(dtype):
    # CPU's mixed form: its running statistics must be updated (the fuzzer found them left as they were,
    # an expanded input among its cases), and the gradients match.
    g = torch.Generator().manual_seed(0)
    x0, w0, b0 = torch.randn(4, 3, 5, generator=g).to(dtype), torch.rand(3, generator=g), torch.rand(3, generator=g)
    results = []
    for device in ("cpu", DEV):
        x, w, b = (t.to(device, copy=True).requires_grad_() for t in (x0, w0, b0))
        mean, var = torch.zeros(3, device=device), torch.ones(3, device=device)
        y = F.batch_norm(x, mean, var, w, b, training=True, momentum=0.5)
        y.float().pow(2).sum().backward()
        evaluated = F.batch_norm(x, mean, var, w, b, training=False)
        results.append([t.detach().cpu() for t in (y, mean, var, x.grad, w.grad, b.grad, evaluated)])
    for cpu, dev in zip(*results):
        assert dev.dtype == cpu.dtype
        tol = 1e-4 if cpu.dtype == torch.float32 else 2e-2  # statistics and parameter gradients are float
        torch.testing.assert_close(dev, cpu, rtol=tol, atol=tol)
    same_error(lambda x, m: F.batch_norm(x, m, m.clone(), training=True), torch.randn(2, 3),
               torch.zeros(3, dtype=torch.float64))  # other mixes: CPU's error


def test_index_select_of_an_empty_dimension():
    same_error(lambda w, i: F.embedding(i, w), torch.zeros(0, 3), torch.tensor(0))
    same_error(lambda w, i: torch.index_select(w, 0, i), torch.zeros(0, 3), torch.tensor([0]))
    same_error(lambda w, i: torch.index_select(w, 0, i), torch.zeros(0), torch.tensor(0))  # 1-d: IndexError
    # 2-d and more: CPU raises RuntimeError for an empty self or along dim 1, IndexError otherwise (the fuzzer
    # found the device giving IndexError for all).
    for sizes, dim in [((0, 1), 1), ((2, 1), -1), ((2, 0), 0), ((3, 2), 1), ((3, 2), 0), ((3, 2, 2), 2)]:
        for index in (torch.tensor(-2), torch.tensor([5])):
            same_error(lambda w, i: torch.index_select(w, dim, i), torch.zeros(sizes), index)


def test_batch_norm_of_a_1d_input():
    same_error(lambda x: F.batch_norm(x, torch.zeros(1, device=x.device), torch.ones(1, device=x.device)),
               torch.randn(1))


# --- Settings that must not lie -----------------------------------------------------------------


def _child(code, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_OPENCL_")}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True,
                          timeout=180, cwd=HERE)
    return proc


def test_a_bad_fallback_mode_is_an_error_every_time():
    proc = _child("""
        import torch, torch_opencl
        x = torch.rand(3, device="opencl")
        for attempt in range(3):
            try:
                torch.special.modified_bessel_i0(x)  # an operator on the fallback
                print("ran")
            except RuntimeError as e:
                print("error:", str(e).splitlines()[0])
        torch.opencl.set_fallback_mode("silent")  # a valid mode set at run time replaces it
        print("now", float(torch.special.modified_bessel_i0(x).sum().cpu()) > 0)
        """, TORCH_OPENCL_FALLBACK="eror")
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["error: TORCH_OPENCL_FALLBACK='eror' is not a fallback mode; use one of: warn, silent, "
                         "error."] * 3, (proc.stdout, proc.stderr)
    assert lines[3] == "now True"


def test_is_available_says_false_and_warns_once_when_no_driver_exists():
    proc = _child("""
        import warnings, torch, torch_opencl
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(torch.opencl.is_available(), torch.opencl.is_available())
        print(len([w for w in caught if "is_available" in str(w.message)]))
        print([str(w.message) for w in caught])
        try:
            torch.opencl.device_count()
        except RuntimeError as e:
            print("device_count raises")
        """, OCL_ICD_VENDORS="/nonexistent/torch_opencl_test_vendors", OCL_ICD_FILENAMES="",
                  TORCH_OPENCL_PLATFORM="pocl")
    lines = proc.stdout.splitlines()
    assert lines[0] == "False False" and lines[1] == "1", (proc.stdout, proc.stderr)
    assert "no OpenCL ICD is installed" in lines[2], lines[2]
    assert lines[3] == "device_count raises"


@pytest.mark.parametrize("exponent_is_scalar_base", [False, True])
def test_pow_of_bools_is_not_implemented_as_on_cpu(exponent_is_scalar_base):
    t = torch.tensor([True, False])
    if exponent_is_scalar_base:
        same_error(lambda e: torch.pow(True, e), t)
    else:
        same_error(lambda a, b: torch.pow(a, b), t, t)
        same_error(lambda a, b: a.pow_(b), t.clone(), t)
    # A bool to a scalar power is defined (the exponent can only be 0 or 1), and so is a bool to an int.
    for e in (True, False, 2):
        assert torch.equal(torch.pow(t.to(DEV), e).cpu(), torch.pow(t, e))


@pytest.mark.parametrize("dst, src", [((1, 0), (0, 0)), ((0,), (2,)), ((2, 0), (3, 0))])
def test_copy_into_an_empty_tensor_still_broadcasts(dst, src):
    for dst_device, src_device in ((DEV, DEV), (DEV, "cpu"), ("cpu", DEV)):
        with pytest.raises(RuntimeError) as cpu:
            torch.empty(dst).copy_(torch.empty(src))
        with pytest.raises(RuntimeError) as dev:
            torch.empty(dst, device=dst_device).copy_(torch.empty(src, device=src_device))
        assert first_line(dev.value) == first_line(cpu.value)
    torch.empty((0, 3), device=DEV).copy_(torch.empty((1, 3), device=DEV))  # one that broadcasts


def test_addmm_with_an_empty_product_checks_that_self_broadcasts():
    same_error(lambda s, a, b: torch.addmm(s, a, b), torch.randn(2, 0), torch.randn(1, 0), torch.randn(0, 0))
    # k = 0 and beta = 0: the GEMM never reads self, CPU still expands it.
    same_error(lambda s, a, b: torch.addmm(s, a, b, beta=0), torch.randn(2, 1), torch.randn(1, 0), torch.randn(0, 1))
    got = torch.addmm(torch.randn(1, 0, device=DEV), torch.randn(3, 0, device=DEV), torch.randn(0, 0, device=DEV))
    assert got.shape == (3, 0)


@pytest.mark.parametrize("value", [-1.5, 300])
def test_masked_fill_of_an_empty_tensor_checks_the_value_fits(value):
    same_error(lambda t, m: t.masked_fill_(m, value), torch.zeros(0, dtype=torch.uint8), torch.zeros(0, dtype=torch.bool))
    empty = torch.zeros(0, dtype=torch.uint8, device=DEV).masked_fill_(torch.zeros(0, dtype=torch.bool, device=DEV), 2.5)
    assert empty.shape == (0,)


@pytest.mark.parametrize("op", [torch.floor_divide, torch.remainder, torch.fmod,
                                lambda a, b: torch.div(a, b, rounding_mode="trunc")])
def test_integer_division_by_a_divisor_that_casts_to_zero(op):
    # A 0-d int64 divisor does not promote an int32 tensor: INT64_MIN is cast to 0, and CPU raises.
    same_error(op, torch.tensor([5], dtype=torch.int32), torch.tensor(-2**63))
    assert torch.equal(op(torch.tensor([5], dtype=torch.int32, device=DEV), torch.tensor(3, device=DEV)).cpu(),
                       op(torch.tensor([5], dtype=torch.int32), torch.tensor(3)))


def test_advanced_indexing_with_an_empty_result_reads_and_refuses_no_index():
    # CPU checks an index when its kernel reads it; another dim of size 0 leaves nothing to read.
    idx = torch.tensor([5])
    for fn in (lambda t, i: t[i], lambda t, i: t[:, :, i],
               lambda t, i: t.clone().index_put_((i,), torch.zeros((), dtype=t.dtype, device=t.device)),
               lambda t, i: t.clone().index_put_((i,), torch.zeros((), dtype=t.dtype, device=t.device), accumulate=True)):
        x = torch.empty(1, 0, 2)
        assert fn(x.to(DEV), idx.to(DEV)).shape == fn(x, idx).shape
    same_error(lambda t, i: t[i], torch.empty(2, 3), idx)  # a result with elements still checks
    same_error(lambda t, i: t[:, i], torch.empty(1, 0, 2), idx)  # indexing a dim of size 0 itself


@pytest.mark.parametrize("fn, shapes", [
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=2, dilation=2), ((1, 1, 1, 1), (1, 1, 2, 2))),
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=2, dilation=2, output_padding=1), ((1, 1, 1, 1), (1, 1, 2, 2))),
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=2, dilation=2, output_padding=1), ((1, 1, 2, 1), (1, 1, 2, 2))),
    (lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=2, dilation=2), ((1, 1, 1), (1, 1, 2))),
])
def test_transposed_convolution_with_no_output_is_refused_as_on_cpu(fn, shapes):
    same_error(fn, torch.randn(shapes[0]), torch.randn(shapes[1]))


def test_transposed_convolution_with_one_tap_allows_dilation_zero_as_on_cpu():
    # Dilation multiplies nothing in a one-tap kernel. CPU's oneDNN path (batch 2 and more) computes it,
    # its batch-1 path refuses it; the device computes it at every batch size.
    x, w = torch.randn(2, 3, 4, 5), torch.randn(3, 2, 1, 1)
    expected = F.conv_transpose2d(x, w, dilation=0)
    got = F.conv_transpose2d(x.to(DEV), w.to(DEV), dilation=0).cpu()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(F.conv_transpose2d(x[:1].to(DEV), w.to(DEV), dilation=0).cpu(), expected[:1])
    same_error(lambda a, b: F.conv2d(a, b, dilation=0), x, torch.randn(2, 3, 1, 1))  # a regular one refuses it


def test_transposed_convolution_with_an_output_size_of_zero_is_refused_at_every_batch_size():
    # CPU's batch-1 path refuses it (above); its oneDNN path (batch 2 and more) returns an empty tensor.
    # The device refuses it at every batch size, with the batch-1 path's message.
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose1d(torch.randn(2, 1, 1, device=DEV), torch.randn(1, 1, 2, device=DEV), padding=1)


@pytest.mark.parametrize("op", [lambda t: t.clamp(min=300), lambda t: torch.add(t, t, alpha=300),
                                lambda t: F.threshold(t, 1, 300), lambda t: torch.addcmul(t, t, t, value=300),
                                lambda t: t.float().clamp(min=1e300)])
def test_a_scalar_argument_that_does_not_fit_is_refused_for_empty_tensors_too(op):
    # CPU's kernels convert their scalar arguments before the loop (run_pointwise does the same).
    same_error(op, torch.ones(0, dtype=torch.uint8))


U8 = torch.tensor([1, 2, 0, 255], dtype=torch.uint8)


@pytest.mark.parametrize("op", [
    lambda t: t + 300, lambda t: t * 300, lambda t: 300 - t, lambda t: t // 300, lambda t: t % 300,
    lambda t: t == 257, lambda t: t < 300, lambda t: t & 257, lambda t: t << 300, lambda t: 300 ** t,
    lambda t: t.clone().add_(300), lambda t: torch.maximum(t, torch.tensor(300)), lambda t: torch.fmod(t, 300),
    lambda t: t.to(torch.int8) + -200, lambda t: t.int() + 2**40,
    lambda t: t.float() + 1e300, lambda t: t.float() * -1e300, lambda t: t.float() < 1e300,
    lambda t: t.float() == 1e300, lambda t: t.int() + 1e300, lambda t: t.float() ** 1e300,
    lambda t: t.float() ** -1e300,
], ids=["add", "mul", "rsub", "floordiv", "mod", "eq", "lt", "and", "lshift", "pow_base", "add_", "maximum_0d",
        "fmod", "int8", "int32", "f32_add", "f32_mul", "f32_lt", "f32_eq", "int_to_float", "pow_inf", "pow_minf"])
def test_a_python_number_operand_is_cast_not_checked_as_on_cpu(op):
    # TensorIterator casts a Python number (or 0-d CPU tensor) operand to the common dtype: integers wrap
    # and a double beyond float's range is inf. Only scalar arguments (alpha, clamp's bounds) are checked.
    expected = op(U8)
    got = op(U8.to(DEV)).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, equal_nan=True)


@pytest.mark.parametrize("op", [lambda t: t ** 300, lambda t: t.add(1, alpha=300), lambda t: t.clamp(max=300),
                                lambda t: t.clone().fill_(300),
                                lambda t: torch.where(t > 0, t, 300)])
def test_a_scalar_argument_that_does_not_fit_is_still_refused(op):
    same_error(op, U8)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", [lambda t: t - 65519.0, lambda t: t + 0.1, lambda t: 3.3 - t, lambda t: t * 0.1,
                                lambda t: t / 3.3, lambda t: 1.7 / t, lambda t: torch.div(t, 0.1, rounding_mode="floor"),
                                lambda t: torch.maximum(t, torch.tensor(0.1))],
                         ids=["sub_edge", "add", "rsub", "mul", "div", "rdiv", "floordiv", "maximum"])
def test_a_python_number_operand_of_a_reduced_float_tensor_rounds_as_on_cpu(op, dtype):
    # CPU rounds the number to half/bfloat16 first (half - 65519.0 subtracts 65504, not -inf), except mul and
    # the divisions, which read a divisor or factor unrounded in float: bit for bit, not within tolerance.
    x = (torch.randn(2000, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    if dtype == torch.float16:
        x[0] = -2.0  # - 65519.0 is -65521 unrounded (-inf in half), -65506 rounded (-65504)
    assert torch.equal(op(x.to(DEV)).cpu(), op(x))


def test_a_half_exponent_that_does_not_fit_half_is_refused_as_on_cpu():
    same_error(lambda t: t ** 65519.0, torch.ones(3, dtype=torch.float16))


@pytest.mark.parametrize("op", [
    lambda t: torch.add(t, t, alpha=70000.0), lambda t: torch.sub(t, 1.0, alpha=70000.0), lambda t: t.clamp(max=70000.0),
    lambda t: t.clamp_min(-70000.0), lambda t: F.threshold(t, 0.0, 70000.0), lambda t: F.hardtanh(t, -70000.0, 1.0),
    lambda t: t.masked_fill(t > 0, 70000.0), lambda t: t.clone().fill_(70000.0), lambda t: torch.logit(t, 70000.0),
    lambda t: t.index_fill(0, torch.tensor([0], device=t.device), 70000.0),
    lambda t: t.index_fill(0, torch.tensor([], dtype=torch.long, device=t.device), 70000.0),
    lambda t: torch._foreach_maximum([t], 70000.0), lambda t: torch._foreach_add([t], [t], alpha=70000.0),
    lambda t: torch._foreach_clamp_max([t, t], [1.0, 70000.0]),
], ids=["add_alpha", "sub_alpha", "clamp", "clamp_min", "threshold_value", "hardtanh", "masked_fill", "fill_",
        "logit_eps", "index_fill", "index_fill_no_index", "foreach_maximum", "foreach_add_alpha", "foreach_clamp_max"])
def test_a_scalar_argument_is_checked_against_a_half_tensor_own_dtype(op):
    # CPU converts these arguments to the tensor's dtype (half's largest value is 65504), not to the float the
    # kernels compute in.
    same_error(op, torch.tensor([1.0, -2.0], dtype=torch.float16))


@pytest.mark.parametrize("op", [
    lambda t: torch.empty(0, dtype=torch.uint8, device=t.device).fill_(300),
    lambda t: torch.empty(3, dtype=torch.bfloat16, device=t.device).fill_(1e39),
    lambda t: torch._foreach_lerp([t], [t], 1e300), lambda t: torch._foreach_addcmul([t], [t], [t], 1e300),
    lambda t: t.to(torch.uint8).index_fill(0, torch.tensor([1], device=t.device), 300),
])
def test_a_fill_or_weight_that_does_not_fit_is_refused_as_on_cpu(op):
    same_error(op, torch.tensor([1.0, -2.0]))


def test_a_one_element_fill_and_nan_to_num_cast_without_a_check_as_on_cpu():
    for fn in (lambda d: torch.empty(1, dtype=torch.float16, device=d).fill_(70000.0),
               lambda d: torch.nan_to_num(torch.tensor([float("nan"), float("inf"), -float("inf")], device=d), 1e300),
               lambda d: torch._foreach_mul([torch.ones(2, device=d)], 1e300)[0]):
        assert torch.equal(fn(DEV).cpu(), fn("cpu"))


def test_activations_keep_their_accuracy_where_a_naive_form_cancels():
    # elu once computed exp(x) - 1 (relative error 1.7e-4 at x = -1e-4; CPU uses expm1); tanh stopped one ulp
    # short of 1 on PoCL, so tanh's and mish's gradients at x = 100 were 1.2e-7 and 1.0000119, and gelu's tanh
    # form gave -3e-6 at x = -104 instead of -0.
    x = torch.cat([-torch.logspace(-8, 1, 200), torch.logspace(-8, 1, 200), torch.tensor([-104.0, -20.0, 9.1, 100.0])])
    for fn in (F.elu, lambda v: F.celu(v, 3.0), F.selu, torch.tanh, F.mish):
        torch.testing.assert_close(fn(x.to(DEV)).cpu(), fn(x), rtol=1e-5, atol=1e-7)
    for fn in (torch.tanh, F.mish, lambda v: F.gelu(v, approximate="tanh")):
        xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
        gc, = torch.autograd.grad(fn(xc).sum(), xc)
        gd, = torch.autograd.grad(fn(xd).sum(), xd)
        torch.testing.assert_close(gd.cpu(), gc, rtol=1e-5, atol=1e-6)
    y = F.gelu(torch.tensor([-104.0, -20.0], device=DEV), approximate="tanh").cpu()
    assert torch.equal(y, torch.zeros(2)) and bool(torch.signbit(y).all())


def test_double_erfinv_keeps_its_accuracy_near_plus_and_minus_one():
    # Newton steps on erf(x) - y lose everything to cancellation there: erfinv(1 - 1e-12) was 8% off in double.
    eps = torch.finfo(torch.float64).eps
    y = torch.cat([1 - torch.arange(1, 300, dtype=torch.float64) * eps / 2, 1 - torch.logspace(-16, -1, 60,
                   dtype=torch.float64), torch.linspace(-0.99, 0.99, 199, dtype=torch.float64)])
    y = torch.cat([y, -y, torch.tensor([1.0, -1.0, 0.0, float("nan"), 2.0], dtype=torch.float64)])
    torch.testing.assert_close(torch.erfinv(y.to(DEV)).cpu(), torch.erfinv(y), rtol=1e-12, atol=0, equal_nan=True)


def test_hardsigmoid_propagates_nan_as_on_cpu():
    x = torch.tensor([float("nan"), -4.0, 0.0, 4.0])
    torch.testing.assert_close(F.hardsigmoid(x.to(DEV)).cpu(), F.hardsigmoid(x), equal_nan=True)


def test_autograd_zero_gradients_are_efficient_zero_tensors_on_the_device():
    # sgn's gradient for a real input is an _efficientzerotensor; through the CPU fallback it was a null host
    # pointer copied to the device (an OpenCL error).
    x = torch.tensor([1.0, -2.0, 0.0], device=DEV, requires_grad=True)
    g, = torch.autograd.grad(torch.sgn(x).sum(), x)
    assert g.device.type == DEV and g._is_zerotensor()
    assert torch.equal(g.cpu(), torch.zeros(3)) and torch.equal((g + 1).cpu(), torch.ones(3))
    (torch.sgn(x) * 3 + x).sum().backward()
    assert torch.equal(x.grad.cpu(), torch.ones(3))
    z = torch._efficientzerotensor((2, 3), device=DEV)
    assert torch.equal(torch.mm(z, torch.ones(3, 2, device=DEV)).cpu(), torch.zeros(2, 2))
    assert torch.opencl.fallback_stats().get("aten::_efficientzerotensor", 0) == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_an_input_of_another_dtype_is_rounded_to_a_half_common_dtype_first(dtype):
    # CPU converts every input to the common dtype before computing in float: int64 70000 into half is inf
    # (so 70000 // 2.0 is nan there, not 35008), 2049 is 2048; a 0-d float32 tensor rounds likewise.
    ints = torch.tensor([70000, -70000, 2049, 2051, 3, 1 << 20])
    values = torch.tensor([2.0, 3.0, 0.5, 1.0, 0.25, 1.5], dtype=dtype)
    for fn in (torch.mul, torch.add, torch.sub, torch.div, torch.floor_divide, torch.maximum, torch.eq, torch.lt):
        torch.testing.assert_close(fn(ints.to(DEV), values.to(DEV)).cpu(), fn(ints, values), rtol=0, atol=0,
                                   equal_nan=True)
    for v in (65519.0, 65520.0, 2050.99, 1e-7, 3.0e-8, 3.3e38, float("nan")):
        zero_d = torch.tensor(v)
        torch.testing.assert_close(torch.mul(zero_d.to(DEV), values.to(DEV)).cpu(), torch.mul(zero_d, values),
                                   rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("shape,shifts,dims", [((0, 0), 0, 2), ((0, 3), 1, 5), ((0,), (1, 2), (3, -7))])
def test_roll_of_an_empty_tensor_ignores_its_dims_as_on_cpu(shape, shifts, dims):
    got = torch.zeros(shape, device=DEV).roll(shifts, dims)
    assert got.device.type == DEV and got.shape == torch.zeros(shape).roll(shifts, dims).shape
