"""F.unfold / F.fold (aten::im2col / col2im), F.adaptive_max_pool2d, torch.trace, torch.vdot and
torch.linalg.cross run natively on opencl: values, shapes, dtypes, gradients and errors against CPU PyTorch,
with no CPU fallback (native_only), in whichever kernel class the device runs (TORCH_OPENCL_KERNEL_CLASS)."""
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import assert_same_as_cpu, kernel_class, launched_kernels, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}
SUM_TOL = {torch.float32: 1e-4, torch.float64: 1e-12}  # results that add many terms (fold, trace, vdot)


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def check_grad(fn, *inputs, tol=None):
    """fn's values and its inputs' gradients on opencl (natively) against CPU's, for a random grad_output."""
    leaves_c = [x.detach().clone().requires_grad_() for x in inputs]
    leaves_d = [x.detach().to(DEV).requires_grad_() for x in inputs]
    want = fn(*leaves_c)
    t = (tol or TOL)[want.dtype]
    with native_only():
        got = fn(*leaves_d)
    assert got.device.type == "opencl" and got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=t, atol=t, equal_nan=True)
    g = data(*want.shape, dtype=want.dtype, seed=1)
    grads_c = torch.autograd.grad(want, leaves_c, g)
    with native_only():
        grads_d = torch.autograd.grad(got, leaves_d, g.to(DEV))
    for gd, gc in zip(grads_d, grads_c):
        assert gd.shape == gc.shape and gd.dtype == gc.dtype
        torch.testing.assert_close(gd.cpu(), gc, rtol=t, atol=t)


def raises_like_cpu(fn, *inputs):
    """fn raises on opencl the exception CPU raises, with CPU's message."""
    with pytest.raises(Exception) as cpu_error:
        fn(*inputs)
    message = str(cpu_error.value).splitlines()[0]
    with pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in inputs])


def layouts(x):
    """x, a non-contiguous view of the same values (a transposed copy transposed back) and, for 4-D x,
    its channels_last copy."""
    out = [x, x.transpose(-1, -2).contiguous().transpose(-1, -2)]
    if x.dim() == 4:
        out.append(x.contiguous(memory_format=torch.channels_last))
    return out


# ---- F.unfold / F.fold ----

# (input shape, kernel_size, dilation, padding, stride)
UNFOLD_CASES = [
    ((2, 3, 7, 8), 3, 1, 0, 1),
    ((2, 3, 7, 8), (2, 3), (1, 2), (1, 0), (2, 1)),
    ((1, 2, 9, 6), (3, 2), 2, (2, 1), (1, 3)),
    ((1, 2, 2, 3), 4, 1, 2, 1),            # kernel larger than the input, padding makes room
    ((1, 2, 2, 3), (5, 3), (1, 2), (2, 2), (3, 2)),
    ((3, 1, 1, 5), (1, 2), 1, 0, 1),       # size-1 dims
    ((0, 3, 5, 5), 2, 1, 1, 2),            # batch 0
    ((3, 6, 5), (2, 2), 1, 1, (2, 1)),     # no batch dim
    ((2, 4, 5, 4), 1, 1, 0, 1),            # 1x1 blocks: a reshape
]


def blocks(hw, k, d, p, s):
    pair = lambda v: (v, v) if isinstance(v, int) else v
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(pair, (k, d, p, s))
    return ((hw[0] + 2 * ph - dh * (kh - 1) - 1) // sh + 1) * ((hw[1] + 2 * pw - dw * (kw - 1) - 1) // sw + 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k,d,p,s", UNFOLD_CASES)
def test_unfold_matches_cpu(dtype, shape, k, d, p, s):
    for x in layouts(data(*shape, dtype=dtype)):
        check_grad(lambda t: F.unfold(t, k, d, p, s), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k,d,p,s", UNFOLD_CASES)
def test_fold_matches_cpu(dtype, shape, k, d, p, s):
    hw = shape[-2:]
    kh, kw = (k, k) if isinstance(k, int) else k
    planes = shape[-3] * kh * kw
    col_shape = (planes, blocks(hw, k, d, p, s)) if len(shape) == 3 else (shape[0], planes, blocks(hw, k, d, p, s))
    for c in layouts(data(*col_shape, dtype=dtype, seed=3)):
        check_grad(lambda t: F.fold(t, hw, k, d, p, s), c, tol=SUM_TOL)


def test_unfold_fold_kernel_forms():
    # The CPU class walks rows (a work-item per output row); the GPU class takes a work-item per element.
    form = "rows" if kernel_class() == "cpu" else "elements"
    x = data(2, 3, 6, 7)
    with native_only(), launched_kernels() as names:
        col = F.unfold(x.to(DEV), 3, padding=1)
        F.fold(col, (6, 7), 3, padding=1)
        torch.opencl.synchronize()
    assert f"unfold_{form}" in names and f"fold_{form}" in names, names


def test_fold_overlaps_sum_in_cpus_order():
    # Every image element gathers up to 9 overlapping blocks; ties of large and small terms make the order
    # of the additions visible in float32, and the results must still equal CPU's exactly.
    c = data(2, 2 * 9, 25) * torch.tensor([1e8, 1.0, -1e8] * 6).view(1, 18, 1)
    want = F.fold(c, (5, 5), 3, padding=1)
    with native_only():
        got = F.fold(c.to(DEV), (5, 5), 3, padding=1)
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.bool])
def test_unfold_fold_other_dtypes_match_cpu(dtype):
    # CPU's col2im adds in the dtype (half and bfloat16 round each partial sum, bool saturates): equal results.
    x = (data(2, 3, 6, 5) * 4).to(dtype)
    c = (data(2, 3 * 4, 42, seed=2) * 4).to(dtype)  # 7 x 6 blocks
    for fn, t in ((lambda t: F.unfold(t, 2, padding=1), x), (lambda t: F.fold(t, (6, 5), 2, padding=1), c),
                  (lambda t: F.fold(t, (5, 6), 2, dilation=(1, 2), padding=(0, 1)), c[..., 10:34])):
        want = fn(t)
        with native_only():
            got = fn(t.to(DEV))
        assert got.dtype == dtype and torch.equal(got.cpu(), want)


def test_unfold_fold_out_forms():
    x = data(2, 3, 5, 5)
    with native_only():
        out = torch.empty(0, device=DEV)
        ret = torch.ops.aten.im2col.out(x.to(DEV), [2, 2], [1, 1], [0, 0], [1, 1], out=out)
        assert ret is out
        image = torch.empty(0, device=DEV)
        torch.ops.aten.col2im.out(out, [5, 5], [2, 2], [1, 1], [0, 0], [1, 1], out=image)
    want = F.unfold(x, 2)
    torch.testing.assert_close(out.cpu(), want)
    torch.testing.assert_close(image.cpu(), F.fold(want, (5, 5), 2))


def test_unfold_fold_complex_runs_on_cpu_fallback():
    x = torch.complex(data(1, 2, 4, 4), data(1, 2, 4, 4, seed=1))
    torch.opencl.reset_fallback_stats()
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    try:
        col = F.unfold(x.to(DEV), 2)
        image = F.fold(col, (4, 4), 2)
    finally:
        torch.opencl.set_fallback_mode(previous)
    assert torch.equal(col.cpu(), F.unfold(x, 2)) and torch.equal(image.cpu(), F.fold(F.unfold(x, 2), (4, 4), 2))
    assert torch.opencl.fallback_stats().get("aten::im2col", 0) >= 1


@pytest.mark.parametrize("fn,shape", [
    (lambda t: F.unfold(t, 3), (1, 1, 2, 2)),                     # blocks of size 0
    (lambda t: F.unfold(t, 2, padding=-1), (1, 1, 4, 4)),
    (lambda t: F.unfold(t, 2, stride=0), (1, 1, 4, 4)),
    (lambda t: F.unfold(t, 2, dilation=0), (1, 1, 4, 4)),
    (lambda t: F.unfold(t, (0, 2)), (1, 1, 4, 4)),
    (lambda t: F.unfold(t, 2), (1, 0, 4, 4)),                     # empty channel dim
    (lambda t: F.unfold(t, 2), (2, 1, 1, 4, 4)),                  # 5-D
    (lambda t: torch.ops.aten.im2col(t, [2], [1, 1], [0, 0], [1, 1]), (1, 1, 4, 4)),
    (lambda t: torch.ops.aten.im2col(t, [2, 2], [1, 1], [0, 0], [1, 1]), (4, 4)),   # IndexError on CPU
    (lambda t: F.fold(t, (4, 4), 2), (1, 7, 9)),                  # planes not divisible by the kernel
    (lambda t: F.fold(t, (4, 4), 2), (1, 8, 8)),                  # wrong number of blocks
    (lambda t: F.fold(t, (4, 4), 2), (1, 1, 8, 9)),               # 4-D
    (lambda t: F.fold(t, (4, 4), 2), (1, 0, 9)),
    (lambda t: F.fold(t, (1, 1), 2), (1, 4, 0)),
    (lambda t: F.fold(t, (4, 4), 2, stride=0), (1, 8, 9)),
    (lambda t: F.fold(t, (4, 4), 2, padding=-1), (1, 8, 9)),
    (lambda t: F.fold(t, (4, 4), 2, dilation=0), (1, 8, 9)),
    (lambda t: torch.ops.aten.col2im(t, [0, 0], [2, 2], [1, 1], [1, 1], [1, 1]), (1, 4, 1)),
    (lambda t: torch.ops.aten.col2im(t, [4], [2, 2], [1, 1], [0, 0], [1, 1]), (1, 8, 9)),
])
def test_unfold_fold_bad_arguments_raise_like_cpu(fn, shape):
    raises_like_cpu(fn, torch.zeros(shape))


def test_unfold_fold_integers_raise_like_cpu():
    raises_like_cpu(lambda t: F.unfold(t, 2), torch.zeros(1, 2, 4, 4, dtype=torch.int64))
    raises_like_cpu(lambda t: F.fold(t, (4, 4), 2), torch.zeros(1, 8, 9, dtype=torch.int32))


# ---- F.adaptive_max_pool2d ----

ADAPTIVE_CASES = [
    ((2, 3, 9, 8), (4, 3)),    # overlapping windows: gather backward
    ((2, 3, 8, 6), (4, 3)),    # windows tile the input: scatter backward
    ((2, 3, 5, 7), (3, 2)),
    ((1, 2, 3, 3), (5, 4)),    # output larger than the input: every point in several windows
    ((2, 3, 7, 5), (1, 1)),    # global
    ((2, 3, 7, 5), (None, 2)),
    ((0, 3, 6, 6), (2, 2)),    # batch 0
    ((3, 7, 6), (3, 4)),       # no batch dim
    ((1, 1, 1, 1), (2, 3)),    # size-1 dims
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,size", ADAPTIVE_CASES)
def test_adaptive_max_pool2d_matches_cpu(dtype, shape, size):
    for x in layouts(data(*shape, dtype=dtype)):
        check_grad(lambda t: F.adaptive_max_pool2d(t, size), x)
        want = F.adaptive_max_pool2d(x, size, return_indices=True)
        with native_only():
            got = F.adaptive_max_pool2d(x.to(DEV), size, return_indices=True)
        assert got[1].dtype == torch.int64 and torch.equal(got[1].cpu(), want[1])
        assert torch.equal(got[0].cpu(), want[0])
        assert got[0].is_contiguous(memory_format=torch.channels_last) == \
            want[0].is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("size", [(3, 3), (2, 2), (4, 5), (1, 1)])
def test_adaptive_max_pool2d_ties_nan_and_inf_match_cpu(size):
    ties = torch.randint(0, 2, (2, 3, 8, 10), generator=torch.Generator().manual_seed(4)).float()
    zeros = torch.zeros(1, 2, 5, 6)
    nans = data(1, 3, 6, 6)
    nans[0, 0, 0, 1] = nans[0, 0, 1, 0] = nans[0, 0, 4, 4] = float("nan")  # several NaNs in one window
    nans[0, 1] = float("nan")                                            # a plane of NaNs
    nans[0, 2, 2, 2] = float("inf")
    infs = torch.full((1, 1, 5, 5), -float("inf"))                       # a window of -inf
    infs[0, 0, 4, 4] = 1.0
    for x in (ties, zeros, nans, infs, ties.double()):
        want = F.adaptive_max_pool2d(x, size, return_indices=True)
        with native_only():
            got = F.adaptive_max_pool2d(x.to(DEV), size, return_indices=True)
        torch.testing.assert_close(got[0].cpu(), want[0], rtol=0, atol=0, equal_nan=True)
        assert torch.equal(got[1].cpu(), want[1])
        if not x.isnan().any():
            check_grad(lambda t: F.adaptive_max_pool2d(t, size), x)


def test_adaptive_max_pool2d_backward_forms():
    # Windows that tile the input take the scatter; overlapping ones the gather.
    for shape, size, name in (((2, 3, 8, 6), (4, 3), "adaptive_max_pool_backward_scatter"),
                              ((2, 3, 9, 6), (4, 3), "adaptive_max_pool_backward")):
        xd = data(*shape).to(DEV).requires_grad_()
        with native_only(), launched_kernels() as names:
            F.adaptive_max_pool2d(xd, size).sum().backward()
            torch.opencl.synchronize()
        assert name in names, names


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_adaptive_max_pool2d_reduced_floats_match_cpu(dtype):
    x = data(2, 3, 9, 7).to(dtype)
    want = F.adaptive_max_pool2d(x, (4, 3), return_indices=True)
    with native_only():
        got = F.adaptive_max_pool2d(x.to(DEV), (4, 3), return_indices=True)
    assert_same_as_cpu(got, want)
    check_grad(lambda t: F.adaptive_max_pool2d(t, (4, 3)), x, tol={dtype: 1e-2})


def test_adaptive_max_pool2d_out_forms():
    x = data(2, 3, 7, 6)
    want, want_idx = F.adaptive_max_pool2d(x, (3, 2), return_indices=True)
    with native_only():
        out = torch.empty(2, 3, 2, 3, device=DEV).transpose(2, 3)  # the right size, not contiguous
        idx = torch.empty(0, dtype=torch.long, device=DEV)
        torch.ops.aten.adaptive_max_pool2d.out(x.to(DEV), [3, 2], out=out, indices=idx)
        gi = torch.empty(0, device=DEV)
        g = data(2, 3, 3, 2, seed=5)
        torch.ops.aten.adaptive_max_pool2d_backward.grad_input(g.to(DEV), x.to(DEV), idx, grad_input=gi)
    assert torch.equal(out.cpu(), want) and torch.equal(idx.cpu(), want_idx)
    torch.testing.assert_close(gi.cpu(), torch.ops.aten.adaptive_max_pool2d_backward(g, x, want_idx))


@pytest.mark.parametrize("fn,x", [
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(4, 4)),
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(1, 0, 4, 4)),
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(1, 2, 0, 4)),
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(2, 1, 2, 4, 4)),
    (lambda t: F.adaptive_max_pool2d(t, (-1, 2)), torch.zeros(1, 2, 4, 4)),
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(1, 2, 4, 4, dtype=torch.int64)),
    (lambda t: F.adaptive_max_pool2d(t, 2), torch.zeros(0, 2, 4, 4, dtype=torch.int32)),
    (lambda t: torch.ops.aten.adaptive_max_pool2d(t, [2, 2, 2]), torch.zeros(1, 2, 4, 4)),
])
def test_adaptive_max_pool2d_bad_arguments_raise_like_cpu(fn, x):
    raises_like_cpu(fn, x)


def test_adaptive_max_pool2d_backward_bad_arguments_raise_like_cpu():
    x, idx = torch.ones(1, 2, 3, 3), torch.zeros(1, 2, 2, 2, dtype=torch.long)
    raises_like_cpu(torch.ops.aten.adaptive_max_pool2d_backward, torch.ones(1, 2, 2, 2, dtype=torch.double), x, idx)
    raises_like_cpu(torch.ops.aten.adaptive_max_pool2d_backward, torch.ones(2, 2, 2), x, idx)


# ---- torch.trace, torch.vdot, torch.linalg.cross ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (7, 3), (1, 1), (0, 4), (4, 0), (300, 200)])
def test_trace_matches_cpu(dtype, shape):
    x = data(*shape, dtype=dtype)
    check_grad(torch.trace, x, tol=SUM_TOL)
    check_grad(torch.trace, data(*shape[::-1], dtype=dtype).t(), tol=SUM_TOL)  # non-contiguous
    check_grad(lambda t: torch.trace(t[::2, 1:]), x, tol=SUM_TOL)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.float16, torch.bfloat16])
def test_trace_other_dtypes_match_cpu(dtype):
    x = torch.randint(0, 100, (9, 8), generator=torch.Generator().manual_seed(0)).to(dtype)
    try:
        want = torch.trace(x)
    except NotImplementedError:  # CPU torch 2.11 has no float16/bfloat16 trace: the diagonal's sum is its value
        want = x.diagonal().sum()
    with native_only():
        got = torch.trace(x.to(DEV))
    assert_same_as_cpu(got, want)  # integers: int64, exact


@pytest.mark.parametrize("x", [torch.zeros(3), torch.zeros(2, 2, 2), torch.zeros(3, 3, dtype=torch.bool),
                               torch.zeros(3, 3, 3, dtype=torch.bool), torch.zeros(())])
def test_trace_bad_arguments_raise_like_cpu(x):
    raises_like_cpu(torch.trace, x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_vdot_matches_cpu(dtype, n):
    a, b = data(n, dtype=dtype), data(2 * n, dtype=dtype, seed=2)[::2]  # b strided
    check_grad(torch.vdot, a, b, tol=SUM_TOL)
    check_grad(torch.dot, a, b, tol=SUM_TOL)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.float16, torch.bfloat16])
def test_vdot_other_dtypes_match_cpu(dtype):
    if dtype.is_floating_point:  # CPU multiplies and adds these in float
        a, b = data(200).to(dtype), data(200, seed=2).to(dtype)
    else:  # integers wrap as on CPU
        gen = torch.Generator().manual_seed(0)
        a, b = (torch.randint(0, 120, (200,), generator=gen).to(dtype) for _ in range(2))
    want = torch.vdot(a, b)
    with native_only():
        got = torch.vdot(a.to(DEV), b.to(DEV))
    assert_same_as_cpu(got, want)


@pytest.mark.parametrize("a,b", [
    (torch.zeros(3), torch.zeros(3, dtype=torch.float64)),
    (torch.zeros(3, 1), torch.zeros(3)),
    (torch.zeros(3), torch.zeros(4)),
    (torch.zeros(3, dtype=torch.bool), torch.zeros(3, dtype=torch.bool)),
    (torch.zeros(3), torch.zeros(3, dtype=torch.complex64)),
])
def test_vdot_bad_arguments_raise_like_cpu(a, b):
    raises_like_cpu(torch.vdot, a, b)


def test_vdot_complex_runs_on_cpu_fallback():
    a, b = (torch.complex(data(5, seed=s), data(5, seed=s + 1)) for s in (0, 2))
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    try:
        got = torch.vdot(a.to(DEV), b.to(DEV))
    finally:
        torch.opencl.set_fallback_mode(previous)
    torch.testing.assert_close(got.cpu(), torch.vdot(a, b))


# (a's shape, b's shape, dim)
CROSS_CASES = [
    ((5, 3), (5, 3), -1),
    ((3,), (3,), 0),
    ((2, 3, 4), (2, 3, 4), 1),
    ((3, 4, 2), (3, 4, 2), 0),
    ((1, 3), (4, 3), -1),          # broadcast
    ((4, 1, 3), (1, 5, 3), 2),     # both broadcast: dims that do not collapse into one stride
    ((2, 3, 1), (2, 3, 6), -2),
    ((0, 3), (0, 3), 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sa,sb,dim", CROSS_CASES)
def test_linalg_cross_matches_cpu(dtype, sa, sb, dim):
    a, b = data(*sa, dtype=dtype), data(*sb, dtype=dtype, seed=2)
    check_grad(lambda x, y: torch.linalg.cross(x, y, dim=dim), a, b)
    check_grad(lambda x, y: torch.cross(x, y, dim=dim), a, b)
    if a.dim() >= 2:  # non-contiguous operands
        at, bt = (t.transpose(0, -1).contiguous().transpose(0, -1) for t in (a, b))
        check_grad(lambda x, y: torch.linalg.cross(x, y, dim=dim), at, bt)


def test_cross_default_dim_and_out_form():
    a, b = data(4, 3, 3), data(4, 3, 3, seed=2)
    with warnings.catch_warnings():  # CPU and opencl alike warn that a cross without dim is deprecated
        warnings.simplefilter("ignore")
        want = torch.cross(a, b)  # along the first dim of size 3
        with native_only():
            got = torch.cross(a.to(DEV), b.to(DEV))
    with native_only():
        out = torch.empty(3, 3, 4, device=DEV).permute(2, 1, 0)
        torch.linalg.cross(a.to(DEV), b.to(DEV), dim=1, out=out)
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(out.cpu(), torch.linalg.cross(a, b, dim=1))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8, torch.float16, torch.bfloat16])
def test_linalg_cross_other_dtypes_match_cpu(dtype):
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randint(0, 100, (6, 3), generator=gen).to(dtype) for _ in range(2))  # integers wrap as on CPU
    want = torch.linalg.cross(a, b)
    with native_only():
        got = torch.linalg.cross(a.to(DEV), b.to(DEV))
    assert_same_as_cpu(got, want)


@pytest.mark.parametrize("a,b,kw", [
    (torch.zeros(2, 4), torch.zeros(2, 4), {}),
    (torch.zeros(2, 3), torch.zeros(4, 2, 3), {}),
    (torch.zeros(2, 3), torch.zeros(4, 3), {}),
    (torch.zeros(2, 3), torch.zeros(2, 3), {"dim": 5}),
    (torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64), {}),
    (torch.zeros(2, 3, dtype=torch.bool), torch.zeros(2, 3, dtype=torch.bool), {}),
    (torch.zeros(2, 3, dtype=torch.bool), torch.zeros(2, 3), {}),
])
def test_linalg_cross_bad_arguments_raise_like_cpu(a, b, kw):
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y, **kw), a, b)


def test_a_step_using_every_op_falls_back_for_none():
    x = data(2, 3, 8, 8).to(DEV).requires_grad_()
    v = data(3).to(DEV).requires_grad_()
    torch.opencl.reset_fallback_stats()
    col = F.unfold(x, 3, padding=1)                          # (2, 27, 64)
    image = F.fold(col, (8, 8), 3, padding=1)
    pooled = F.adaptive_max_pool2d(image, (3, 5))
    m = pooled.flatten(0, 2)[:, :3]                          # (18, 3)
    loss = torch.linalg.cross(m, v.expand_as(m)).sum() + torch.trace(m[:3]) + torch.vdot(v, m[0])
    loss.backward()
    torch.opencl.synchronize()
    stats = torch.opencl.fallback_stats()
    ops = ("im2col", "col2im", "adaptive_max_pool2d", "trace", "vdot", "dot", "linalg_cross", "index_fill")
    assert not [name for name in stats if any(op in name for op in ops)], stats
    assert x.grad is not None and v.grad is not None
