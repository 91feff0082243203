"""F.grid_sample of 5-D inputs (aten::grid_sampler_3d: trilinear "bilinear" and nearest, padding
zeros/border/reflection, align_corners both) and its backward run natively on opencl for float32 and float64:
values and gradients (input and grid) against CPU PyTorch, with no CPU fallback (native_only), and CPU's errors.
Modes and flags are kernel arguments, so each dtype compiles one program."""
import re

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-4, torch.float64: 1e-10}
MODES = [(mode, padding, align) for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")
         for align in (False, True)]


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def sample_grid(n, d, h, w, dtype, seed=2, spread=1.3):
    """Coordinates mostly in [-1, 1], some outside (padding matters)."""
    return (torch.rand((n, d, h, w, 3), dtype=dtype, generator=torch.Generator().manual_seed(seed)) * 2 - 1) * spread


def check_grads(fn, *inputs, tol):
    """fn's value and every input's gradient on opencl (natively) against CPU's, for a random grad_output."""
    leaves_c = [x.detach().clone().requires_grad_() for x in inputs]
    leaves_d = [x.detach().to(DEV).requires_grad_() for x in inputs]
    want = fn(*leaves_c)
    with native_only():
        got = fn(*leaves_d)
    assert got.device.type == "opencl" and got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=tol, atol=tol, equal_nan=True)
    g = data(*want.shape, dtype=want.dtype, seed=1)
    grads_c = torch.autograd.grad(want, leaves_c, g)
    with native_only():
        grads_d = torch.autograd.grad(got, leaves_d, g.to(DEV))
    for gd, gc in zip(grads_d, grads_c):
        assert gd.shape == gc.shape and gd.dtype == gc.dtype
        torch.testing.assert_close(gd.cpu(), gc, rtol=tol, atol=tol, equal_nan=True)


def raises_like_cpu(fn, *inputs):
    with pytest.raises(Exception) as cpu_error:
        fn(*inputs)
    message = str(cpu_error.value).splitlines()[0]
    with native_only(), pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in inputs])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_values_and_gradients_match_cpu(dtype):
    x = data(2, 3, 4, 5, 6, dtype=dtype)
    grid = sample_grid(2, 3, 4, 5, dtype)
    for mode, padding, align in MODES:
        check_grads(lambda i, g: F.grid_sample(i, g, mode=mode, padding_mode=padding, align_corners=align), x, grid,
                    tol=TOL[dtype])
    # Non-contiguous input (channels-last-3d and a slice) and grid (a permuted view).
    xs = data(2, 6, 5, 4, 3, dtype=dtype, seed=3).permute(0, 4, 3, 2, 1)[:, :, ::2]
    gs = sample_grid(2, 5, 3, 4, dtype, seed=4).permute(0, 3, 1, 2, 4)
    check_grads(lambda i, g: F.grid_sample(i, g, padding_mode="reflection", align_corners=False), xs, gs,
                tol=TOL[dtype])
    # A size-1 dimension (reflection's degenerate span) and points exactly on input positions (nearest's ties).
    check_grads(lambda i, g: F.grid_sample(i, g, padding_mode="reflection", align_corners=True),
                data(1, 2, 1, 3, 4, dtype=dtype), sample_grid(1, 2, 2, 3, dtype, seed=5), tol=TOL[dtype])
    ticks = torch.linspace(-1, 1, 9, dtype=dtype)
    on_grid = torch.stack(torch.meshgrid(ticks[:5], ticks[:7], ticks, indexing="ij")[::-1], -1)[None]
    for mode, padding, align in MODES:
        check_grads(lambda i, g: F.grid_sample(i, g, mode=mode, padding_mode=padding, align_corners=align),
                    data(1, 2, 4, 3, 5, dtype=dtype, seed=6), on_grid, tol=TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nan_inf_and_empty_like_cpu(dtype):
    x = data(1, 2, 3, 4, 5, dtype=dtype)
    grid = sample_grid(1, 2, 3, 4, dtype)
    grid[0, 0, 0, 0] = torch.tensor([float("nan"), 0.2, 0.1])
    grid[0, 0, 1, 1] = torch.tensor([0.3, float("inf"), -0.5])
    grid[0, 1, 2, 3] = torch.tensor([float("-inf"), 0.5, float("nan")])
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border"):  # reflection of inf is undefined (an int cast of inf) on CPU
            for align in (False, True):
                want = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
                with native_only():
                    got = F.grid_sample(x.to(DEV), grid.to(DEV), mode=mode, padding_mode=padding, align_corners=align)
                torch.testing.assert_close(got.cpu(), want, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)
    # NaN grid points in the backward: no tap, a zero grid gradient, as CPU.
    nan_grid = grid.nan_to_num(nan=float("nan"), posinf=0.4, neginf=-0.4)
    for padding in ("zeros", "border", "reflection"):
        check_grads(lambda i, g: F.grid_sample(i, g, padding_mode=padding, align_corners=False), x, nan_grid,
                    tol=TOL[dtype])
    # Empty output points, channels and batch.
    for xs, gs in [((1, 2, 3, 4, 5), (1, 0, 3, 4, 3)), ((1, 0, 3, 4, 5), (1, 2, 3, 4, 3)),
                   ((0, 2, 3, 4, 5), (0, 2, 3, 4, 3))]:
        check_grads(lambda i, g: F.grid_sample(i, g, align_corners=False), data(*xs, dtype=dtype),
                    sample_grid(*gs[:4], dtype), tol=TOL[dtype])


@pytest.mark.parametrize("args", [
    ((1, 1, 2, 2, 2), (1, 1, 1, 1, 3), "bicubic"),  # bicubic is 4-D only
    ((1, 1, 2, 2, 2), (1, 1, 1, 3), "bilinear"),  # grid of another rank
    ((1, 1, 2, 2, 2), (2, 1, 1, 1, 3), "bilinear"),  # batch mismatch
    ((1, 1, 2, 2, 2), (1, 1, 1, 1, 2), "bilinear"),  # grid's last dim not 3
    ((1, 1, 0, 2, 2), (1, 1, 1, 1, 3), "bilinear"),  # empty spatial input
])
def test_errors_like_cpu(args):
    x, g, mode = args
    raises_like_cpu(lambda i, gr: F.grid_sample(i, gr, mode=mode, align_corners=False), torch.zeros(x),
                    torch.zeros(g))


def test_dtype_errors_like_cpu():
    raises_like_cpu(lambda i, g: torch.grid_sampler_3d(i, g, 0, 0, False), torch.zeros(1, 1, 2, 2, 2),
                    torch.zeros(1, 1, 1, 1, 3, dtype=torch.float64))
    raises_like_cpu(lambda i, g: torch.grid_sampler_3d(i, g, 0, 0, False), torch.zeros(1, 1, 2, 2, 2, dtype=torch.long),
                    torch.zeros(1, 1, 1, 1, 3, dtype=torch.long))
