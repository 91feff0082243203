"""Calls a kernel cannot take (complex dtypes) run on the CPU fallback, counted and governed by the
fallback mode like operators without a kernel (aten/kernel_support/dtype_fallback.h)."""
import pytest
import torch

import torch_opencl  # noqa: F401
from _device_helpers import native_only

DEV = torch.device("opencl")
COMPLEX = [torch.complex64, torch.complex128]


def _pair(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, dtype=dtype, generator=g)
    return a, a.to(DEV)


def _stats(name):
    return torch.opencl.fallback_stats().get(name, 0)


@pytest.fixture(autouse=True)
def _quiet_fallback():
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    yield
    torch.opencl.set_fallback_mode(previous)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_binary_and_unary_ops_match_cpu(dtype):
    a, ad = _pair((5, 7), dtype, 0)
    b, bd = _pair((7,), dtype, 1)  # broadcast
    for fn in (lambda x, y: x * y, lambda x, y: x + y, lambda x, y: torch.add(x, y, alpha=2),
               lambda x, y: x - y, lambda x, y: x / y):
        torch.testing.assert_close(fn(ad, bd).cpu(), fn(a, b))
    torch.testing.assert_close(torch.exp(ad).cpu(), torch.exp(a))
    torch.testing.assert_close((ad * 2.5).cpu(), a * 2.5)  # with a CPU scalar
    # Non-contiguous operands.
    torch.testing.assert_close((ad.t() * ad.t()).cpu(), a.t() * a.t())
    # 0-d and 0-size.
    torch.testing.assert_close((ad[0, 0] * bd[1]).cpu(), a[0, 0] * b[1])
    assert (ad[:0] * bd).shape == (0, 7)
    # A real tensor times a complex one promotes to complex, as on CPU.
    r, rd = _pair((7,), torch.float32, 2)
    torch.testing.assert_close((rd * bd).cpu(), r * b)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place_and_out_forms(dtype):
    a, ad = _pair((4, 3), dtype, 3)
    b, bd = _pair((4, 3), dtype, 4)
    ad.mul_(bd)
    a.mul_(b)
    torch.testing.assert_close(ad.cpu(), a)
    view = ad[:, 1]
    view.add_(bd[:, 0])  # in place through a view writes into the base
    a[:, 1].add_(b[:, 0])
    torch.testing.assert_close(ad.cpu(), a)
    out = torch.empty(0, dtype=dtype, device=DEV)
    torch.mul(ad, bd, out=out)
    torch.testing.assert_close(out.cpu(), a * b)
    torch.exp(bd, out=out)
    torch.testing.assert_close(out.cpu(), torch.exp(b))


def test_the_fallback_counts_them_and_real_dtypes_stay_native():
    torch.opencl.reset_fallback_stats()
    a, ad = _pair((6,), torch.complex64, 5)
    ad * ad
    ad + ad
    torch.exp(ad)
    ad.mul_(2)
    assert _stats("aten::mul.Tensor") == 1
    assert _stats("aten::add.Tensor") == 1
    assert _stats("aten::exp") == 1
    assert _stats("aten::mul_.Tensor") == 1
    r = torch.randn(6, device=DEV)
    with native_only():
        torch.testing.assert_close((r * r + torch.exp(r)).cpu(), r.cpu() * r.cpu() + torch.exp(r.cpu()))


def test_error_mode_refuses_with_the_reason():
    _, ad = _pair((3,), torch.complex64, 6)
    with native_only():
        with pytest.raises(RuntimeError, match=r"aten::mul\.Tensor.*no opencl kernel for these arguments.*ComplexFloat"):
            ad * ad
    # Without the fallback's consent nothing ran: ad is unchanged by a refused in-place op.
    before = ad.cpu()
    with native_only():
        with pytest.raises(RuntimeError, match="TORCH_OPENCL_FALLBACK=error"):
            ad.mul_(3)
    torch.testing.assert_close(ad.cpu(), before)


def test_view_as_real_and_complex_are_views_on_the_device():
    z, zd = _pair((3, 4), torch.complex64, 7)
    with native_only():
        r = torch.view_as_real(zd)
        back = torch.view_as_complex(r)
    assert r.shape == (3, 4, 2) and r.dtype == torch.float32 and r.device.type == "opencl"
    assert r.untyped_storage().data_ptr() == zd.untyped_storage().data_ptr()
    torch.testing.assert_close(r.cpu(), torch.view_as_real(z))
    r[0, 0, 1] = 5.0  # writes through to the complex tensor
    assert zd[0, 0].cpu().imag == 5.0
    torch.testing.assert_close(back.cpu(), zd.cpu())


@pytest.mark.parametrize("fn", [
    lambda t: torch.fft.irfft(t, n=10, dim=1, norm="ortho"),
    lambda t: torch.fft.hfft(t, n=10, dim=1, norm="ortho"),
    lambda t: torch.fft.irfftn(t, s=[3, 10], dim=[1, 2], norm="ortho"),
    lambda t: torch.fft.rfft(t * 1.5).abs().pow(2),
], ids=["irfft", "hfft", "irfftn", "rfft_abs"])
def test_fft_backward_matches_cpu(fn):
    x = torch.randn(5, 6, 7, dtype=torch.float64)
    w = torch.randn_like(fn(x))
    xd = x.to(DEV).requires_grad_()
    xc = x.clone().requires_grad_()
    (fn(xd) * w.to(DEV)).sum().backward()
    (fn(xc) * w).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
