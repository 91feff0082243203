"""Reflection/replication padding and nearest/linear upsampling: native, equal to CPU, with gradients."""
import pytest
import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401
from _device_helpers import assert_same_as_cpu, compare_with_cpu, native_only


def _grad_matches_cpu(fn, x, rtol=None, atol=None):
    """d(sum(fn(x) * w))/dx on opencl (natively) equals CPU's, for a fixed random w."""
    ref = x.clone().requires_grad_()
    y = fn(ref)
    w = torch.randn(y.shape, dtype=y.dtype, generator=torch.Generator().manual_seed(1))
    (y * w).sum().backward()
    dev = x.to("opencl").requires_grad_()
    with native_only():
        (fn(dev) * w.to("opencl")).sum().backward()
    assert_same_as_cpu(dev.grad, ref.grad, rtol, atol)


PAD_CASES = [
    ("reflect", (2, 3, 7), (2, 1)),
    ("reflect", (3, 7), (0, 6)),
    ("reflect", (2, 3, 5, 6), (1, 2, 3, 4)),
    ("reflect", (3, 5, 6), (-1, 2, 0, -2)),  # negative padding crops
    ("reflect", (1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)),
    ("replicate", (2, 3, 7), (3, 4)),
    ("replicate", (2, 3, 5, 6), (4, 0, 1, 7)),
    ("replicate", (2, 5, 6), (-2, 1, 2, -1)),
    ("replicate", (1, 2, 3, 4, 5), (2, 1, 0, 3, 1, 1)),
]


@pytest.mark.parametrize("mode,shape,pad", PAD_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pad_matches_cpu(mode, shape, pad, dtype):
    x = torch.randn(shape, dtype=dtype)
    compare_with_cpu(lambda t: F.pad(t, pad, mode=mode), x)
    _grad_matches_cpu(lambda t: F.pad(t, pad, mode=mode), x)


def test_pad_integers_non_contiguous_and_out():
    x = torch.arange(2 * 4 * 6).reshape(2, 6, 4).transpose(1, 2)  # non-contiguous int64
    compare_with_cpu(lambda t: F.pad(t, (2, 3), mode="reflect"), x)
    compare_with_cpu(lambda t: F.pad(t, (1, 1, 2, 2), mode="replicate"), x.float())
    compare_with_cpu(lambda t: torch._C._nn.reflection_pad2d(t, (1, 1, 1, 1), out=torch.empty(0, device=t.device)),
                     torch.randn(1, 3, 3))
    compare_with_cpu(lambda t: F.pad(t, (1, 2, 1, 0), mode="reflect"), torch.randn(0, 2, 3, 4))  # empty batch


@pytest.mark.parametrize("shape,pad", [((1, 3, 4), (4, 0)), ((1, 2, 3, 4), (0, 4, 0, 0)), ((1, 2, 3, 4), (0, 0, 1, 3))])
def test_reflection_padding_too_large_raises_cpus_error(shape, pad):
    x = torch.randn(shape)
    with pytest.raises(RuntimeError) as want:
        F.pad(x, pad, mode="reflect")
    with pytest.raises(RuntimeError) as got:
        F.pad(x.to("opencl"), pad, mode="reflect")
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


def test_reflection_pad2d_rejects_empty_spatial_dims():
    with pytest.raises(RuntimeError, match="non-zero dimensions"):
        F.pad(torch.randn(1, 2, 0, 4, device="opencl"), (1, 1, 1, 1), mode="reflect")


UPSAMPLE_CASES = [
    # (input shape, kwargs)
    ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 5), dict(size=7, mode="nearest")),
    ((2, 3, 5), dict(size=3, mode="nearest-exact")),
    ((2, 3, 4, 5), dict(scale_factor=(2, 3), mode="nearest")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest")),
    ((2, 3, 4, 5), dict(scale_factor=1.7, mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(size=(4, 6, 3), mode="nearest")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="nearest-exact")),
    ((2, 3, 5), dict(size=9, mode="linear", align_corners=False)),
    ((2, 3, 5), dict(size=4, mode="linear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="bilinear", align_corners=False)),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=0.6, mode="bilinear", align_corners=False)),
    ((2, 3, 4, 5), dict(size=(4, 9), mode="bilinear", align_corners=False)),  # one dim unchanged
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 8), mode="trilinear", align_corners=False)),
    ((1, 2, 3, 4, 5), dict(scale_factor=1.5, mode="trilinear", align_corners=True)),
]


@pytest.mark.parametrize("shape,kwargs", UPSAMPLE_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_interpolate_matches_cpu(shape, kwargs, dtype):
    x = torch.randn(shape, dtype=dtype)
    compare_with_cpu(lambda t: F.interpolate(t, **kwargs), x)
    _grad_matches_cpu(lambda t: F.interpolate(t, **kwargs), x)


def test_interpolate_channels_last_and_integers():
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    compare_with_cpu(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), x)
    compare_with_cpu(lambda t: F.interpolate(t, size=(3, 7), mode="nearest"),
                     torch.arange(60, dtype=torch.uint8).reshape(1, 3, 4, 5))


def test_upsample_bad_size_raises_cpus_error():
    x = torch.randn(1, 2, 3, 4)
    with pytest.raises(RuntimeError) as want:
        torch._C._nn.upsample_nearest2d(x, [0, 5])
    with pytest.raises(RuntimeError) as got:
        torch._C._nn.upsample_nearest2d(x.to("opencl"), [0, 5])
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
