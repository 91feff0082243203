"""Convolution (1-D and 2-D, stride, padding, dilation, groups, bias) through im2col and
CLBlast GEMM: forward and all three gradients against CPU, run natively (fallback mode
"error"), transposed convolution (1-D, 2-D) included. Depthwise convolutions (direct forms) have
test_conv_depthwise.py; 3-D ones test_conv3d.py."""
import pytest
import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401
from _device_helpers import kernel_class, launched_kernels

DEV = "opencl"
HAS_FP64 = torch.opencl.get_device_properties(0).fp64


def rnd(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def run_both(conv, x, w, b, **kw):
    dtype = x.dtype
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    xo, wo = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    bc = b.clone().requires_grad_() if b is not None else None
    bo = b.to(DEV).requires_grad_() if b is not None else None
    yc = conv(xc, wc, bc, **kw)
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        yo = conv(xo, wo, bo, **kw)
        g = rnd(*yc.shape, dtype=dtype, seed=7)
        yo.backward(g.to(DEV))
        torch.testing.assert_close(yo.detach().cpu(), yc.detach(), rtol=tol, atol=tol)
    finally:
        torch.opencl.set_fallback_mode(previous)
    yc.backward(g)
    torch.testing.assert_close(xo.grad.cpu(), xc.grad, rtol=tol, atol=tol)
    torch.testing.assert_close(wo.grad.cpu(), wc.grad, rtol=tol, atol=tol)
    if b is not None:
        torch.testing.assert_close(bo.grad.cpu(), bc.grad, rtol=tol, atol=tol)


CASES_2D = [
    # (N, C, H, W), (O, C/groups, KH, KW), kwargs
    ((4, 1, 8, 8), (16, 1, 3, 3), dict(padding=1)),  # the digits CNN's first layer
    ((2, 4, 9, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ((3, 3, 6, 5), (4, 3, 1, 1), dict(stride=2)),
    # Patches reaching past every edge (padding, dilation, strides): im2col's and col2im's bounds per pixel.
    ((2, 3, 11, 10), (4, 3, 5, 3), dict(stride=2, padding=(3, 2), dilation=(2, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", CASES_2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(xs, ws, kw, bias):
    run_both(F.conv2d, rnd(*xs), rnd(*ws, seed=1), rnd(ws[0], seed=2) if bias else None, **kw)


@pytest.mark.parametrize("bias", [True, False])
def test_one_by_one_convolutions_are_batched_gemms(bias):
    # 1x1, stride 1, unpadded, single group: one batched GEMM over the samples for the forward and the input
    # gradient, the weight gradient over the whole batch; no im2col or col2im in either class. NCHW,
    # channels_last, a strided input, 1-D (kernel 1), a dilation (meaningless for one tap) and batch 0.
    w, b = rnd(5, 7, 1, 1, seed=1), rnd(5, seed=2) if bias else None
    cases = [(rnd(3, 7, 6, 5), w, {}), (rnd(2, 7, 4, 4).to(memory_format=torch.channels_last), w, {}),
             (rnd(2, 9, 6, 5)[:, 1:8], w, {}), (rnd(2, 7, 4, 3), w, dict(dilation=2)),
             (rnd(4, 7, 10), w[..., 0], {}), (rnd(0, 7, 4, 4), w, {})]
    for x, wt, kw in cases:
        conv = F.conv1d if x.dim() == 3 else F.conv2d
        with launched_kernels() as names:
            run_both(conv, x, wt, b, **kw)
            torch.opencl.synchronize()
        assert not {"im2col", "col2im", "im2col_folded", "col2im_folded"} & set(names), (x.shape, names)
    # float64 where the device has it
    if HAS_FP64:
        d = dict(dtype=torch.float64)
        run_both(F.conv2d, rnd(2, 7, 5, 5, **d), rnd(5, 7, 1, 1, seed=1, **d), rnd(5, seed=2, **d) if bias else None)


def test_conv1d():
    run_both(F.conv1d, rnd(2, 4, 11), rnd(4, 4, 3, seed=1), rnd(4, seed=2), stride=2, padding=2, dilation=2)


@pytest.mark.skipif(not HAS_FP64, reason="device has no float64")
def test_conv2d_float64_depthwise():
    d = torch.float64
    run_both(F.conv2d, rnd(2, 4, 7, 5, dtype=d), rnd(4, 1, 3, 3, dtype=d, seed=1), rnd(4, dtype=d, seed=2),
             padding=1, groups=4)


def test_noncontiguous_input_and_module():
    x = rnd(2, 5, 6, 3).permute(0, 3, 1, 2)  # channels-last-like strides
    run_both(F.conv2d, x, rnd(4, 3, 2, 2, seed=1), None, padding=1)
    conv = torch.nn.Conv2d(3, 2, 3)
    conv_d = torch.nn.Conv2d(3, 2, 3).to(DEV)
    conv_d.load_state_dict(conv.state_dict())
    x = rnd(1, 3, 5, 5)
    torch.testing.assert_close(conv_d(x.to(DEV)).detach().cpu(), conv(x).detach(), rtol=1e-4, atol=1e-4)


def test_zero_batch():
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        y = F.conv2d(torch.empty(0, 2, 5, 5, device=DEV), rnd(3, 2, 3, 3).to(DEV))
    finally:
        torch.opencl.set_fallback_mode(previous)
    assert y.shape == (0, 3, 3, 3)


def test_conv2d_batch_of_one():
    # N == 1 writes the GEMM straight into the output (no (O, N, L) -> (N, O, L) pass)
    run_both(F.conv2d, rnd(1, 3, 6, 5), rnd(4, 3, 3, 2, seed=1), None, padding=1)
    run_both(F.conv2d, rnd(1, 3, 6, 5), rnd(4, 3, 3, 2, seed=1), rnd(4, seed=2), stride=2)


CASES_T2D = [
    # input (N, C_in, H, W), weight (C_in, C_out / groups, KH, KW), kwargs
    ((2, 4, 5, 5), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((3, 4, 4, 6), (4, 2, 2, 3), dict(stride=(1, 2), padding=(0, 1), dilation=(2, 1), groups=2)),
    ((1, 2, 4, 4), (2, 3, 3, 3), dict(stride=2)),
    ((2, 3, 3, 4), (3, 2, 1, 1), dict(stride=3, output_padding=(2, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", CASES_T2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose2d(xs, ws, kw, bias):
    groups = kw.get("groups", 1)
    run_both(F.conv_transpose2d, rnd(*xs), rnd(*ws, seed=1), rnd(ws[1] * groups, seed=2) if bias else None, **kw)


def test_conv_transpose1d():
    run_both(F.conv_transpose1d, rnd(2, 3, 7), rnd(3, 4, 3, seed=1), rnd(4, seed=2), stride=3, padding=1,
             output_padding=2)
    run_both(F.conv_transpose1d, rnd(3, 4, 5), rnd(4, 1, 2, seed=1), None, dilation=3, groups=4)


@pytest.mark.skipif(not HAS_FP64, reason="device has no float64")
def test_conv_transpose2d_float64():
    d = torch.float64
    run_both(F.conv_transpose2d, rnd(2, 4, 3, 5, dtype=d), rnd(4, 2, 3, 2, dtype=d, seed=1), rnd(4, dtype=d, seed=2),
             stride=2, padding=(1, 0), groups=2)


def test_conv_transpose_module_and_zero_batch():
    conv = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)
    conv_d = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1).to(DEV)
    conv_d.load_state_dict(conv.state_dict())
    x = rnd(2, 3, 4, 4)
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        y = conv_d(x.to(DEV))
        z = F.conv_transpose2d(torch.empty(0, 2, 5, 5, device=DEV), rnd(2, 3, 3, 3).to(DEV))
    finally:
        torch.opencl.set_fallback_mode(previous)
    torch.testing.assert_close(y.detach().cpu(), conv(x).detach(), rtol=1e-4, atol=1e-4)
    assert z.shape == (0, 3, 7, 7)


def _counted_on_cpu(fn, *args, **kw):
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    torch.opencl.reset_fallback_stats()
    try:
        y = fn(*(a.to(DEV) for a in args), **kw)
    finally:
        torch.opencl.set_fallback_mode(previous)
    torch.testing.assert_close(y.cpu(), fn(*args, **kw), rtol=1e-4, atol=1e-4)
    return torch.opencl.fallback_stats().get("aten::convolution_overrideable", 0)


def test_transposed_output_padding_beyond_stride_runs_on_cpu_and_is_counted():
    # output_padding >= stride (allowed below the dilation) adds positions the adjoint does not cover
    assert _counted_on_cpu(F.conv_transpose2d, rnd(1, 2, 4, 4), rnd(2, 3, 3, 3, seed=1), stride=1, dilation=2,
                           output_padding=1) == 1


def test_errors():
    with pytest.raises(RuntimeError, match="same device|devices"):
        F.conv2d(rnd(1, 2, 4, 4).to(DEV), rnd(3, 2, 3, 3))
    with pytest.raises(RuntimeError, match="expected input|channels"):
        F.conv2d(rnd(1, 2, 4, 4).to(DEV), rnd(3, 5, 3, 3).to(DEV))


# The layout kernels around the GEMMs: rows_to_channels (with the bias fused), channels_to_rows, the
# channels_last grad_output taken as a view, chunks of samples, and samples too large for the kernels.

def test_channels_last_input_and_grad_output():
    x = rnd(3, 5, 7, 6).to(memory_format=torch.channels_last)
    run_both(F.conv2d, x, rnd(4, 5, 3, 3, seed=1), rnd(4, seed=2), padding=1)
    # grad_output channels_last reaches convolution_backward as such: its (N * L, O) view feeds the GEMMs.
    xo = x.to(DEV).requires_grad_()
    wc, bc = rnd(4, 5, 3, 3, seed=1).requires_grad_(), rnd(4, seed=2).requires_grad_()
    wo, bo = wc.detach().to(DEV).requires_grad_(), bc.detach().to(DEV).requires_grad_()
    g = rnd(3, 4, 7, 6, seed=3).to(memory_format=torch.channels_last)
    xc = x.clone().requires_grad_()
    F.conv2d(xc, wc, bc, padding=1).backward(g)
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        go = g.to(DEV)
        assert go.is_contiguous(memory_format=torch.channels_last)
        F.conv2d(xo, wo, bo, padding=1).backward(go)
    finally:
        torch.opencl.set_fallback_mode(previous)
    for got, want in ((xo.grad, xc.grad), (wo.grad, wc.grad), (bo.grad, bc.grad)):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not HAS_FP64, reason="device has no float64")
def test_bias_float64_and_strided_bias():
    b = rnd(8, dtype=torch.float64, seed=2)[::2]  # a strided bias
    run_both(F.conv2d, rnd(2, 3, 6, 6, dtype=torch.float64), rnd(4, 3, 3, 3, dtype=torch.float64, seed=1), b,
             stride=2, padding=1)


# float64: the weight gradients sum 10^5+ products, beyond float32's 1e-4 against CPU's summation order.
@pytest.mark.skipif(not HAS_FP64, reason="device has no float64")
def test_layout_kernels_over_several_sample_chunks():
    # 70 samples of 16 x 64 x 64 outputs: 4.6M elements, past the kernels' 2^22-element chunk.
    f64 = dict(dtype=torch.float64)
    run_both(F.conv2d, rnd(70, 1, 64, 64, **f64), rnd(16, 1, 3, 3, seed=1, **f64), rnd(16, seed=2, **f64), padding=1)


@pytest.mark.skipif(not HAS_FP64, reason="device has no float64")
def test_sample_larger_than_a_chunk_changes_layout_through_aten():
    # One sample of 64 x 256 x 256 = 4.2M output elements: permute and copy instead of the layout kernels.
    f64 = dict(dtype=torch.float64)
    run_both(F.conv2d, rnd(1, 1, 256, 256, **f64), rnd(64, 1, 3, 3, seed=1, **f64), rnd(64, seed=2, **f64), padding=1)


def test_layout_kernels_follow_the_class():
    # The CPU class changes layout a line per work-item (kernel_forms' copy_lines), the GPU class folds the
    # batch into the GEMMs' columns instead; both against CPU (forward and every gradient).
    x, w, b = rnd(5, 3, 7, 6), rnd(4, 3, 3, 3, seed=1), rnd(4, seed=2)
    run_both(F.conv2d, x, w, b, padding=1)
    xs = [t.to("opencl").requires_grad_() for t in (x, w, b)]
    with launched_kernels() as names:
        F.conv2d(*xs, padding=1).sum().backward()
        torch.opencl.synchronize()
    if kernel_class() == "cpu":
        assert {"rows_to_channels_lines", "channels_to_rows_lines"} <= set(names)
    else:
        assert not {"rows_to_channels_lines", "channels_to_rows_lines", "rows_to_channels"} & set(names)
