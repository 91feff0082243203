"""The small-GEMM kernel (kernels_cl/gemm.cl, aten/native/gemm_small.cpp) that serves mm/addmm/bmm/baddbmm on
CPU OpenCL devices, against CPU: sizes 1..67 around the tile edges, transposed/sliced/strided operands
(packed or read in place), batch strides including 0 (expanded), alpha/beta with NaN in the output when
beta == 0, float32 and float64; and the switch to CLBlast above the size limit."""
import pytest
import torch

import torch_opencl  # noqa: F401
from torch_opencl import _C

from _device_helpers import native_only

DEV = "opencl"
HAS_FP64 = torch.opencl.get_device_properties(0).fp64
DTYPES = [torch.float32] + ([torch.float64] if HAS_FP64 else [])
# The kernel serves the CPU kernel class (runtime/kernel_forms.h); CLBlast and the tiled GEMM the GPU class.
CPU_CLASS = _C._device_properties(0)["kernel_class"] == "cpu"


def rnd(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def close(actual, expected, dtype):
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(actual.cpu(), expected, rtol=tol, atol=tol)


# Operand forms of the last two dims: value-preserving opencl copies with different strides.
def contiguous(t):
    return t.to(DEV)


def transposed(t):  # column-major matrices (B then has non-adjacent columns: packed)
    return t.transpose(-1, -2).contiguous().to(DEV).transpose(-1, -2)


def sliced(t):  # leading dimension larger than the width, and a storage offset
    big = torch.zeros(*t.shape[:-2], t.shape[-2] + 2, t.shape[-1] + 3, dtype=t.dtype)
    big[..., 1:-1, 2:-1] = t
    return big.to(DEV)[..., 1:-1, 2:-1]


def strided(t):  # neither row- nor column-major
    big = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
    big[..., ::2] = t
    return big.to(DEV)[..., ::2]


FORMS = [contiguous, transposed, sliced, strided]


def kernel_launches(fn):
    before = _C._launch_count()
    result = fn()
    return result, _C._launch_count() - before


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 67, 3), (67, 1, 5), (7, 15, 16), (9, 17, 1), (8, 16, 33),
                                   (33, 31, 2), (16, 32, 64), (65, 48, 17), (67, 67, 67), (3, 40, 9)])
def test_mm_sizes(dtype, m, n, k):
    a, b = rnd(m, k, dtype=dtype), rnd(k, n, dtype=dtype, seed=1)
    with native_only():
        out, launches = kernel_launches(lambda: torch.mm(a.to(DEV), b.to(DEV)))
    close(out, a @ b, dtype)
    if CPU_CLASS:
        assert launches >= 1  # our kernel (CLBlast's launches are not counted)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fa", FORMS)
@pytest.mark.parametrize("fb", FORMS)
def test_mm_layouts(dtype, fa, fb):
    a, b = rnd(19, 37, dtype=dtype), rnd(37, 35, dtype=dtype, seed=1)
    with native_only():
        out = torch.mm(fa(a), fb(b))
    close(out, a @ b, dtype)


@pytest.mark.parametrize("form", [transposed, sliced, strided])
def test_out_layouts_and_nan(form):
    a, b = rnd(21, 13), rnd(13, 34, seed=1)
    out = form(torch.full((21, 34), float("nan")))
    with native_only():
        torch.mm(a.to(DEV), b.to(DEV), out=out)
    close(out, a @ b, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
@pytest.mark.parametrize("n", [5, 16, 45])
def test_addmm_alpha_beta(dtype, beta, alpha, n):
    a, b = rnd(11, 23, dtype=dtype), rnd(23, n, dtype=dtype, seed=1)
    c = rnd(n, dtype=dtype, seed=2) if beta != 0 else torch.full((11, n), float("nan"), dtype=dtype)
    expected = torch.addmm(c, a, b, beta=beta, alpha=alpha)
    with native_only():
        close(torch.addmm(c.to(DEV), a.to(DEV), transposed(b), beta=beta, alpha=alpha), expected, dtype)
        inplace = c.expand(11, n).contiguous().to(DEV)
        inplace.addmm_(transposed(a), b.to(DEV), beta=beta, alpha=alpha)
        close(inplace, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fa", [contiguous, transposed, sliced])
@pytest.mark.parametrize("fb", [contiguous, transposed, strided])
def test_bmm_layouts(dtype, fa, fb):
    a, b = rnd(5, 17, 16, dtype=dtype), rnd(5, 16, 33, dtype=dtype, seed=1)
    with native_only():
        close(torch.bmm(fa(a), fb(b)), a @ b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_broadcast_batch_and_attention_views(dtype):
    a, b = rnd(4, 9, 6, dtype=dtype), rnd(1, 6, 20, dtype=dtype, seed=1)
    with native_only():
        # batch stride 0 for either operand (B is packed once for an expanded batch)
        close(torch.bmm(a.to(DEV), b.to(DEV).expand(4, 6, 20)), a @ b.expand(4, 6, 20), dtype)
        close(torch.bmm(transposed(b).expand(4, 6, 20).transpose(1, 2), transposed(a.transpose(1, 2))),
              b.expand(4, 6, 20).transpose(1, 2) @ a.transpose(1, 2), dtype)
        close(torch.bmm(b.to(DEV).transpose(1, 2).expand(4, 20, 6), a.to(DEV).transpose(1, 2)),
              b.transpose(1, 2).expand(4, 20, 6) @ a.transpose(1, 2), dtype)
        # attention: q @ k^T and p @ v on head views of one (B, T, 3C) tensor
        qkv = rnd(2, 12, 3 * 8, dtype=dtype, seed=2)
        q, k, v = (z.view(2, 12, 2, 4).transpose(1, 2).reshape(4, 12, 4) for z in qkv.split(8, dim=2))
        dq, dk, dv = (z.view(2, 12, 2, 4).transpose(1, 2).reshape(4, 12, 4)
                      for z in qkv.to(DEV).split(8, dim=2))
        close(torch.bmm(dq, dk.transpose(1, 2)), q @ k.transpose(1, 2), dtype)
        p = torch.softmax(q @ k.transpose(1, 2), -1)
        close(torch.bmm(p.to(DEV), dv), p @ v, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_baddbmm_alpha_beta_and_nan(dtype):
    a, b, c = rnd(3, 13, 7, dtype=dtype), rnd(3, 7, 18, dtype=dtype, seed=1), rnd(3, 13, 18, dtype=dtype, seed=2)
    with native_only():
        close(torch.baddbmm(c.to(DEV), a.to(DEV), transposed(b), beta=0.5, alpha=-1.5),
              torch.baddbmm(c, a, b, beta=0.5, alpha=-1.5), dtype)
        close(torch.baddbmm(c[:1].to(DEV), a.to(DEV), b.to(DEV)), torch.baddbmm(c[:1], a, b), dtype)
        nan = torch.full((3, 13, 18), float("nan"), dtype=dtype, device=DEV)
        close(torch.baddbmm(nan, a.to(DEV), b.to(DEV), beta=0, alpha=2), 2 * (a @ b), dtype)
        out = torch.full((3, 18, 13), float("nan"), dtype=dtype, device=DEV).transpose(1, 2)
        torch.bmm(a.to(DEV), b.to(DEV), out=out)
        close(out, a @ b, dtype)


def test_training_shapes_and_gradients():
    torch.manual_seed(0)
    lin = torch.nn.Linear(70, 37)
    lin_d = torch.nn.Linear(70, 37).to(DEV)
    lin_d.load_state_dict(lin.state_dict())
    x = rnd(66, 70)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    g = rnd(66, 37, seed=3)
    lin(xc).backward(g)
    with native_only():
        yd = lin_d(xd)
        yd.backward(g.to(DEV))
    close(yd.detach(), lin(x).detach(), torch.float32)
    close(xd.grad, xc.grad, torch.float32)
    close(lin_d.weight.grad, lin.weight.grad, torch.float32)
    close(lin_d.bias.grad, lin.bias.grad, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_limit_switches_to_clblast(dtype):
    a, b = rnd(40, 24, dtype=dtype), rnd(24, 36, dtype=dtype, seed=1)
    da, db = a.to(DEV), b.to(DEV)
    old = _C._small_gemm_limit(0)
    _C._set_tiled_gemm_enabled(False)  # on the GPU class it would take the product before CLBlast
    try:
        with native_only():
            out, launches = kernel_launches(lambda: torch.mm(da, db))
        assert launches == 0  # CLBlast
        close(out, a @ b, dtype)
        _C._small_gemm_limit(40 * 24 * 36)
        out, launches = kernel_launches(lambda: torch.mm(da, db))
        close(out, a @ b, dtype)
        if CPU_CLASS:
            assert launches >= 1
    finally:
        _C._small_gemm_limit(old)
        _C._set_tiled_gemm_enabled(True)
    assert _C._small_gemm_limit() == old


def test_large_inner_dimension_and_packed_panels():
    # k large enough that rounding differs from a naive sum; m, k >= 256 packs B in order
    a, b = rnd(260, 300), rnd(300, 70, seed=1)
    with native_only():
        close(torch.mm(a.to(DEV), b.to(DEV)), a @ b, torch.float32)
        close(torch.mm(sliced(a), transposed(b)), a @ b, torch.float32)
