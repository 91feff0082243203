"""F.grid_sample of 4-D inputs (aten::grid_sampler_2d: bilinear, nearest and bicubic, padding zeros/border/reflection,
align_corners both) and F.interpolate(mode="bicubic") (aten::upsample_bicubic2d) run natively on opencl:
values and gradients (input and grid) against CPU PyTorch, with no CPU fallback (native_only). Modes and flags
are kernel arguments, so each dtype compiles one program."""
import re

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import assert_same_as_cpu, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.float16: 1e-2, torch.bfloat16: 5e-2}


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def check_grads(fn, *inputs, tol=None):
    """fn's value and every input's gradient on opencl (natively) against CPU's, for a random grad_output."""
    t = tol or TOL[inputs[0].dtype]
    leaves_c = [x.detach().clone().requires_grad_() for x in inputs]
    leaves_d = [x.detach().to(DEV).requires_grad_() for x in inputs]
    want = fn(*leaves_c)
    with native_only():
        got = fn(*leaves_d)
    assert got.device.type == "opencl" and got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=t, atol=t, equal_nan=True)
    g = data(*want.shape, dtype=want.dtype, seed=1)
    grads_c = torch.autograd.grad(want, leaves_c, g)
    with native_only():
        grads_d = torch.autograd.grad(got, leaves_d, g.to(DEV))
    for gd, gc in zip(grads_d, grads_c):
        assert gd.shape == gc.shape and gd.dtype == gc.dtype
        torch.testing.assert_close(gd.cpu(), gc, rtol=t, atol=t, equal_nan=True)


def raises_like_cpu(fn, *inputs):
    with pytest.raises(Exception) as cpu_error:
        fn(*inputs)
    message = str(cpu_error.value).splitlines()[0]
    with pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in inputs])


def sample_grid(n, h, w, dtype, seed=2, spread=1.3):
    """Coordinates mostly in [-1, 1], some outside (padding matters), none on the tap boundaries."""
    return (torch.rand((n, h, w, 2), dtype=dtype, generator=torch.Generator().manual_seed(seed)) * 2 - 1) * spread


@pytest.mark.parametrize("dtype", FLOATS)
def test_grid_sample_matches_cpu(dtype):
    x = data(2, 3, 5, 7, dtype=dtype)
    grid = sample_grid(2, 4, 6, dtype)
    for mode in ["bilinear", "nearest", "bicubic"]:
        for padding in ["zeros", "border", "reflection"]:
            for align in [False, True]:
                fn = lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding, align_corners=align)
                check_grads(fn, x, grid)
    # non-contiguous and channels_last inputs, a transposed grid
    fn = lambda t, g: F.grid_sample(t, g, align_corners=False)
    check_grads(fn, x.contiguous(memory_format=torch.channels_last), grid)
    check_grads(fn, x.transpose(2, 3), grid.transpose(1, 2))
    # empty batch, a single-pixel input (reflection of a zero span), grid NaN/inf stay as CPU's
    check_grads(fn, data(0, 3, 5, 7, dtype=dtype), sample_grid(0, 4, 6, dtype))
    check_grads(lambda t, g: F.grid_sample(t, g, padding_mode="reflection", align_corners=True),
                data(1, 2, 1, 1, dtype=dtype), sample_grid(1, 3, 3, dtype))
    odd = grid.clone()
    odd[0, 0, 0, 0], odd[1, 1, 1, 1], odd[0, 2, 3, 0] = float("nan"), float("inf"), -1e30
    for mode in ["bilinear", "nearest", "bicubic"]:
        for padding in ["zeros", "border", "reflection"]:
            want = F.grid_sample(x, odd, mode=mode, padding_mode=padding, align_corners=False)
            with native_only():
                got = F.grid_sample(x.to(DEV), odd.to(DEV), mode=mode, padding_mode=padding, align_corners=False)
            assert_same_as_cpu(got, want, rtol=TOL[dtype], atol=TOL[dtype])


def test_grid_sample_grid_only_gradient_reduced_floats_and_errors():
    x, grid = data(2, 3, 5, 7), sample_grid(2, 4, 6, torch.float32)
    gd = grid.to(DEV).requires_grad_()
    with native_only():
        out = F.grid_sample(x.to(DEV), gd, align_corners=True)
        gg, = torch.autograd.grad(out.sum(), gd)
    gc = grid.clone().requires_grad_()
    want, = torch.autograd.grad(F.grid_sample(x, gc, align_corners=True).sum(), gc)
    torch.testing.assert_close(gg.cpu(), want, rtol=1e-4, atol=1e-4)
    for dtype in [torch.float16, torch.bfloat16]:
        want = F.grid_sample(x.to(dtype), grid.to(dtype), align_corners=False)
        with native_only():
            got = F.grid_sample(x.to(dtype).to(DEV), grid.to(dtype).to(DEV), align_corners=False)
        assert_same_as_cpu(got, want, rtol=TOL[dtype], atol=TOL[dtype])
    raises_like_cpu(lambda t, g: F.grid_sample(t, g, align_corners=False), x, grid[:1])
    raises_like_cpu(lambda t, g: F.grid_sample(t, g, align_corners=False), x, grid[..., :1])
    raises_like_cpu(lambda t, g: F.grid_sample(t, g, align_corners=False), data(2, 3, 0, 7), grid)
    raises_like_cpu(lambda t, g: F.grid_sample(t, g, align_corners=False), x.long(), grid.long())


@pytest.mark.parametrize("dtype", FLOATS)
def test_interpolate_bicubic_matches_cpu(dtype):
    x = data(2, 3, 5, 6, dtype=dtype)
    for kwargs in [dict(scale_factor=2), dict(size=(7, 4)), dict(size=(3, 11)), dict(size=(5, 6)),
                   dict(scale_factor=(1.7, 0.6)), dict(size=(1, 1))]:
        for align in [False, True]:
            check_grads(lambda t: F.interpolate(t, mode="bicubic", align_corners=align, **kwargs), x)
    check_grads(lambda t: F.interpolate(t, scale_factor=1.5, mode="bicubic"),
                x.contiguous(memory_format=torch.channels_last))
    check_grads(lambda t: F.interpolate(t, scale_factor=1.5, mode="bicubic"), x.transpose(2, 3))
    check_grads(lambda t: F.interpolate(t, scale_factor=2, mode="bicubic"), data(0, 3, 5, 6, dtype=dtype))
    y = x.clone()
    y[0, 0, 1, 1] = float("inf")
    y[1, 2, 3, 4] = float("nan")
    want = F.interpolate(y, size=(8, 9), mode="bicubic")
    with native_only():
        got = F.interpolate(y.to(DEV), size=(8, 9), mode="bicubic")
    assert_same_as_cpu(got, want, rtol=TOL[dtype], atol=TOL[dtype])
    out = torch.empty(0, device=DEV, dtype=dtype)
    with native_only():
        torch._C._nn.upsample_bicubic2d(x.to(DEV), [7, 9], False, out=out)
    assert_same_as_cpu(out, torch._C._nn.upsample_bicubic2d(x, [7, 9], False), rtol=TOL[dtype], atol=TOL[dtype])
    raises_like_cpu(lambda t: torch._C._nn.upsample_bicubic2d(t, [0, 5], False), x)
