"""3-D convolutions on the device (conv3d.h: 2-D convolutions over the kernel's depth taps; they ran on the
CPU fallback): forward and every gradient against CPU PyTorch for padding, strides, dilations, groups, 1x1x1
kernels, an empty batch and non-contiguous inputs, float32 and float64 (and bfloat16 through float32);
transposed ones (the adjoint over the same taps); CPU's errors for bad shapes."""
import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from _device_helpers import device_floats, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = device_floats()
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.bfloat16: dict(rtol=1.6e-2, atol=2e-2)}

CASES = [
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), dict(padding=1)),  # 3x3 taps: Winograd's on PoCL
    ((2, 4, 6, 5, 5), (6, 2, 2, 3, 1), dict(stride=(2, 1, 2), padding=(1, 0, 1), groups=2)),
    ((1, 2, 7, 6, 6), (3, 2, 3, 2, 2), dict(dilation=(2, 1, 2), stride=(1, 2, 1))),
    ((2, 3, 4, 4, 4), (5, 3, 1, 1, 1), {}),
    ((0, 3, 4, 4, 4), (5, 3, 1, 1, 1), {}),
]


def check(x, w, b, kwargs, dtype, want_dtype=None, fn=F.conv3d):
    xs, ws, bs = (t.detach().clone().requires_grad_() for t in (x, w, b))
    ref = [t.to(want_dtype) if want_dtype else t for t in (xs, ws, bs)]
    want = fn(*ref, **kwargs)
    grad = torch.randn(want.shape).to(dtype).to(want.dtype)  # representable in the device's dtype
    want_grads = torch.autograd.grad(want, ref, grad) if want.numel() else None
    xd, wd, bd = (t.detach().to(DEV).requires_grad_() for t in (x, w, b))
    with native_only():
        got = fn(xd, wd, bd, **kwargs)
        got_grads = torch.autograd.grad(got, (xd, wd, bd), grad.to(DEV, dtype)) if got.numel() else None
    assert got.shape == want.shape and got.dtype == dtype
    torch.testing.assert_close(got.cpu(), want.to(dtype), **TOL[dtype])
    if want_grads:
        for g, wg in zip(got_grads, want_grads):
            torch.testing.assert_close(g.cpu(), wg.to(dtype), **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv3d_and_its_gradients_match_cpu(dtype):
    torch.manual_seed(0)
    for shape, wshape, kwargs in CASES:
        x, w, b = torch.randn(shape, dtype=dtype), torch.randn(wshape, dtype=dtype), torch.randn(wshape[0], dtype=dtype)
        check(x, w, b, kwargs, dtype)
    # Non-contiguous and channels-last inputs, a transposed weight.
    x = torch.randn(2, 5, 6, 3, 7, dtype=dtype).permute(0, 3, 1, 2, 4)
    w = torch.randn(3, 4, 3, 2, 2, dtype=dtype).transpose(0, 1)
    check(x, w, torch.randn(4, dtype=dtype), dict(padding=(1, 1, 0)), dtype)
    check(torch.randn(2, 3, 4, 5, 6, dtype=dtype).to(memory_format=torch.channels_last_3d),
          torch.randn(4, 3, 2, 2, 2, dtype=dtype), torch.randn(4, dtype=dtype), dict(stride=2), dtype)


TRANSPOSED = [
    ((2, 4, 3, 4, 5), (4, 3, 3, 3, 3), dict(padding=1)),
    ((1, 4, 3, 3, 4), (4, 2, 2, 3, 2), dict(stride=(2, 1, 2), padding=(1, 1, 0), output_padding=(1, 0, 1),
                                            groups=2)),
    ((2, 2, 4, 3, 3), (2, 3, 3, 2, 2), dict(dilation=(2, 1, 1), stride=(3, 2, 1), output_padding=(2, 1, 0))),
]


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_transpose3d_and_its_gradients_match_cpu(dtype):
    torch.manual_seed(0)
    for shape, wshape, kwargs in TRANSPOSED:
        x, w = torch.randn(shape, dtype=dtype), torch.randn(wshape, dtype=dtype)
        b = torch.randn(wshape[1] * kwargs.get("groups", 1), dtype=dtype)
        check(x, w, b, kwargs, dtype, fn=F.conv_transpose3d)


def test_conv3d_in_bfloat16_and_a_training_step():
    torch.manual_seed(0)
    x, w, b = (torch.randn(2, 3, 5, 6, 7).bfloat16(), torch.randn(4, 3, 3, 3, 3).bfloat16(),
               torch.randn(4).bfloat16())
    check(x, w, b, dict(padding=1), torch.bfloat16, want_dtype=torch.float32)
    model = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv3d(4, 2, (1, 3, 3), stride=(1, 2, 2)),
                          nn.ConvTranspose3d(2, 3, 2, stride=2))
    dev_model = copy.deepcopy(model).to(DEV)
    x = torch.randn(2, 2, 4, 8, 8)
    model(x).square().mean().backward()
    with native_only():
        dev_model(x.to(DEV)).square().mean().backward()
    for p, q in zip(model.parameters(), dev_model.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-5)


def test_conv3d_bad_shapes_raise_as_on_cpu():
    x, w = torch.randn(1, 3, 2, 4, 4), torch.randn(4, 3, 3, 3, 3)
    for call in (lambda x, w: F.conv3d(x, w),  # the kernel is deeper than the input
                 lambda x, w: F.conv3d(x, w[:, :2], padding=1),  # channels do not match
                 lambda x, w: F.conv3d(x, w, stride=0)):
        with pytest.raises(RuntimeError) as want:
            call(x, w)
        with native_only(), pytest.raises(RuntimeError) as got:
            call(x.to(DEV), w.to(DEV))
        assert str(got.value) == str(want.value)
