"""F.unfold / F.fold (aten::im2col / col2im) and F.adaptive_max_pool2d run natively on opencl: values, shapes,
dtypes, gradients and errors against CPU PyTorch, with no CPU fallback (native_only), in whichever kernel
class the device runs (TORCH_OPENCL_KERNEL_CLASS)."""
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
    for shape, size, name in (((2, 3, 8, 6), (4, 3), "adaptive_max_pool2d_backward_scatter"),
                              ((2, 3, 9, 6), (4, 3), "adaptive_max_pool2d_backward")):
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
