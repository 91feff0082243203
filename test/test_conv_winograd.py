"""Winograd F(2x2, 3x3) convolution, the form of 3x3 stride-1 convolutions from 16 channels (kernels_cl/winograd.cl,
aten/native/conv_winograd.cpp): forward, input gradient, weight gradient (F(3x3, 2x2)) and bias gradient
against CPU through autograd, for odd sizes (partial last tiles), paddings 0 to 3,
channel counts that are multiples of nothing, batch 1 and more, bias on and off, non-contiguous and
channels_last inputs, transposed convolutions, float32 and float64; which convolutions it serves.

It serves both kernel classes (its GEMMs are the class's): scripts/test.sh runs this file in each.
The device's minimum channel count (runtime/kernel_forms.h) is lowered to 1 here, so small shapes reach it."""
import pytest
import torch
import torch.nn.functional as F

import torch_opencl
from _device_helpers import kernel_class, launched_kernels, native_only

DEV = "opencl"
PROPS = torch.opencl.get_device_properties(0)
WINOGRAD, MIN_CHANNELS = torch_opencl._C._winograd_min_channels(0)

pytestmark = pytest.mark.skipif(not WINOGRAD, reason="this device does not take Winograd convolutions "
                                "(runtime/kernel_forms.h's conv_winograd)")
# The transforms' CPU form takes a row of tiles per work-item (runtime/kernel_forms.h's winograd_lines).
LINES = "_lines" if kernel_class() == "cpu" else ""
WINOGRAD_KERNELS = {"winograd_filter", "winograd_input" + LINES, "winograd_output" + LINES}
WEIGHT_GRAD_KERNELS = {"winograd_input" + LINES, "winograd_grad_output" + LINES, "winograd_weight"}
ALL_KERNELS = WINOGRAD_KERNELS | WEIGHT_GRAD_KERNELS


@pytest.fixture
def any_channels():
    torch_opencl._C._winograd_min_channels(0, 1)
    yield
    torch_opencl._C._winograd_min_channels(0, MIN_CHANNELS)


def rnd(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def check_against_cpu(conv, x, w, b, tol, **kw):
    """conv's output and its input, weight and bias gradients on opencl against CPU; returns the kernels run."""
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    bc = b.clone().requires_grad_() if b is not None else None
    yc = conv(xc, wc, bc, **kw)
    g = rnd(*yc.shape, dtype=x.dtype, seed=7)
    yc.backward(g)
    xo, wo = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    bo = b.to(DEV).requires_grad_() if b is not None else None
    with native_only(), launched_kernels() as names:
        yo = conv(xo, wo, bo, **kw)
        yo.backward(g.to(DEV))
        torch.opencl.synchronize()
    close = dict(rtol=tol, atol=tol)
    torch.testing.assert_close(yo.detach().cpu(), yc.detach(), **close)
    torch.testing.assert_close(xo.grad.cpu(), xc.grad, **close)
    torch.testing.assert_close(wo.grad.cpu(), wc.grad, **close)
    if b is not None:
        torch.testing.assert_close(bo.grad.cpu(), bc.grad, **close)
    return names


CASES = [
    # (N, C, O, H, W), padding
    ((1, 5, 7, 7, 9), 1),        # batch 1, odd sizes: the last tile row and column are partial
    ((3, 3, 4, 6, 5), 0),        # no padding, odd output width
    ((2, 6, 3, 1, 1), 1),        # a single pixel: one partial tile
    ((2, 4, 5, 5, 8), (2, 0)),   # padding differs per side; 2 leaves the input gradient unpadded
    ((2, 3, 2, 3, 4), 3),        # padding beyond the kernel: the input gradient's padding of -1 crops
    ((4, 17, 19, 11, 10), 1),    # more channels than a 16-wide block
]


@pytest.mark.parametrize("shape,padding", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_and_gradients(any_channels, shape, padding, bias):
    n, c, o, h, w = shape
    names = check_against_cpu(F.conv2d, rnd(n, c, h, w), rnd(o, c, 3, 3, seed=1), rnd(o, seed=2) if bias else None,
                              1e-4, padding=padding)
    # forward and input gradient: the filter, input and output transforms twice each; weight gradient: the
    # input, grad_output and weight transforms; no im2col
    assert sum(name in ALL_KERNELS for name in names) == 9, names
    assert {"winograd_grad_output" + LINES, "winograd_weight"} <= set(names) and "im2col" not in names, names


def test_only_the_parameter_gradients(any_channels):
    # A first layer's input needs no gradient: the backward computes the weight's and the bias's only.
    x, w, b = rnd(3, 4, 9, 8), rnd(5, 4, 3, 3, seed=1), rnd(5, seed=2)
    wc, bc = w.clone().requires_grad_(), b.clone().requires_grad_()
    g = rnd(3, 5, 9, 8, seed=7)
    F.conv2d(x, wc, bc, padding=1).backward(g)
    wo, bo = w.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
    with native_only(), launched_kernels() as names:
        F.conv2d(x.to(DEV), wo, bo, padding=1).backward(g.to(DEV))
        torch.opencl.synchronize()
    torch.testing.assert_close(wo.grad.cpu(), wc.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(bo.grad.cpu(), bc.grad, rtol=1e-4, atol=1e-4)
    assert sum(name in ALL_KERNELS for name in names) == 6, names  # forward 3, weight gradient 3


def test_noncontiguous_and_channels_last_inputs(any_channels):
    x = rnd(2, 7, 6, 5).permute(0, 3, 1, 2)  # (2, 5, 7, 6), neither contiguous nor channels_last
    assert not x.is_contiguous()
    check_against_cpu(F.conv2d, x, rnd(4, 5, 3, 3, seed=1), rnd(4, seed=2), 1e-4, padding=1)
    x = rnd(3, 5, 7, 6).to(memory_format=torch.channels_last)
    check_against_cpu(F.conv2d, x, rnd(6, 5, 3, 3, seed=1), None, 1e-4, padding=1)
    # a weight sliced from a larger one (strided) is read in place too
    w = rnd(4, 10, 3, 3, seed=1)[:, ::2]
    check_against_cpu(F.conv2d, rnd(2, 5, 6, 6), w, None, 1e-4, padding=0)


@pytest.mark.parametrize("padding", [0, 1])
def test_conv_transpose2d(any_channels, padding):
    # The transposed convolution's forward is the regular one's input gradient, its input gradient that
    # one's forward and its weight gradient that one's with the roles of input and grad_output swapped: all
    # on Winograd.
    names = check_against_cpu(F.conv_transpose2d, rnd(2, 5, 7, 6), rnd(5, 3, 3, 3, seed=1), rnd(3, seed=2), 1e-4,
                              padding=padding)
    assert sum(name in ALL_KERNELS for name in names) == 9, names
    assert "winograd_weight" in names, names


@pytest.mark.skipif(not PROPS.fp64, reason="device has no float64")
def test_float64(any_channels):
    d = torch.float64
    check_against_cpu(F.conv2d, rnd(2, 5, 9, 7, dtype=d), rnd(6, 5, 3, 3, dtype=d, seed=1), rnd(6, dtype=d, seed=2),
                      1e-10, padding=1)


@pytest.mark.skipif(not PROPS.fp64, reason="device has no float64")
def test_float32_error_against_a_float64_reference():
    # Winograd's transforms add rounding: its float32 error, measured against float64 CPU, stays within a
    # small factor of the direct float32 convolution's (CPU's) for a ResNet-like layer (128 channels, K = 1152).
    # Measured on PoCL: 4.1e-7 of the largest output (CPU's direct float32: 1.3e-6); input gradient 3.1e-7
    # (CPU: 2.8e-7).
    x, w = rnd(4, 128, 12, 12, seed=3), rnd(128, 128, 3, 3, seed=4) / 34  # unit-variance outputs
    ref = F.conv2d(x.double(), w.double(), padding=1)
    with native_only(), launched_kernels() as names:
        got = F.conv2d(x.to(DEV), w.to(DEV), padding=1).cpu()
    assert WINOGRAD_KERNELS <= set(names)  # the default minimum channel count lets 128 channels through
    direct = F.conv2d(x, w, padding=1)
    scale = ref.abs().max().item()
    winograd_err = (got.double() - ref).abs().max().item() / scale
    direct_err = (direct.double() - ref).abs().max().item() / scale
    assert winograd_err < 1e-5 and winograd_err < 8 * direct_err, (winograd_err, direct_err)


@pytest.mark.skipif(not PROPS.fp64, reason="device has no float64")
def test_weight_gradient_error_against_a_float64_reference():
    # F(3x3, 2x2)'s float32 weight gradient against float64 CPU, next to CPU's direct float32 one, for a
    # ResNet-like layer: each of its values sums N * OH * OW = 576 products per input channel.
    # Measured on PoCL: 6.3e-7 of the largest value (CPU's direct float32: 1.1e-6).
    x, go = rnd(4, 128, 12, 12, seed=3), rnd(4, 96, 12, 12, seed=5)
    w_shape = (96, 128, 3, 3)
    ref = torch.nn.grad.conv2d_weight(x.double(), w_shape, go.double(), padding=1)
    direct = torch.nn.grad.conv2d_weight(x, w_shape, go, padding=1)
    xo, wo = x.to(DEV), torch.zeros(w_shape, device=DEV, requires_grad=True)
    with native_only(), launched_kernels() as names:
        F.conv2d(xo, wo, padding=1).backward(go.to(DEV))
        got = wo.grad.cpu()
    assert WEIGHT_GRAD_KERNELS <= set(names)
    scale = ref.abs().max().item()
    winograd_err = (got.double() - ref).abs().max().item() / scale
    direct_err = (direct.double() - ref).abs().max().item() / scale
    assert winograd_err < 1e-5 and winograd_err < 8 * direct_err, (winograd_err, direct_err)


def test_weights_changed_in_place_are_seen():
    # Nothing is cached across calls: an optimizer's in-place update changes the next result.
    torch_opencl._C._winograd_min_channels(0, 1)
    try:
        x, w = rnd(2, 4, 6, 6).to(DEV), rnd(3, 4, 3, 3, seed=1).to(DEV)
        with native_only():
            first = F.conv2d(x, w, padding=1).cpu()
            w.mul_(-2)
            second = F.conv2d(x, w, padding=1).cpu()
        torch.testing.assert_close(second, -2 * first, rtol=1e-5, atol=1e-5)
    finally:
        torch_opencl._C._winograd_min_channels(0, MIN_CHANNELS)


def test_which_convolutions_it_serves():
    def kernels(x, w, **kw):
        with native_only(), launched_kernels() as names:
            F.conv2d(x.to(DEV), w.to(DEV), **kw)
            torch.opencl.synchronize()
        return WINOGRAD_KERNELS & set(names)

    x = rnd(1, MIN_CHANNELS, 6, 6)
    assert kernels(x, rnd(MIN_CHANNELS, MIN_CHANNELS, 3, 3), padding=1) == WINOGRAD_KERNELS
    # below the minimum channel count, or not 3x3 stride-1 dilation-1 single-group: today's GEMM path
    assert not kernels(x[:, :-1], rnd(MIN_CHANNELS, MIN_CHANNELS - 1, 3, 3), padding=1)
    assert not kernels(x, rnd(MIN_CHANNELS - 1, MIN_CHANNELS, 3, 3), padding=1)
    w = rnd(MIN_CHANNELS, MIN_CHANNELS, 3, 3)
    assert not kernels(x, w, stride=2)
    assert not kernels(x, w, dilation=2, padding=2)
    assert not kernels(x, w[:, : MIN_CHANNELS // 2], groups=2)
    assert not kernels(x, rnd(MIN_CHANNELS, MIN_CHANNELS, 3, 2), padding=1)
