"""The GEMM shaped for GPUs (kernels_cl/gemm_tiled.cl, aten/native/gemm_tiled.cpp) against CPU: every
plan (large and small tiles, K stage depths, split K), operand layouts read in place (transposed,
strided, expanded batches), alpha/beta, and the plan the device chooses for a shape.

It serves devices of the GPU kernel class: scripts/test.sh runs this file again with
TORCH_OPENCL_KERNEL_CLASS=gpu, which makes PoCL take the GPU forms."""
import pytest
import torch

import torch_opencl
from _device_helpers import native_only

DEV = torch.device("opencl")
PROPS = torch.opencl.get_device_properties(0)

pytestmark = pytest.mark.skipif(PROPS.kernel_class != "gpu",
                                reason="the tiled GEMM serves the GPU kernel class (scripts/test.sh's second pass)")

# (rm, rn, bk, splits): the tiles are 64 rm x 64 rn.
# Few, since each (tile, dtype) is a program PoCL compiles: both tile shapes of the defaults, an uneven
# one, every K stage depth, with and without split K.
PLANS = [(2, 2, 8, 1), (1, 1, 16, 3), (1, 2, 32, 2)]


@pytest.fixture
def plan(request):
    torch_opencl._C._override_tiled_gemm_plan(request.param)
    yield request.param
    torch_opencl._C._override_tiled_gemm_plan(None)


def close(got, want, dtype):
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)


def test_plans_shrink_their_k_stages_to_the_local_memory():
    # Found under Oclgrind (32 KiB of local memory): plan (1, 2, 32) in float64 needs 51 KiB of stages
    # and failed to launch with CL_OUT_OF_RESOURCES. Stages are bk * (64 rm + 4 + 64 rn + 4) elements.
    fit = torch_opencl._C._fit_tiled_gemm_plan
    assert fit((1, 2, 32, 2), 32768, 8) == (1, 2, 16, 2)
    assert fit((2, 2, 32, 1), 32768, 4) == (2, 2, 16, 1)  # 33 KiB of floats
    assert fit((2, 2, 32, 1), 49152, 4) == (2, 2, 32, 1)  # fits NVIDIA's 48 KiB
    assert fit((2, 2, 8, 1), 0, 8) == (2, 2, 8, 1)  # local memory unknown: as planned
    assert fit((2, 2, 16, 1), 2048, 4) is None  # not even 4-deep stages fit: CLBlast takes it


@pytest.mark.parametrize("plan", PLANS, indirect=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mm_layouts_and_partial_tiles(plan, dtype):
    g = torch.Generator().manual_seed(0)
    for m, n, k in [(1, 1, 1), (67, 130, 45), (128, 64, 16), (5, 200, 300), (129, 3, 513)]:
        a = torch.randn(m, k, generator=g, dtype=dtype)
        b = torch.randn(k, n, generator=g, dtype=dtype)
        with native_only():
            for ta in (False, True):
                for tb in (False, True):
                    da = a.t().contiguous().to(DEV).t() if ta else a.to(DEV)
                    db = b.t().contiguous().to(DEV).t() if tb else b.to(DEV)
                    close(da @ db, a @ b, dtype)
            # strided operands (every other column) and a strided, transposed output
            wide_a = torch.randn(m, 2 * k, generator=g, dtype=dtype)
            out = torch.full((n, m), float("nan"), dtype=dtype, device=DEV).t()
            torch.mm(wide_a.to(DEV)[:, ::2], b.to(DEV), out=out)
            close(out, wide_a[:, ::2] @ b, dtype)


@pytest.mark.parametrize("plan", PLANS, indirect=True)
def test_aligned_operands_read_four_at_a_time(plan):
    # Contiguous sizes, other strides, offsets and batch strides all multiples of 4 take the kernel's
    # VEC4 loads (each of the four layouts); an offset of 2 or an odd size takes the scalar loads.
    g = torch.Generator().manual_seed(4)

    def operand(storage, offset, rows, cols, transposed):
        flat = storage[offset:offset + rows * cols]
        return flat.view(cols, rows).t() if transposed else flat.view(rows, cols)

    with native_only():
        for m, n, k in [(132, 68, 100), (64, 260, 36), (36, 40, 9)]:
            sa, sb = torch.randn(8 + m * k, generator=g), torch.randn(8 + k * n, generator=g)
            da, db = sa.to(DEV), sb.to(DEV)
            for offset in (0, 4, 2):
                for ta in (False, True):
                    for tb in (False, True):
                        close(operand(da, offset, m, k, ta) @ operand(db, offset, k, n, tb),
                              operand(sa, offset, m, k, ta) @ operand(sb, offset, k, n, tb), torch.float32)
        # batched: batch strides multiples of 4 (and not)
        for extra in (0, 2):
            sa, sb = torch.randn(3, 68 * 40 + extra, generator=g), torch.randn(3, 40 * 72 + extra, generator=g)
            a, b = sa[:, :68 * 40].view(3, 68, 40), sb[:, :40 * 72].view(3, 40, 72)
            da, db = sa.to(DEV)[:, :68 * 40].view(3, 68, 40), sb.to(DEV)[:, :40 * 72].view(3, 40, 72)
            close(torch.bmm(da, db), torch.bmm(a, b), torch.float32)
            close(torch.bmm(da, db.transpose(1, 2).contiguous().transpose(1, 2)), torch.bmm(a, b), torch.float32)


@pytest.mark.parametrize("plan", PLANS, indirect=True)
def test_addmm_alpha_beta_and_nan_in_an_ignored_c(plan):
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(70, 90, generator=g), torch.randn(90, 33, generator=g)
    c = torch.randn(70, 33, generator=g)
    with native_only():
        close(torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=-2.0),
              torch.addmm(c, a, b, beta=0.5, alpha=-2.0), torch.float32)
        nan_c = torch.full_like(c, float("nan"))
        close(torch.addmm(nan_c.to(DEV), a.to(DEV), b.to(DEV), beta=0.0), a @ b, torch.float32)
        bias = torch.randn(33, generator=g)  # a broadcast C
        close(torch.addmm(bias.to(DEV), a.to(DEV), b.to(DEV)), torch.addmm(bias, a, b), torch.float32)


@pytest.mark.parametrize("plan", PLANS, indirect=True)
def test_addmm_self_read_in_place_with_and_without_split_k(plan):
    # self is the kernel's addend at its own strides (0 where broadcast); with split K, sum_splits adds
    # beta * self once to the partial products (k = 90: three and two splits in the PLANS that split).
    g = torch.Generator().manual_seed(5)
    m, n, k = 70, 33, 90
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    full = torch.randn(m, n, generator=g)
    selves = [full[0], full[:, :1], full[:1], full[0, 0], full, full.t().contiguous().t()]
    with native_only():
        for self_cpu in selves:
            for beta, alpha in [(1, 1), (0.5, -2.0)]:
                close(torch.addmm(self_cpu.to(DEV), a.to(DEV), b.to(DEV), beta=beta, alpha=alpha),
                      torch.addmm(self_cpu, a, b, beta=beta, alpha=alpha), torch.float32)
        nan_bias = torch.full((n,), float("nan"))
        close(torch.addmm(nan_bias.to(DEV), a.to(DEV), b.to(DEV), beta=0, alpha=1.5), 1.5 * (a @ b), torch.float32)
        inplace = full.to(DEV)
        inplace.addmm_(a.to(DEV), b.to(DEV), beta=0.5, alpha=-2.0)
        close(inplace, torch.addmm(full, a, b, beta=0.5, alpha=-2.0), torch.float32)
        # baddbmm with a self broadcast over the batch, float64 included
        for dtype in (torch.float32, torch.float64):
            ba, bb = torch.randn(3, m, k, generator=g, dtype=dtype), torch.randn(3, k, n, generator=g, dtype=dtype)
            bias = torch.randn(m, n, generator=g, dtype=dtype)
            close(torch.baddbmm(bias.to(DEV), ba.to(DEV), bb.to(DEV), beta=0.5, alpha=2.0),
                  torch.baddbmm(bias, ba, bb, beta=0.5, alpha=2.0), dtype)


@pytest.mark.parametrize("plan", PLANS, indirect=True)
def test_bmm_baddbmm_and_expanded_batches(plan):
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(5, 70, 40, generator=g), torch.randn(5, 40, 90, generator=g)
    with native_only():
        close(torch.bmm(a.to(DEV), b.to(DEV)), torch.bmm(a, b), torch.float32)
        close(a.to(DEV) @ b.to(DEV).transpose(1, 2).contiguous().transpose(1, 2), a @ b, torch.float32)
        w = torch.randn(40, 90, generator=g)  # one matrix for every batch entry (batch stride 0)
        close(torch.bmm(a.to(DEV), w.to(DEV).expand(5, 40, 90)), torch.bmm(a, w.expand(5, 40, 90)), torch.float32)
        c = torch.randn(5, 70, 90, generator=g)
        close(torch.baddbmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=2.0, alpha=0.25),
              torch.baddbmm(c, a, b, beta=2.0, alpha=0.25), torch.float32)
        q, kt = torch.randn(12, 33, 16, generator=g), torch.randn(12, 33, 16, generator=g)
        close(q.to(DEV) @ kt.to(DEV).transpose(1, 2), q @ kt.transpose(1, 2), torch.float32)


def test_the_device_chooses_tiles_that_fill_it_and_splits_long_k():
    cu = PROPS.compute_units
    plan = lambda m, n, k, batch=1, dbl=False: torch_opencl._C._tiled_gemm_plan(0, m, n, k, batch, dbl)  # noqa: E731
    # Enough 128 x 128 tiles for every compute unit: the large tile, K whole.
    big = max(cu, 1) * 128 * 128
    assert plan(big // 128, 128, 256)[:2] == (2, 2) and plan(big // 128, 128, 256)[3] == 1
    # Too few tiles with a long K: K split (each part at least 256 deep, two waves at most); the large
    # tile where that fills the device, else one small tile (no idle rows) split as far.
    rm, rn, bk, splits = plan(128, 128, 4096)
    k_splits = 1 if cu == 1 else min(2 * cu, 4096 // 256)
    if k_splits >= cu:
        assert (rm, rn, splits) == (2, 2, k_splits), (cu, rm, rn, splits)
    else:  # four small tiles, split K until two waves (or 256-deep parts)
        assert (rm, rn, splits) == (1, 1, 1 if 4 >= cu else min(-(-2 * cu // 4), 4096 // 256)), (cu, rm, rn, splits)
    # Too few tiles and a short K: the small tile (more of them), K whole when they fill the device.
    if cu >= 2:
        assert plan(64 * cu, 128, 300)[:2] == (1, 1) and plan(64 * cu, 128, 300)[3] == 1
    # A large tile over half empty (C of 64 rows, as a 64-channel convolution's GEMM) gives way to the small.
    assert plan(64, 512 * max(cu, 1), 576)[:2] == (1, 1) and plan(64, 512 * max(cu, 1), 576)[3] == 1
    assert plan(320, 512 * max(cu, 1), 576)[:2] == (2, 2)  # 5/6 of the large tiles' work is C's
    # Doubles keep the small tile, and split K like the large one.
    assert plan(big // 128, 128, 256, dbl=True)[:2] == (1, 1)
    assert plan(64, 64, 4096, dbl=True)[3] == (1 if cu == 1 else min(2 * cu, 4096 // 256))
    # The split path computes what CPU computes with the plan the device chose.
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 4096, generator=g), torch.randn(4096, 64, generator=g)
    with native_only():
        close(a.to(DEV) @ b.to(DEV), a @ b, torch.float32)


def test_a_plan_that_names_no_kernel_is_refused():
    with pytest.raises(RuntimeError, match="rm, rn in"):
        torch_opencl._C._override_tiled_gemm_plan((3, 1, 16, 1))
    with pytest.raises(RuntimeError, match="bk in"):
        torch_opencl._C._override_tiled_gemm_plan((1, 1, 12, 1))


@pytest.mark.parametrize("plan", PLANS, indirect=True)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_operands_load_and_store_in_the_kernel(plan, dtype):
    """float16/bfloat16 operands are read as they are stored and computed in float (split K's partials
    too), the result rounded once: CPU's float32 product rounded to the dtype, within one rounding."""
    g = torch.Generator().manual_seed(5)
    tol = dict(rtol=8e-3, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-3, atol=2e-3)
    with native_only():
        for m, n, k in [(67, 130, 45), (5, 200, 300), (129, 3, 513)]:
            a = torch.randn(m, k, generator=g).to(dtype)
            b = torch.randn(k, n, generator=g).to(dtype)
            bias = torch.randn(n, generator=g).to(dtype)
            want = torch.addmm(bias.float(), a.float(), b.float(), beta=0.5).to(dtype)
            got = torch.addmm(bias.to(DEV), a.to(DEV), b.to(DEV).t().contiguous().t(), beta=0.5)
            assert got.dtype == dtype
            torch.testing.assert_close(got.cpu(), want, **tol)
            A, B = a[None].expand(3, m, k), torch.randn(3, k, n, generator=g).to(dtype)
            torch.testing.assert_close(torch.bmm(A.to(DEV), B.to(DEV)).cpu(),
                                       torch.bmm(A.float(), B.float()).to(dtype), **tol)
    # It is the kernel's: no float32 copy of an operand is made (the conversion path's copies would be
    # the only float32 tensors of the product).
    torch.opencl.synchronize()
    before = torch.opencl.memory_stats().get("allocation.all.allocated", 0)
    with native_only():
        torch.mm(a.to(DEV), b.to(DEV))
    allocated = torch.opencl.memory_stats().get("allocation.all.allocated", 0) - before
    assert 3 <= allocated <= 3 + (1 if plan[3] > 1 else 0), allocated  # a, b, the result (+ split K's partials)
