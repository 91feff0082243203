"""The row-wise families' two kernel forms (runtime/kernel_forms.h: row_gpu_forms): softmax/log_softmax,
layer_norm, batch_norm, cross_entropy, forward and backward, against CPU, on shapes that reach each
branch of the GPU forms (kernels_cl/softmax_gpu.cl, normalization_gpu.cl): lines shorter than a
segment and longer than the registers hold, several lines per group and items past the last line,
columns of a non-last dim, one and several blocks of the two-stage reductions, planes smaller and
larger than a group. Each case also asserts which kernels ran: the GPU forms under
TORCH_OPENCL_KERNEL_CLASS=gpu (scripts/test.sh's second pass), the CPU forms otherwise."""

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import kernel_class, launched_kernels, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
GPU = kernel_class() == "gpu"


def gen(seed):
    return torch.Generator().manual_seed(seed)


def expect_forms(names, gpu, cpu):
    """The kernels of the device's class ran, and none of the other class's."""
    want, other = (gpu, cpu) if GPU else (cpu, gpu)
    ran = set(names)
    assert any(n in ran for n in want) if isinstance(want, tuple) else set(want) <= ran, (want, names)
    flat_other = other if isinstance(other, (list, tuple)) else [other]
    assert not ran & set(flat_other), (other, names)


def run_both(fn, inputs, grad_seed=99):
    """fn on CPU copies and natively on opencl, forward and backward through every floating input;
    returns (cpu results, opencl results, the kernel names the opencl call launched)."""
    results = []
    names = []
    for device in ("cpu", DEV):
        leaves = [t.detach().to(device).requires_grad_(t.is_floating_point()) for t in inputs]
        if device == DEV:
            with native_only(), launched_kernels() as names:
                out = fn(*leaves)
                g = torch.randn(out.shape, generator=gen(grad_seed), dtype=torch.float64).to(out.dtype).to(device)
                grads = torch.autograd.grad(out, [t for t in leaves if t.requires_grad], g)
        else:
            out = fn(*leaves)
            g = torch.randn(out.shape, generator=gen(grad_seed), dtype=torch.float64).to(out.dtype)
            grads = torch.autograd.grad(out, [t for t in leaves if t.requires_grad], g)
        results.append([out.detach().cpu(), *[t.cpu() for t in grads]])
    return results[0], results[1], names


def assert_close_all(want, got, rtol, atol):
    for w, g in zip(want, got):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)


# ---- softmax / log_softmax ----

SOFTMAX_GPU = ["softmax_lines", "softmax_backward_lines"]
SOFTMAX_CPU = ("softmax_rows", "softmax_rows_group", "softmax_columns")

# (shape, dim): rows of 1 and of a few elements (many lines per group), 37 rows (items past the last
# line), the attention shape scaled down, rows longer than a group's registers (256 * 8), columns
# with small and large inner sizes and a long dim.
SOFTMAX_CASES = [((37, 1), -1), ((300, 5), -1), ((37, 256), -1), ((24, 64, 64), -1), ((3, 5000), -1),
                 ((1, 2049), -1), ((6, 40, 3), 1), ((2, 1500, 3), 1), ((100, 70), 0), ((4, 7, 45, 33), 1)]


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("shape,dim", SOFTMAX_CASES)
def test_softmax_forms(fn, shape, dim):
    x = torch.randn(shape, generator=gen(1)) * 4
    want, got, names = run_both(lambda t: fn(t, dim), [x])
    assert_close_all(want, got, 1e-5, 1e-6)
    expect_forms(names, SOFTMAX_GPU, SOFTMAX_CPU)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float16, 1e-2), (torch.bfloat16, 4e-2)])
@pytest.mark.parametrize("shape,dim", [((37, 256), -1), ((3, 3000), -1), ((5, 300, 7), 1)])
def test_softmax_forms_other_dtypes(dtype, tol, shape, dim):
    # Reduced precision: compared with float64 on the same rounded inputs (math in float on opencl).
    x = torch.randn(shape, generator=gen(2)).to(dtype)
    ref = torch.float64 if dtype != torch.float64 else None
    for fn in (F.softmax, F.log_softmax):
        want, got, names = run_both(lambda t: fn(t.to(ref) if ref and t.device.type == "cpu" else t, dim), [x])
        assert_close_all([w.to(dtype) if ref else w for w in want[:1]], got[:1], tol, tol)
        torch.testing.assert_close(got[1].to(torch.float64), want[1].to(torch.float64), rtol=tol, atol=tol)
        expect_forms(names, SOFTMAX_GPU, SOFTMAX_CPU)


def test_softmax_forms_strided_special_values_and_empty():
    x = torch.randn(64, 300, generator=gen(3)).t()[:, ::2]  # (300, 32), not contiguous
    want, got, names = run_both(lambda t: F.softmax(t, 0), [x])
    assert_close_all(want, got, 1e-5, 1e-6)
    expect_forms(names, SOFTMAX_GPU, SOFTMAX_CPU)
    y = torch.randn(40, 600, generator=gen(4))
    y[3] = float("-inf")
    y[5, 7] = float("nan")
    y[6, 500] = float("inf")
    y[7, 599] = float("-inf")
    with native_only():
        for dim in (0, 1):
            for fn in (F.softmax, F.log_softmax):
                torch.testing.assert_close(fn(y.to(DEV), dim).cpu(), fn(y, dim), rtol=1e-5, atol=1e-6,
                                           equal_nan=True)
            safe = torch._safe_softmax(y.to(DEV), dim).cpu()
            torch.testing.assert_close(safe, torch._safe_softmax(y, dim), rtol=1e-5, atol=1e-6, equal_nan=True)
        assert F.softmax(torch.empty(0, 7, device=DEV), 1).shape == (0, 7)
        assert F.log_softmax(torch.empty(3, 0, device=DEV), 1).shape == (3, 0)


# ---- cross_entropy (log_softmax + nll_loss) ----

NLL_GPU = ["nll_reduce_partials", "nll_reduce_finish"]
NLL_CPU = ("nll_forward_reduce",)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(512, 100), (3, 3000), (64, 10, 5, 3)])
def test_log_softmax_nll_loss_forms(shape, weighted, reduction):
    # 512 * 1 and 64 * 15 targets: several groups of partial sums; 3 targets: one. (cross_entropy of these
    # logits runs fused: test_cross_entropy.py.)
    x = torch.randn(shape, generator=gen(5)) * 3
    target = torch.randint(0, shape[1], (shape[0], *shape[2:]), generator=gen(6))
    target.view(-1)[::7] = -100
    weight = torch.rand(shape[1], generator=gen(7)) + 0.5 if weighted else None
    want, got, names = run_both(
        lambda t, y: F.nll_loss(F.log_softmax(t, 1), y, weight=weight.to(t.device) if weighted else None,
                                reduction=reduction),
        [x, target])
    assert_close_all(want, got, 1e-4, 1e-5)
    expect_forms(names, SOFTMAX_GPU, SOFTMAX_CPU)
    expect_forms(names, NLL_GPU, NLL_CPU)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_nll_loss_forms_all_ignored_empty_and_dtypes(dtype):
    x = torch.randn(300, 9, generator=gen(8)).to(dtype)
    target = torch.randint(0, 9, (300,), generator=gen(9))
    with native_only(), launched_kernels() as names:
        got = F.nll_loss(x.to(DEV), target.to(DEV)).cpu()
        ignored = F.nll_loss(x.to(DEV), torch.full((300,), -100, device=DEV)).cpu()
        empty_sum = F.nll_loss(torch.empty(0, 9, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.long, device=DEV),
                               reduction="sum").cpu()
    want = F.nll_loss(x.double(), target)
    tol = 1e-12 if dtype == torch.float64 else 1e-3
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)
    assert ignored.isnan() and empty_sum == 0
    expect_forms(names, NLL_GPU, NLL_CPU)


# ---- layer norm ----

LAYER_NORM_GPU = ["layer_norm_lines_forward", "layer_norm_lines_backward", "layer_norm_param_columns"]
LAYER_NORM_CPU = ("layer_norm_rows_forward", "norm_rows_forward")


# Rows of 1, 7, 64 (several per group; 4096 rows: parameter gradients in several row blocks),
# 384 (the benchmark's width), 3000 (past the registers), a 2-d normalized shape.
@pytest.mark.parametrize("shape,normalized", [((4096, 64), (64,)), ((37, 7), (7,)), ((200, 1), (1,)),
                                              ((300, 384), (384,)), ((3, 3000), (3000,)), ((20, 6, 5), (6, 5))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forms(shape, normalized, affine):
    x = torch.randn(shape, generator=gen(7)) * 2 + 1
    params = [torch.randn(normalized, generator=gen(8)), torch.randn(normalized, generator=gen(9))] if affine else []
    want, got, names = run_both(lambda t, *p: F.layer_norm(t, normalized, *p), [x, *params])
    # Rows of one element: x - mean is 0, so CPU's weight gradient is its rounding noise times
    # rstd = 1/sqrt(eps) (about 2e-4 here), opencl's exactly 0.
    assert_close_all(want, got, 1e-4, 1e-3 if normalized == (1,) else 1e-4)
    expect_forms(names, LAYER_NORM_GPU if affine else LAYER_NORM_GPU[:2], LAYER_NORM_CPU)
    if affine and GPU and shape[0] >= 4096:
        assert "layer_norm_param_combine" in names, names


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float16, 2e-2), (torch.bfloat16, 1e-1)])
def test_layer_norm_forms_other_dtypes(dtype, tol):
    x = torch.randn(130, 96, generator=gen(10)).to(dtype)
    w, b = torch.randn(96, generator=gen(11)).to(dtype), torch.randn(96, generator=gen(12)).to(dtype)
    ref = torch.float64

    def fn(t, p, q):
        t, p, q = (v.to(ref) if v.device.type == "cpu" else v for v in (t, p, q))
        return F.layer_norm(t, (96,), p, q)

    want, got, names = run_both(fn, [x, w, b])
    for wv, gv in zip(want, got):
        torch.testing.assert_close(gv.to(ref), wv.to(ref), rtol=tol, atol=tol)
    expect_forms(names, LAYER_NORM_GPU, LAYER_NORM_CPU)


def test_layer_norm_forms_large_mean_and_strided():
    # x = 1000 + randn in float32: the variance about the mean, not E[x^2] - E[x]^2 (which would
    # be off by O(1) here). Against float64 on the same inputs: float32's spacing at 1000 (6e-5)
    # bounds what either device can reach.
    x = 1000 + torch.randn(300, 64, generator=gen(13)).t()  # (64, 300), not contiguous
    want, got, names = run_both(lambda t: F.layer_norm(t.double() if t.device.type == "cpu" else t, (300,)), [x])
    for w, g in zip(want, got):
        torch.testing.assert_close(g.double(), w.double(), rtol=1e-3, atol=1e-3)
    expect_forms(names, LAYER_NORM_GPU[:2], LAYER_NORM_CPU)


# ---- batch norm ----

BN_GPU = ["bn_stats_blocks", "bn_apply_planes", "bn_backward_blocks", "bn_backward_apply_planes"]
BN_CPU = ("bn_stats", "bn_apply", "bn_backward_reduce", "bn_backward_apply")


def batch_norm_case(x, training, dtype=None, rtol=1e-4, atol=1e-4):
    C = x.shape[1]
    w, b = torch.randn(C, generator=gen(14)) + 1, torch.randn(C, generator=gen(15))
    rm, rv = torch.randn(C, generator=gen(16)), torch.rand(C, generator=gen(17)) + 0.5
    if dtype is not None:
        x, w, b, rm, rv = (t.to(dtype) for t in (x, w, b, rm, rv))
    stats = {}

    def fn(t, weight, bias):
        r_mean, r_var = rm.clone().to(t.device), rv.clone().to(t.device)
        out = F.batch_norm(t, r_mean, r_var, weight, bias, training=training, momentum=0.1, eps=1e-5)
        stats[t.device.type] = (r_mean, r_var)
        return out

    want, got, names = run_both(fn, [x, w, b])
    assert_close_all(want, got, rtol, atol)
    for a, c in zip(stats[DEV], stats["cpu"]):
        torch.testing.assert_close(a.cpu(), c, rtol=rtol, atol=atol)
    return names


# (N, C, S...): planes of 1 (BatchNorm1d), 4, 15 (not dividing a group) and 1024 (wider than a
# group); few channels with many elements (several blocks per channel) and many with few (one).
@pytest.mark.parametrize("shape", [(64, 10), (8, 3, 32, 32), (4, 64, 2, 2), (16, 5, 3, 5), (2, 7, 300), (1, 4, 9)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_forms(shape, training):
    x = torch.randn(shape, generator=gen(18)) * 2 + 0.5
    names = batch_norm_case(x, training)
    gpu, cpu = (BN_GPU, BN_CPU) if training else (["bn_apply_planes", "bn_backward_apply_planes"],
                                                  ("bn_apply", "bn_backward_apply"))
    expect_forms(names, gpu, cpu)
    if GPU and training and shape == (8, 3, 32, 32):
        assert {"bn_stats_combine", "bn_backward_combine"} <= set(names), names  # two stages
    if GPU and training and shape == (4, 64, 2, 2):
        assert "bn_stats_combine" not in names, names  # one block per channel


@pytest.mark.parametrize("outlier", [False, True])
def test_batch_norm_forms_large_mean(outlier):
    # x = 1000 + randn in float32: one pass over the data, no catastrophic cancellation (compared
    # with statistics computed in float64); also with an outlier first in every channel.
    x = 1000 + torch.randn(16, 4, 20, 20, generator=gen(19))
    if outlier:
        x[0, :, 0, 0] = 1e4
    with native_only():
        _, mean, invstd = torch.native_batch_norm(x.to(DEV), None, None, None, None, True, 0.1, 1e-5)
    x64 = x.double()
    want_mean = x64.mean(dim=(0, 2, 3))
    want_invstd = 1 / torch.sqrt(x64.var(dim=(0, 2, 3), unbiased=False) + 1e-5)
    torch.testing.assert_close(mean.cpu().double(), want_mean, rtol=1e-6, atol=0)
    torch.testing.assert_close(invstd.cpu().double(), want_invstd, rtol=1e-4, atol=0)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float16, 2e-2), (torch.bfloat16, 1e-1)])
def test_batch_norm_forms_other_dtypes(dtype, tol):
    x = torch.randn(6, 3, 17, 17, generator=gen(20))
    names = batch_norm_case(x, True, dtype, tol, tol) if dtype == torch.float64 else None
    if dtype != torch.float64:
        # Reduced precision: opencl (float math) against CPU float64 on the same rounded inputs.
        xr = x.to(dtype)
        with native_only(), launched_kernels() as names:
            out = F.batch_norm(xr.to(DEV), None, None, training=True).cpu()
        want = F.batch_norm(xr.double(), None, None, training=True)
        torch.testing.assert_close(out.double(), want, rtol=tol, atol=tol)
    expect_forms(names, BN_GPU[:2], BN_CPU[:2])


def test_batch_norm_forms_strided_input_and_zero_batch():
    x = torch.randn(5, 8, 6, 6, generator=gen(21)).transpose(2, 3)
    names = batch_norm_case(x, True)
    expect_forms(names, BN_GPU, BN_CPU)
    with native_only():
        out, mean, invstd = torch.native_batch_norm(torch.empty(0, 3, 4, device=DEV), None, None, None, None, True,
                                                    0.1, 1e-5)
    assert out.shape == (0, 3, 4) and mean.cpu().isnan().all() and invstd.cpu().isnan().all()
