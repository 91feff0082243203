"""The row-wise kernel forms of softmax / log_softmax and layer_norm, forward and backward, against
CPU: one work-item per row (many rows), one work-group per row (few rows, long rows), one work-item
per column (softmax over a dim other than the last); row lengths around the 16-element vector block
(1..7, 15..17, 100000); float32/float64 and half/bfloat16 storage; -inf / NaN rows; non-contiguous."""

import contextlib

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
# Many rows: one item per row. 1 or 2 rows: a work-group per row. Row lengths cover a lone masked
# block (1..7, 15), one whole block (16), a whole block plus a masked one (17, 33), long rows.
ROWS_SHAPES = [(4096, 1), (4096, 3), (1024, 7), (1024, 15), (512, 16), (512, 17), (1024, 64), (300, 257),
               (1, 1), (1, 5), (2, 33), (1, 100000), (2, 4099)]
SOFTMAX = [F.softmax, F.log_softmax]


def softmax_case(fn, x, dim, rtol, atol, ref_dtype=None):
    """fn over dim on CPU (in ref_dtype if given, e.g. float64 for reduced precision) and natively on
    opencl: values and the input gradient agree."""
    gen = torch.Generator().manual_seed(5)
    g = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    ref_dtype = ref_dtype or x.dtype
    xc = x.to(ref_dtype).requires_grad_()
    yc = fn(xc, dim)
    (gc,) = torch.autograd.grad(yc, xc, g.to(ref_dtype))
    xd = x.to(DEV).requires_grad_()
    with native_only():
        yd = fn(xd, dim)
        (gd,) = torch.autograd.grad(yd, xd, g.to(x.dtype).to(DEV))
    assert yd.dtype == x.dtype and gd.dtype == x.dtype
    torch.testing.assert_close(yd.cpu().to(ref_dtype), yc.detach(), rtol=rtol, atol=atol, equal_nan=True)
    torch.testing.assert_close(gd.cpu().to(ref_dtype), gc, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("shape", ROWS_SHAPES)
def test_softmax_rows_float32(fn, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)) * 3
    softmax_case(fn, x, -1, 1e-4, 1e-5)  # row sums: reduction tolerance


@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("shape", [(4096, 3), (512, 17), (1, 5), (2, 4099)])
def test_softmax_rows_float64(fn, shape):
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    softmax_case(fn, x, -1, 1e-12, 1e-12)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("shape,dim", [((1024, 7), 1), ((256, 33), 1), ((2, 300), 1), ((33, 5, 9), 1)])
def test_softmax_reduced_precision_against_float64(dtype, fn, shape, dim):
    # Reduced-precision storage, float math: compared with float64 on the same rounded inputs.
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3)).to(dtype)
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    softmax_case(fn, x, dim, tol, tol, ref_dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("shape,dim", [((64, 33, 70), 1), ((100, 3), 0), ((5, 4096), 0), ((2, 3, 4, 5), 2),
                                       ((16, 4, 8, 8), 0), ((1, 7, 2), 1)])
def test_softmax_columns(dtype, fn, shape, dim):
    # dim not the last: one item per row on adjacent columns.
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(4)) * 3
    t = 1e-5 if dtype == torch.float32 else 1e-12
    softmax_case(fn, x, dim, t, t)


@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_non_contiguous_input(fn, dim):
    x = torch.randn(70, 40, 3, generator=torch.Generator().manual_seed(6)).transpose(0, 1)  # (40, 70, 3)
    softmax_case(fn, x, dim, 1e-5, 1e-6)
    softmax_case(fn, x[:, ::2], dim, 1e-5, 1e-6)


def causal_scores(rows, n, fully_masked):
    """Attention-like scores with a causal -inf mask, a NaN and an inf; the rows listed in
    fully_masked are all -inf."""
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(7))
    x = x.masked_fill(torch.ones(rows, n, dtype=torch.bool).triu(1)[:rows, :n], float("-inf"))
    x[rows // 2, n // 3] = float("nan")
    x[rows // 3, 0] = float("inf")
    x[fully_masked] = float("-inf")
    return x


@pytest.mark.parametrize("fn", SOFTMAX)
@pytest.mark.parametrize("rows,n", [(2048, 64), (2048, 5), (2, 64), (3, 40)])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_minus_inf_rows_give_nan_like_cpu(fn, rows, n, dim):
    x = causal_scores(rows, n, [0, rows - 1])
    with native_only():
        got = fn(x.to(DEV), dim).cpu()
    want = fn(x, dim)
    assert got[0].isnan().all() == want[0].isnan().all()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [None, torch.float64])
@pytest.mark.parametrize("rows,n,dim", [(2048, 64, 1), (2048, 64, 0), (2, 64, 1), (3, 40, 1), (7, 5, 0)])
def test_safe_softmax_gives_zero_for_minus_inf_rows(rows, n, dim, dtype):
    # _safe_softmax (scaled_dot_product_attention's softmax) is one native kernel: rows of -inf only
    # give 0 where softmax gives NaN; gradients through _softmax_backward_data.
    x = causal_scores(rows, n, [0, rows - 1])
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(13)).to(dtype or x.dtype)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    yc = torch._safe_softmax(xc, dim, dtype)
    (gc,) = torch.autograd.grad(yc, xc, g)
    with native_only():
        yd = torch._safe_softmax(xd, dim, dtype)
        (gd,) = torch.autograd.grad(yd, xd, g.to(DEV))
    assert yd.dtype == yc.dtype
    if dim == 1:
        assert (yd[0].cpu() == 0).all()
    torch.testing.assert_close(yd.cpu(), yc.detach(), rtol=1e-5, atol=1e-6, equal_nan=True)
    torch.testing.assert_close(gd.cpu(), gc, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_causal_attention_runs_natively():
    gen = torch.Generator().manual_seed(14)
    q, k, v = (torch.randn(2, 4, 64, 16, generator=gen).requires_grad_() for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    grads_ref = torch.autograd.grad(ref.sum(), (q, k, v))
    qd, kd, vd = (t.detach().to(DEV).requires_grad_() for t in (q, k, v))
    with native_only():
        got = F.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
        grads = torch.autograd.grad(got.sum(), (qd, kd, vd))
    torch.testing.assert_close(got.cpu(), ref.detach(), rtol=1e-4, atol=1e-5)
    for a, b in zip(grads, grads_ref):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)


def test_softmax_kernel_forms_share_one_program():
    # Every shape class (rows, row groups, columns) runs from the same program: once the first
    # calls have built it, other shapes build nothing.
    from torch_opencl import _C

    def built():
        s = _C._program_cache_stats()
        return s["source_builds"] + s["disk_loads"]

    cases = [((4096, 3), 1), ((1, 100000), 1), ((5, 6, 7), 1), ((4096, 64), 0)]
    with native_only():
        for shape, dim in cases:
            F.softmax(torch.randn(shape).to(DEV), dim)
        before = built()
        for shape, dim in [((2048, 9), 1), ((2, 30000), 1), ((6, 5, 4), 0), ((64, 4096), 0)]:
            F.softmax(torch.randn(shape).to(DEV), dim)
    assert built() == before


# ---- layer norm ----

LN_SHAPES = [((4096, 64), (64,)), ((1024, 7), (7,)), ((512, 33), (33,)), ((512, 1), (1,)), ((300, 768), (768,)),
             ((40, 3, 5), (3, 5)), ((2, 4099), (4099,)), ((1, 100000), (100000,)), ((3, 17), (17,))]


def layer_norm_case(x, shape, affine, rtol, atol, ref_dtype=None):
    gen = torch.Generator().manual_seed(8)
    w = torch.randn(shape, generator=gen).to(x.dtype) if affine else None
    b = torch.randn(shape, generator=gen).to(x.dtype) if affine else None
    g = torch.randn(x.shape, generator=gen).to(x.dtype)
    ref_dtype = ref_dtype or x.dtype
    results = []
    for device, dtype in ((DEV, x.dtype), ("cpu", ref_dtype)):
        leaves = [t.to(dtype).to(device).requires_grad_() for t in (x, w, b) if t is not None]
        with native_only() if device == DEV else contextlib.nullcontext():
            y = F.layer_norm(leaves[0], shape, *leaves[1:])
            grads = torch.autograd.grad(y, leaves, g.to(dtype).to(device))
        results.append([t.detach().cpu().to(ref_dtype) for t in (y, *grads)])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,normalized", LN_SHAPES)
def test_layer_norm_float32(shape, normalized, affine):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(9)) * 2 + 1
    layer_norm_case(x, normalized, affine, 1e-4, 1e-4)


@pytest.mark.parametrize("shape,normalized", [((4096, 64), (64,)), ((512, 33), (33,)), ((3, 17), (17,))])
def test_layer_norm_float64(shape, normalized):
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(10))
    layer_norm_case(x, normalized, True, 1e-10, 1e-10)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape,normalized", [((1024, 64), (64,)), ((512, 33), (33,)), ((3, 17), (17,))])
def test_layer_norm_reduced_precision_against_float64(dtype, shape, normalized):
    # CPU accumulates the weight/bias gradients of half/bfloat16 less precisely than opencl (float):
    # both are compared with float64 on the same rounded inputs instead.
    x = torch.randn(shape, generator=torch.Generator().manual_seed(11)).to(dtype)
    tol = 2e-2 if dtype == torch.float16 else 1e-1
    layer_norm_case(x, normalized, True, tol, tol, ref_dtype=torch.float64)


def test_layer_norm_non_contiguous_input():
    x = torch.randn(64, 300, generator=torch.Generator().manual_seed(12)).t()  # (300, 64)
    layer_norm_case(x, (64,), True, 1e-4, 1e-4)


def test_layer_norm_zero_rows():
    with native_only():
        x = torch.zeros(0, 64, device=DEV, requires_grad=True)
        w = torch.ones(64, device=DEV, requires_grad=True)
        y = F.layer_norm(x, (64,), w)
        (gw,) = torch.autograd.grad(y.sum(), [w])
    assert y.shape == (0, 64)
    assert (gw.cpu() == 0).all()
