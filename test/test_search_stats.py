"""torch.eye, angle of real tensors, frexp; searchsorted and bucketize, bincount, histc; repeat_interleave
(Tensor repeats), isin; unique, unique_consecutive and their dim forms run natively on opencl: values, shapes,
dtypes, gradients and errors against CPU PyTorch, with no CPU fallback (native_only), in whichever kernel class
the device runs (TORCH_OPENCL_KERNEL_CLASS). The order statistics (kthvalue, median, mode) are in
test_order_stats.py."""
import re

import pytest
import torch

from _device_helpers import assert_same_as_cpu, kernel_class, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=gen(seed)).to(dtype)


def ints(*shape, low=0, high=10, dtype=torch.int64, seed=0):
    return torch.randint(low, high, shape, generator=gen(seed)).to(dtype)


def on_device(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


def same(fn, *args, **kwargs):
    """fn on CPU against fn on opencl copies of its tensor arguments, run natively; returns the opencl result."""
    want = fn(*args, **kwargs)
    with native_only():
        got = fn(*[on_device(a) for a in args], **{k: on_device(v) for k, v in kwargs.items()})
    assert_same_as_cpu(got, want)
    return got


def raises_like_cpu(fn, *args, **kwargs):
    """fn raises on opencl the exception CPU raises, with CPU's message (a NaN in it printed without its sign:
    CPU's reductions return x86's default NaN, whose sign bit is set)."""
    with pytest.raises(Exception) as cpu_error:
        fn(*args, **kwargs)
    message = str(cpu_error.value).splitlines()[0].replace("-nan", "nan")
    with pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[on_device(a) for a in args], **{k: on_device(v) for k, v in kwargs.items()})


def noncontiguous(x):
    """x's values in a tensor of another layout (a transposed copy transposed back)."""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2) if x.dim() >= 2 else x.repeat_interleave(2)[::2]


# ---- eye, angle, frexp ----


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool, torch.float16])
@pytest.mark.parametrize("n, m", [(0, 0), (1, 1), (4, None), (3, 5), (5, 3), (1, 7), (7, 0)])
def test_eye(dtype, n, m):
    args = (n,) if m is None else (n, m)
    want = torch.eye(*args, dtype=dtype)
    with native_only():
        got = torch.eye(*args, dtype=dtype, device=DEV)
    assert_same_as_cpu(got, want)


def test_eye_out_keeps_a_non_contiguous_out_and_checks_its_arguments():
    out_c = torch.full((5, 4), 7.0).t()
    out_d = out_c.to(DEV).t().contiguous().t()
    torch.eye(4, 5, out=out_c)
    with native_only():
        torch.eye(4, 5, out=out_d)
    assert out_d.stride() == out_c.stride()
    assert_same_as_cpu(out_d, out_c)
    raises_like_cpu(lambda out: torch.eye(-1, out=out), torch.empty(0))
    raises_like_cpu(lambda out: torch.eye(2, -3, out=out), torch.empty(0))


def test_angle_of_real_tensors_and_its_gradient():
    x = torch.tensor([-2.0, -0.0, 0.0, 3.0, float("inf"), float("-inf"), float("nan"), -1e-30])
    for dtype in FLOATS:
        same(torch.angle, x.to(dtype))
        same(lambda t: torch.angle(t, out=torch.empty(0, dtype=dtype, device=t.device)), x.to(dtype))
    for dtype in INTS + [torch.bool]:
        same(torch.angle, torch.tensor([-3, 0, 5, 1]).to(dtype) if dtype != torch.uint8 else torch.tensor([0, 5], dtype=dtype))
    same(torch.angle, noncontiguous(data(6, 5)))
    xd = data(4, 3, dtype=torch.float64).to(DEV).requires_grad_()
    with native_only():
        torch.angle(xd).sum().backward()
    assert torch.equal(xd.grad.cpu(), torch.zeros(4, 3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp(dtype):
    info = torch.finfo(dtype)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -1000.5, float("inf"), float("-inf"), float("nan"),
                            info.tiny, info.tiny / 8, -info.tiny / 1024, info.max, -info.max, info.eps], dtype=dtype)
    x = torch.cat([special, data(200, dtype=dtype) * 1e3, data(50, dtype=dtype) * 1e-30])
    mantissa, exponent = same(torch.frexp, x)
    assert exponent.dtype == torch.int32
    # -0.0's mantissa keeps its sign
    assert torch.equal(torch.signbit(mantissa.cpu()), torch.signbit(torch.frexp(x)[0]))
    same(torch.frexp, noncontiguous(data(7, 9, dtype=dtype)))
    # out=, and a mantissa written over its input
    same(lambda t: torch.frexp(t, out=(torch.empty(0, dtype=dtype, device=t.device),
                                       torch.empty(0, dtype=torch.int32, device=t.device))), x)
    xd = x.to(DEV)
    with native_only():
        m, e = torch.frexp(xd, out=(xd, torch.empty(0, dtype=torch.int32, device=DEV)))
    assert_same_as_cpu(m, torch.frexp(x)[0])
    assert_same_as_cpu(e, torch.frexp(x)[1])


def test_frexp_gradient_and_errors():
    x = data(5, 4, dtype=torch.float64)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    (torch.frexp(xc)[0] * torch.arange(20.0, dtype=torch.float64).view(5, 4)).sum().backward()
    with native_only():
        (torch.frexp(xd)[0] * torch.arange(20.0, dtype=torch.float64, device=DEV).view(5, 4)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    raises_like_cpu(torch.frexp, torch.arange(4))
    raises_like_cpu(lambda t: torch.frexp(t, out=(torch.empty(0, device=t.device),
                                                  torch.empty(0, dtype=torch.int64, device=t.device))), data(3))


# ---- searchsorted, bucketize ----


def sorted_data(*shape, dtype=torch.float32, seed=0, dups=False):
    x = ints(*shape, low=-20, high=20, seed=seed).to(dtype) if dups else data(*shape, dtype=dtype, seed=seed) * 10
    return x.sort(dim=-1).values


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.int16, torch.uint8])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d_and_batched(dtype, right):
    bd = sorted_data(33, dtype=dtype, dups=True) if dtype != torch.uint8 else torch.tensor([0, 2, 2, 5, 9], dtype=dtype)
    values = ints(6, 7, low=-25, high=25, seed=1).to(dtype) if dtype != torch.uint8 else ints(6, 7, high=12, dtype=dtype)
    same(torch.searchsorted, bd, values, right=right)
    same(torch.searchsorted, bd, values, side="right" if right else "left")
    same(torch.searchsorted, bd, values, right=right, out_int32=True)
    batched = sorted_data(6, 40, dtype=dtype, dups=True) if dtype != torch.uint8 else ints(6, 40, high=20, dtype=dtype).sort().values
    same(torch.searchsorted, batched, values, right=right)
    same(torch.searchsorted, batched.view(2, 3, 40), values.view(2, 3, 7), right=right)


def test_searchsorted_sorter_scalars_mixed_dtypes_nan_and_layouts():
    g = gen(3)
    bd = torch.randn(5, 30, generator=g)
    sorter = bd.argsort(dim=-1)
    values = torch.randn(5, 11, generator=g)
    same(torch.searchsorted, bd, values, sorter=sorter)
    same(torch.searchsorted, bd, values, sorter=sorter, side="right")
    flat = bd[0]
    same(torch.searchsorted, flat, values, sorter=flat.argsort())
    same(torch.searchsorted, flat.sort().values, 0.25)
    same(torch.searchsorted, flat.sort().values, 0.25, right=True, out_int32=True)
    same(torch.searchsorted, torch.arange(10), 3.5)  # an int sequence and a float scalar compare in float
    same(torch.searchsorted, torch.arange(10), torch.tensor([2.5, -1.0, 9.0, 11.0]))
    same(torch.searchsorted, torch.arange(10.0, dtype=torch.float64), torch.tensor([2, 3, 100]))
    nan = float("nan")
    same(torch.searchsorted, torch.tensor([1.0, 2.0, 3.0, nan, nan]), torch.tensor([nan, 2.0, 0.0, 5.0]))
    same(torch.searchsorted, torch.tensor([1.0, 2.0, 3.0, nan, nan]), torch.tensor([nan, 2.0]), right=True)
    same(torch.searchsorted, noncontiguous(bd.sort().values), noncontiguous(values))
    same(torch.searchsorted, bd.sort().values, torch.empty(5, 0))
    # out=, non-contiguous
    out_c = torch.zeros(11, 5, dtype=torch.int64).t()
    out_d = out_c.to(DEV).t().contiguous().t()
    torch.searchsorted(bd.sort().values, values, out=out_c)
    with native_only():
        torch.searchsorted(bd.sort().values.to(DEV), values.to(DEV), out=out_d)
    assert_same_as_cpu(out_d, out_c)
    with native_only():
        r = torch.searchsorted(flat.sort().values.to(DEV), 0.25, out=torch.empty(0, dtype=torch.int64, device=DEV))
    assert r.item() == torch.searchsorted(flat.sort().values, 0.25).item()


def test_searchsorted_errors():
    bd, v = torch.arange(10.0), torch.rand(3)
    raises_like_cpu(lambda b, x: torch.searchsorted(b, x, right=True, side="left"), bd, v)
    raises_like_cpu(lambda b, x: torch.searchsorted(b, x, side="middle"), bd, v)
    raises_like_cpu(torch.searchsorted, bd.view(2, 5), torch.rand(3, 2))
    raises_like_cpu(torch.searchsorted, bd.view(2, 5), torch.tensor(1.0))
    raises_like_cpu(lambda b, x, s: torch.searchsorted(b, x, sorter=s), bd, v, torch.arange(9))
    raises_like_cpu(lambda b, x, s: torch.searchsorted(b, x, sorter=s), bd, v, torch.arange(10) + 1)
    raises_like_cpu(lambda b, x, s: torch.searchsorted(b, x, sorter=s), bd, v, torch.arange(10, dtype=torch.int32))
    raises_like_cpu(lambda b, x: torch.searchsorted(b, x, out=torch.empty(0, dtype=torch.int32, device=b.device)),
                    bd, v)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32])
def test_bucketize(dtype):
    boundaries = torch.tensor([-5, 0, 0, 3, 10]).to(dtype)
    x = ints(4, 6, low=-8, high=12, seed=2).to(dtype)
    for right in (False, True):
        same(torch.bucketize, x, boundaries, right=right)
        same(torch.bucketize, x, boundaries, right=right, out_int32=True)
        same(torch.bucketize, 3, boundaries, right=right)
        same(lambda a, b: torch.bucketize(a, b, right=right, out=torch.empty(0, dtype=torch.int64, device=a.device)),
             x, boundaries)
    raises_like_cpu(torch.bucketize, x, boundaries.view(1, 5))


# ---- bincount, histc ----


@pytest.mark.parametrize("dtype", INTS)
def test_bincount(dtype):
    x = ints(300, high=40, dtype=dtype, seed=4)
    same(torch.bincount, x)
    same(torch.bincount, x, minlength=100)
    same(torch.bincount, x, minlength=3)
    same(lambda t: torch.bincount(t, weights=torch.rand(300, generator=gen(5), device="cpu").to(t.device)), x)
    same(lambda t: torch.bincount(t[::3]), x)
    same(torch.bincount, torch.zeros(0, dtype=dtype), minlength=5)


def test_bincount_weights_keep_cpus_dtypes_and_order():
    x = ints(5000, high=7, seed=6)
    for wdtype in [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16]:
        w = (torch.rand(5000, generator=gen(7)) * 100).to(wdtype)
        got = same(torch.bincount, x, w, minlength=9)
        assert got.dtype == (torch.float32 if wdtype == torch.float32 else torch.float64)
    # deterministic float sums (segment sums, no atomics); in the CPU class in the input's order, CPU's bits
    w = torch.randn(5000, generator=gen(8)) * 1e4
    with native_only():
        got = torch.bincount(x.to(DEV), w.to(DEV))
        again = torch.bincount(x.to(DEV), w.to(DEV))
    assert torch.equal(got.cpu(), again.cpu())
    if kernel_class() == "cpu":
        assert torch.equal(got.cpu(), torch.bincount(x, w))
    else:
        # float32 rounding of sums in another order: within a few ulp of each bin's sum of |w|
        scale = torch.bincount(x, w.abs()).max().item()
        torch.testing.assert_close(got.cpu(), torch.bincount(x, w), rtol=0, atol=4 * scale * 2 ** -24)


def test_bincount_errors():
    raises_like_cpu(torch.bincount, torch.tensor([1, -1, 2]))
    raises_like_cpu(torch.bincount, torch.tensor([[1, 2]]))
    raises_like_cpu(torch.bincount, torch.tensor([1.0, 2.0]))
    raises_like_cpu(lambda t: torch.bincount(t, minlength=-1), torch.tensor([1, 2]))
    raises_like_cpu(torch.bincount, torch.tensor([1, 2]), torch.tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc(dtype):
    x = data(1000, dtype=dtype, seed=9)
    same(torch.histc, x)
    same(torch.histc, x, bins=7)
    same(torch.histc, x, bins=10, min=-1, max=1)
    same(torch.histc, x, bins=4, min=0.5, max=0.5000001)
    same(torch.histc, noncontiguous(data(20, 30, dtype=dtype)), bins=13)
    # the edges themselves, values just inside them and outside, NaN and infinity (skipped)
    edges = torch.linspace(-1, 1, 11, dtype=dtype)
    special = torch.tensor([float("nan"), float("inf"), float("-inf"), -1.0, 1.0, 2.0], dtype=dtype)
    same(torch.histc, torch.cat([edges, edges.nextafter(edges + 1), edges.nextafter(edges - 1), special]), bins=10,
         min=-1, max=1)
    same(torch.histc, torch.full((5,), 3.0, dtype=dtype))  # min == max: widened
    same(torch.histc, torch.full((5,), 1e8, dtype=dtype), bins=3)
    same(torch.histc, torch.empty(0, dtype=dtype), bins=3)
    same(lambda t: torch.histc(t, bins=6, out=torch.empty(0, dtype=dtype, device=t.device)), x)


def test_histc_errors():
    raises_like_cpu(torch.histc, data(10), bins=0)
    raises_like_cpu(torch.histc, data(10), bins=5, min=2, max=1)
    raises_like_cpu(torch.histc, torch.tensor([1.0, float("inf")]))
    raises_like_cpu(torch.histc, torch.tensor([1.0, float("nan")]))


# ---- repeat_interleave, isin ----


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave_tensor_repeats(dtype):
    repeats = torch.tensor([2, 0, 3, 1, 0, 5]).to(dtype)
    got = same(torch.repeat_interleave, repeats)
    assert got.dtype == dtype
    same(lambda r: torch.repeat_interleave(r, output_size=11), repeats)
    same(torch.repeat_interleave, torch.zeros(4, dtype=dtype))
    same(torch.repeat_interleave, torch.zeros(0, dtype=dtype))
    same(torch.repeat_interleave, ints(1000, high=9, seed=10).to(dtype))
    # the composites over it
    x = data(6, 4)
    same(lambda t, r: t.repeat_interleave(r, dim=0), x, repeats.long())
    same(lambda t, r: t.repeat_interleave(r, dim=1, output_size=8), x, torch.tensor([1, 2, 0, 5]))
    same(lambda t: t.repeat_interleave(3), x)
    same(lambda t: t.repeat_interleave(2, dim=-1), x)


def test_repeat_interleave_gradient_and_errors():
    x = data(6, 4, dtype=torch.float64)
    r = torch.tensor([2, 0, 3, 1, 0, 5])
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    g = data(11, 4, dtype=torch.float64, seed=1)
    xc.repeat_interleave(r, dim=0).backward(g)
    with native_only():
        xd.repeat_interleave(r.to(DEV), dim=0).backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    raises_like_cpu(torch.repeat_interleave, torch.tensor([1, -2, 3]))
    raises_like_cpu(torch.repeat_interleave, torch.tensor([[1, 2]]))
    raises_like_cpu(torch.repeat_interleave, torch.tensor([1.0, 2.0]))
    if kernel_class() == "cpu":  # GPU-class devices take a given output_size unchecked, as CUDA does
        raises_like_cpu(lambda t: torch.repeat_interleave(t, output_size=5), torch.tensor([1, 2, 3]))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_isin(dtype):
    elements = ints(7, 9, high=30, seed=11).to(dtype)
    for ntest in (0, 1, 5, 40, 2000):
        test = ints(ntest, high=30, seed=12).to(dtype)
        for invert in (False, True):
            same(torch.isin, elements, test, invert=invert)
            same(torch.isin, elements, test, assume_unique=True, invert=invert) if ntest < 40 else None
    same(torch.isin, noncontiguous(elements), noncontiguous(ints(8, 3, high=30, dtype=dtype)))
    same(torch.isin, elements, 4)
    same(torch.isin, elements, 4, invert=True)
    same(torch.isin, 4, ints(10, high=10, dtype=dtype))
    same(lambda e, t: torch.isin(e, t, out=torch.empty(0, dtype=torch.bool, device=e.device)), elements,
         ints(20, high=30, dtype=dtype))


def test_isin_mixed_dtypes_nan_and_signed_zero():
    nan = float("nan")
    same(torch.isin, torch.tensor([1.0, nan, -0.0, 2.5, 3.0]), torch.tensor([nan, 0.0, 3.0, 7.0]))
    same(torch.isin, torch.tensor([1.0, nan, -0.0, 2.5, 3.0]), torch.tensor([nan, 0.0, 3.0]), invert=True)
    same(torch.isin, torch.arange(10), torch.tensor([2.0, 3.5, 9.0]))
    same(torch.isin, torch.arange(10.0, dtype=torch.float64), torch.tensor([2, 3, 11], dtype=torch.int32))
    same(torch.isin, data(50) * 3, (data(300, seed=1) * 3).round())
    raises_like_cpu(torch.isin, torch.tensor([True, False]), torch.tensor([True]))


# ---- unique, unique_consecutive ----


def unique_cases(dtype):
    if dtype == torch.bool:
        return [torch.tensor([True, False, True]), torch.tensor([True, True]), torch.zeros(0, dtype=torch.bool)]
    cases = [ints(500, high=30, seed=13).to(dtype), ints(4, 5, 6, high=7, seed=14).to(dtype),
             torch.tensor(3).to(dtype), torch.zeros(0, dtype=dtype), torch.zeros(2, 0, 3, dtype=dtype),
             ints(7, high=3, seed=15).to(dtype)]
    if dtype.is_floating_point:
        nan = float("nan")
        cases.append(torch.tensor([2.0, nan, 1.0, nan, 2.0, -1.5, nan], dtype=dtype))
        cases.append(data(300, dtype=dtype))
    return cases


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
def test_unique(dtype):
    for x in unique_cases(dtype):
        for return_inverse in (False, True):
            for return_counts in (False, True):
                same(torch.unique, x, return_inverse=return_inverse, return_counts=return_counts)
                same(torch.unique_consecutive, x, return_inverse=return_inverse, return_counts=return_counts)
        same(torch.unique, x, sorted=False, return_inverse=True)
    same(torch.unique_consecutive, noncontiguous(ints(6, 5, high=2, dtype=dtype) if dtype != torch.bool
                                                  else torch.rand(6, 5, generator=gen(1)) > 0.5), return_counts=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool])
def test_unique_dim(dtype):
    def make(*shape, high=2, seed=16):
        x = ints(*shape, high=high, seed=seed)
        return (x > 0) if dtype == torch.bool else x.to(dtype)

    x = make(20, 3)
    for dim in (0, 1, -1):
        same(torch.unique, x, dim=dim, return_inverse=True, return_counts=True)
        same(torch.unique, x, dim=dim)
        same(torch.unique_consecutive, x, dim=dim, return_inverse=True, return_counts=True)
    y = make(4, 6, 5, high=2, seed=17)
    y = torch.cat([y, y[:, :2]], dim=1)  # repeated slices along dim 1
    for dim in (0, 1, 2):
        same(torch.unique, y, dim=dim, return_inverse=True, return_counts=True)
        same(torch.unique_consecutive, y, dim=dim, return_inverse=True, return_counts=True)
    same(torch.unique_consecutive, make(5), dim=0, return_inverse=True, return_counts=True)
    same(torch.unique, make(0, 3), dim=0, return_inverse=True, return_counts=True)
    raises_like_cpu(lambda t: torch.unique(t, dim=0), make(2, 0))
    raises_like_cpu(lambda t: torch.unique(t, dim=1), make(0, 0, 2))
