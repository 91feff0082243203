"""max_pool2d, avg_pool2d and adaptive_avg_pool2d run natively on opencl: values, indices and
gradients against CPU over kernel/stride/padding/dilation/ceil_mode variants."""


import pytest
import torch
import torch.nn.functional as F

from _device_helpers import launched_kernels, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
CONFIGS = [(2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 2, True), ((3, 2), (2, 1), (1, 0), 1, True),
           (2, 3, 0, 1, True)]


def check_grad(fn, x, rtol=1e-5, atol=1e-5):
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    yc = fn(xc)
    with native_only():
        yd = fn(xd)
        torch.testing.assert_close(yd.cpu(), yc.detach(), rtol=rtol, atol=atol)
        if yc.numel() == 0:
            return
        g = torch.randn(yc.shape, dtype=yc.dtype, generator=torch.Generator().manual_seed(1))
        gd, = torch.autograd.grad(yd, xd, g.to(DEV))
    gc, = torch.autograd.grad(yc, xc, g)
    torch.testing.assert_close(gd.cpu(), gc, rtol=rtol, atol=atol)


def data(*shape, dtype=torch.float32):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("k,s,p,d,ceil", CONFIGS)
def test_max_pool2d_matches_cpu(dtype, k, s, p, d, ceil):
    x = data(2, 3, 9, 8, dtype=dtype)
    check_grad(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil), x)
    check_grad(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil), x[0])  # unbatched
    with native_only():
        _, idx = F.max_pool2d(x.to(DEV), k, s, p, d, ceil_mode=ceil, return_indices=True)
    torch.testing.assert_close(idx.cpu(), F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)[1])


def test_max_pool2d_ties_nan_layouts():
    check_grad(lambda t: F.max_pool2d(t, 3, 1, 1), torch.randint(0, 3, (1, 2, 6, 6)).float())
    x = data(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    with native_only():
        torch.testing.assert_close(F.max_pool2d(x.to(DEV), 2).cpu(), F.max_pool2d(x, 2), equal_nan=True)
    check_grad(lambda t: F.max_pool2d(t, 2), data(2, 3, 6, 6).to(memory_format=torch.channels_last))
    check_grad(lambda t: F.max_pool2d(t, 2), data(2, 3, 6, 8).transpose(2, 3))
    check_grad(lambda t: F.max_pool2d(t, 2), data(0, 3, 6, 8))


def test_max_pool2d_bad_arguments_raise_like_cpu():
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(torch.zeros(1, 1, 4, 4, device=DEV), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small|output size"):
        F.max_pool2d(torch.zeros(1, 1, 2, 2, device=DEV), 3)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("k,s,p,d,ceil", CONFIGS)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 3])
def test_avg_pool2d_matches_cpu(dtype, k, s, p, d, ceil, count_include_pad, divisor):
    x = data(2, 3, 9, 8, dtype=dtype)
    check_grad(lambda t: F.avg_pool2d(t, k, s, p, ceil_mode=ceil, count_include_pad=count_include_pad,
                                      divisor_override=divisor), x)


def test_avg_pool2d_out_form_and_bad_divisor():
    x = data(1, 2, 6, 6)
    with native_only():
        out = torch.empty(0, device=DEV)
        ret = torch.ops.aten.avg_pool2d.out(x.to(DEV), [2, 2], [2, 2], [0, 0], False, True, None, out=out)
    assert ret is out
    torch.testing.assert_close(out.cpu(), F.avg_pool2d(x, 2))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x.to(DEV), 2, divisor_override=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("size", [(3, 3), (4, 5), (9, 8), (2, 1), (5, 7)])
def test_adaptive_avg_pool2d_matches_cpu(dtype, size):
    check_grad(lambda t: F.adaptive_avg_pool2d(t, size), data(2, 3, 9, 8, dtype=dtype))
    check_grad(lambda t: F.adaptive_avg_pool2d(t, size), data(3, 9, 8, dtype=dtype).transpose(1, 2))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_max_pool2d_integers_match_cpu(dtype):
    # An integer max starts at the type's minimum (-INFINITY converted to an integer is undefined).
    low = 0 if dtype == torch.uint8 else -100
    x = torch.randint(low, 100, (2, 3, 7, 6), generator=torch.Generator().manual_seed(0)).to(dtype)
    for kwargs in (dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2), dict(kernel_size=3, padding=1)):
        want = F.max_pool2d(x, return_indices=True, **kwargs)
        got = F.max_pool2d(x.to("opencl"), return_indices=True, **kwargs)
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_pooling_of_reduced_floats_matches_cpu(dtype):
    # pooling.cl builds for half on a device without cl_khr_fp16 (PoCL): its kernels move half values
    # through LOAD_T/STORE_T only.
    x = data(2, 3, 8, 8).to(dtype)
    for fn in (lambda t: F.max_pool2d(t, 2), lambda t: F.max_pool2d(t, 3, 1, 1), lambda t: F.avg_pool2d(t, 2),
               lambda t: F.adaptive_avg_pool2d(t, 3)):
        check_grad(fn, x, rtol=1e-2, atol=1e-2)


def test_softmax_of_integers_is_refused_as_on_cpu():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.softmax(torch.arange(4, device="opencl"), 0)


# The max-pool kernel paths: windows of at most 3x3 (unrolled), larger ones (loops); disjoint windows
# (scatter backward), overlapping ones with at most 3 (unrolled) or more (loops) windows per point;
# planes launched in chunks; planes too large for the kernels' index math (counted CPU fallback).
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("k,s,p,d,ceil", [
    (2, 2, 1, 1, True),            # disjoint windows, padding, ceil_mode: scatter backward
    (2, 3, 1, 2, False),           # disjoint, dilated
    ((1, 3), (2, 3), (0, 1), 1, True),
    (5, 1, 2, 1, False),           # 5x5 window: loop forward; 5 windows per point: loop backward
    (4, 3, 1, 1, True),            # 4x4 loop forward, overlapping with 2 windows per point: unrolled backward
    (3, 1, 1, 3, False),           # dilation 3, stride 1: 7 windows per point
])
def test_max_pool2d_kernel_paths(dtype, k, s, p, d, ceil):
    for x in (data(2, 3, 11, 10, dtype=dtype), data(2, 3, 10, 11, dtype=dtype).transpose(2, 3),
              data(2, 3, 11, 10, dtype=dtype).to(memory_format=torch.channels_last)):
        check_grad(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil), x)


def test_max_pool2d_2x2_forms():
    # 2x2 windows of stride 2 take their own forward kernel whenever the windows lie inside the input; the
    # backward stores each gradient at its index (the scatter form), odd sizes leaving a row or column zero.
    ties = torch.randint(0, 2, (2, 3, 8, 10), generator=torch.Generator().manual_seed(2)).float()
    nans = data(1, 2, 6, 6)
    nans[0, 0, 0, 1] = nans[0, 0, 1, 0] = float("nan")  # two NaNs in one window: CPU takes the last one
    nans[0, 1, 3, 3] = float("nan")
    for x in (ties, data(2, 3, 9, 7), nans):
        xd = x.to(DEV).requires_grad_()
        with native_only(), launched_kernels() as names:
            y, idx = F.max_pool2d(xd, 2, return_indices=True)
            y.backward(torch.arange(y.numel(), dtype=y.dtype, device=DEV).view(y.shape))
            torch.opencl.synchronize()
        xc = x.clone().requires_grad_()
        yc, idxc = F.max_pool2d(xc, 2, return_indices=True)
        yc.backward(torch.arange(yc.numel(), dtype=yc.dtype).view(yc.shape))
        torch.testing.assert_close(y.detach().cpu(), yc.detach(), equal_nan=True)
        assert torch.equal(idx.cpu(), idxc)
        torch.testing.assert_close(xd.grad.cpu(), xc.grad)
        assert {"max_pool2d_forward_2x2", "max_pool2d_backward_scatter"} <= set(names), names


def test_max_pool2d_ties_overlapping_windows():
    # Equal values: CPU picks the first maximum; the gather backward sums every window that chose a point.
    check_grad(lambda t: F.max_pool2d(t, 3, 1, 1), torch.zeros(1, 2, 5, 5))
    check_grad(lambda t: F.max_pool2d(t, 2, 1), torch.randint(0, 2, (2, 2, 6, 7)).double())


def test_max_pool2d_planes_in_several_chunks():
    x = data(1, 1100, 64, 64)  # 4.5M input elements: two chunks of planes
    check_grad(lambda t: F.max_pool2d(t, 2), x)
    check_grad(lambda t: F.max_pool2d(t, 3, 1, 1), x[:, :600])


def test_max_pool2d_plane_beyond_the_kernels_runs_on_cpu_and_is_counted():
    x = data(1, 1, 2048, 2048)  # a 2^22-element plane
    torch.opencl.reset_fallback_stats()
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    try:
        xd = x.to(DEV).requires_grad_()
        y = F.max_pool2d(xd, 2)
        y.backward(torch.ones_like(y))
    finally:
        torch.opencl.set_fallback_mode(previous)
    xc = x.clone().requires_grad_()
    yc = F.max_pool2d(xc, 2)
    yc.backward(torch.ones_like(yc))
    torch.testing.assert_close(y.detach().cpu(), yc.detach())
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    stats = torch.opencl.fallback_stats()
    assert stats.get("aten::max_pool2d_with_indices", 0) >= 1
    assert stats.get("aten::max_pool2d_with_indices_backward", 0) >= 1


def test_max_pool2d_window_entirely_in_the_padding():
    # H = 1 with padding 1 and dilation 2: every window's rows are -1 and 1, outside the input. CPU gives
    # -inf there with an index outside the plane, and its backward writes through that index (heap
    # corruption, PyTorch's bug, so CPU's gradient is not run here); the device gives -inf, index -1 and
    # a zero gradient.
    x = torch.randn(1, 4, 1, 4, dtype=torch.float64)
    kw = dict(kernel_size=2, stride=2, padding=1, dilation=2, ceil_mode=True)
    expected = F.max_pool2d(x, **kw)
    leaf = x.to(DEV).requires_grad_()
    with native_only():
        got, indices = F.max_pool2d(leaf, return_indices=True, **kw)
        got.sum().backward()
    assert torch.equal(got.detach().cpu(), expected) and bool((expected == -float("inf")).all())
    assert bool((indices.cpu() == -1).all())
    assert torch.equal(leaf.grad.cpu(), torch.zeros_like(x))
