"""Dense LU-based linear algebra runs natively on opencl (aten/native/linalg_lu.cpp, kernels_cl/linalg.cl):
linalg.lu_factor(_ex), torch.lu, linalg.lu, lu_unpack, linalg.lu_solve, linalg.solve(_ex), linalg.inv(_ex),
torch.inverse, linalg.det, torch.det, linalg.slogdet, torch.logdet. Values, pivots, infos, gradients, out= forms
and errors against CPU PyTorch (LAPACK), with no CPU fallback (native_only), float32 and float64."""
import re

import pytest
import torch

from _device_helpers import assert_same_as_cpu, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
# LU's rounding differs from LAPACK's blocked order: relative tolerances per dtype, scaled by the matrix size
# where errors grow with it.
TOL = {torch.float32: 2e-4, torch.float64: 1e-10}


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(*shape, dtype=torch.float64, seed=0):
    return torch.randn(shape, generator=gen(seed), dtype=torch.float64).to(dtype)


def well_conditioned(*shape, dtype=torch.float64, seed=0):
    """Random square matrices with a dominant diagonal (solves and inverses well within float32's precision)."""
    n = shape[-1]
    return (randn(*shape, dtype=torch.float64, seed=seed) + n ** 0.5 * torch.eye(n, dtype=torch.float64)).to(dtype)


def on_device(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


def close(got, want, dtype, scale=1.0):
    tol = TOL[dtype] * scale
    assert_same_as_cpu(got, want, rtol=tol, atol=tol)


def same(fn, *args, dtype, scale=1.0):
    """fn on CPU against fn on opencl copies of its tensor arguments, run natively; returns the opencl result."""
    want = fn(*args)
    with native_only():
        got = fn(*[on_device(a) for a in args])
    close(got, want, dtype, scale)
    return got


def raises_like_cpu(fn, *args):
    """fn raises on opencl (natively) the exception CPU raises, with CPU's message."""
    with pytest.raises(Exception) as cpu_error:
        fn(*args)
    message = str(cpu_error.value).splitlines()[0]
    with native_only(), pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[on_device(a) for a in args])


def lu_matches_cpu(A, dtype, scale=1.0):
    """lu_factor_ex of A: LU close to CPU's, pivots and info equal."""
    want = torch.linalg.lu_factor_ex(A)
    with native_only():
        got = torch.linalg.lu_factor_ex(A.to(DEV))
    close(got.LU, want.LU, dtype, scale)
    assert torch.equal(got.pivots.cpu(), want.pivots), (A.shape, got.pivots.cpu(), want.pivots)
    assert torch.equal(got.info.cpu(), want.info)
    assert got.pivots.dtype == torch.int32 and got.info.dtype == torch.int32


# Square sizes around the limits of a work-item per matrix (16 on GPUs, 64 on CPUs), the group sizes (64 items on
# CPU devices, 256 on GPUs) and the solve's blocks of 32 right-hand sides; rectangular ones both ways.
SQUARE = [1, 2, 3, 5, 8, 16, 17, 31, 33, 64, 65, 70]
RECTANGULAR = [(3, 5), (7, 4), (16, 17), (65, 3), (2, 70), (70, 66), (1, 9), (9, 1)]


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factor_pivots_and_info_match_lapack(dtype):
    for i, n in enumerate(SQUARE):
        lu_matches_cpu(randn(n, n, dtype=dtype, seed=i), dtype, scale=n)
    for i, (m, n) in enumerate(RECTANGULAR):
        lu_matches_cpu(randn(m, n, dtype=dtype, seed=100 + i), dtype, scale=max(m, n))
    # Batches (one work-group per matrix), non-contiguous inputs: transposed, sliced, expanded.
    lu_matches_cpu(randn(4, 6, 6, dtype=dtype, seed=1), dtype)
    lu_matches_cpu(randn(2, 3, 9, 7, dtype=dtype, seed=2), dtype, scale=9)
    lu_matches_cpu(randn(5, 20, 20, dtype=dtype, seed=3).mT, dtype, scale=20)
    lu_matches_cpu(randn(3, 40, 22, dtype=dtype, seed=4)[:, ::2, 1:], dtype, scale=20)
    lu_matches_cpu(randn(1, 7, 7, dtype=dtype, seed=5).expand(3, 7, 7), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factor_ties_singular_and_empty(dtype):
    # Ties in |value|: LAPACK's i?amax takes the first row; exact zeros below a pivot, a zero column, a zero
    # matrix, rank-deficient ones: info is the first zero pivot (1-based), as LAPACK's.
    cases = [
        torch.tensor([[1.0, 2.0], [-1.0, 3.0]]),
        torch.tensor([[2.0, 1.0, 1.0], [-2.0, 5.0, 1.0], [2.0, 0.0, 4.0]]),
        torch.tensor([[0.0, 1.0], [0.0, 2.0]]),
        torch.tensor([[1.0, 2.0], [2.0, 4.0]]),
        torch.zeros(4, 4),
        torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
        torch.ones(3, 5),
        torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 2.0], [3.0, 1.0, 1.0]]),
    ]
    for A in cases:
        lu_matches_cpu(A.to(dtype), dtype)
    # A batch mixing singular and regular matrices: info per matrix.
    lu_matches_cpu(torch.stack([torch.zeros(3, 3), torch.eye(3), torch.ones(3, 3)]).to(dtype), dtype)
    # Near-singular: a pivot of 1e-30 (float64) or 1e-20 (float32) is not zero.
    tiny = 1e-30 if dtype == torch.float64 else 1e-20
    lu_matches_cpu(torch.tensor([[tiny, 1.0], [0.0, tiny]], dtype=dtype), dtype)
    # Empty batches and 0 x 0 matrices: info is zeros of the batch's shape.
    for shape in [(0, 0), (3, 0, 0), (0, 4, 4), (2, 3, 0), (2, 0, 3)]:
        want = torch.linalg.lu_factor_ex(torch.zeros(shape, dtype=dtype))
        with native_only():
            got = torch.linalg.lu_factor_ex(torch.zeros(shape, dtype=dtype, device=DEV))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
        assert torch.equal(got.info.cpu(), want.info)


def test_lu_factor_nan_and_inf():
    # NaN and inf inputs finish (no hang) with NaN where LAPACK's are, and the same pivots.
    for A in [torch.tensor([[float("nan"), 1.0], [2.0, 3.0]]), torch.tensor([[1.0, 2.0], [float("nan"), 3.0]]),
              torch.tensor([[1.0, float("inf")], [2.0, 3.0]]), torch.full((5, 5), float("nan"))]:
        want = torch.linalg.lu_factor_ex(A)
        with native_only():
            got = torch.linalg.lu_factor_ex(A.to(DEV))
        assert torch.equal(got.LU.cpu().isnan(), want.LU.isnan()), (A, got.LU, want.LU)
        assert torch.equal(got.pivots.cpu(), want.pivots)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factor_errors_out_and_aliases(dtype):
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=dtype)
    raises_like_cpu(lambda A: torch.linalg.lu_factor(A), singular)
    raises_like_cpu(lambda A: torch.linalg.lu_factor(A), singular.expand(3, 2, 2))
    raises_like_cpu(lambda A: torch.linalg.lu_factor_ex(A, check_errors=True), singular)
    raises_like_cpu(lambda A: torch.linalg.lu_factor(A), torch.ones(3, dtype=dtype))
    A = randn(3, 5, 5, dtype=dtype, seed=7)
    want = torch.linalg.lu_factor(A)
    with native_only():
        # out=: the right layout is written in place; others (row-major LU, wrong sizes) are resized or copied into.
        LU, piv = torch.empty(0, device=DEV, dtype=dtype), torch.empty(0, device=DEV, dtype=torch.int32)
        torch.linalg.lu_factor(A.to(DEV), out=(LU, piv))
        close((LU, piv), want, dtype)
        LU, piv = torch.empty(3, 5, 5, device=DEV, dtype=dtype), torch.empty(3, 5, device=DEV, dtype=torch.int32)
        info = torch.empty(3, device=DEV, dtype=torch.int32)
        torch.linalg.lu_factor_ex(A.to(DEV), out=(LU, piv, info))
        close((LU, piv), want, dtype)
        assert torch.equal(info.cpu(), torch.zeros(3, dtype=torch.int32))
        # torch.lu (deprecated) and its get_infos.
        got = torch.lu(A.to(DEV), get_infos=True)
        close(got[:2], want, dtype)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.linalg.lu_factor(A.to(DEV), out=(torch.empty(0, device=DEV, dtype=dtype),
                                                torch.empty(0, device=DEV, dtype=torch.int64)))
    # CPU's LAPACK has no integer or half LU; neither has this device (NotImplementedError both).
    for bad in [torch.ones(3, 3, dtype=torch.int32), torch.ones(3, 3, dtype=torch.float16)]:
        with pytest.raises(NotImplementedError):
            torch.linalg.lu_factor(bad)
        with native_only(), pytest.raises(NotImplementedError):
            torch.linalg.lu_factor(bad.to(DEV))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factor_without_pivoting(dtype):
    # CPU's LAPACK refuses pivot=False; here (as on CUDA) the rows stay and the pivots are 1..k.
    for n in (6, 70, 130):  # a work-item per matrix, a work-group per matrix, blocked
        A = well_conditioned(n, n, dtype=dtype, seed=3)
        with native_only():
            LU, piv, info = torch.linalg.lu_factor_ex(A.to(DEV), pivot=False)
            P, L, U = torch.linalg.lu(A.to(DEV), pivot=False)
        assert torch.equal(piv.cpu(), torch.arange(1, n + 1, dtype=torch.int32)) and info.item() == 0
        assert P.numel() == 0
        tol = TOL[dtype] * n
        torch.testing.assert_close(L.cpu() @ U.cpu(), A, rtol=tol, atol=tol)
        torch.testing.assert_close(torch.tril(LU.cpu(), -1) + torch.eye(n, dtype=dtype), L.cpu(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_and_lu_unpack(dtype):
    for shape in [(5, 5), (2, 7, 4), (3, 4, 9), (0, 3, 3)]:
        A = randn(*shape, dtype=dtype, seed=11)
        same(lambda A: torch.linalg.lu(A), A, dtype=dtype, scale=10)
        LU, piv = torch.linalg.lu_factor(A)
        same(lambda LU, piv: torch.lu_unpack(LU, piv), LU, piv, dtype=dtype)
        same(lambda LU, piv: torch.lu_unpack(LU, piv, unpack_data=False), LU, piv, dtype=dtype)
    with native_only():
        P, L, U = (torch.empty(0, device=DEV, dtype=dtype) for _ in range(3))
        torch.linalg.lu(A.to(DEV), out=(P, L, U))
    LU, piv = torch.linalg.lu_factor(randn(3, 3, dtype=dtype))
    raises_like_cpu(lambda LU, piv: torch.lu_unpack(LU, piv), LU, piv + 5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_solve(dtype):
    # CPU's LU and pivots on both sides, so only the solve is compared: left/right, adjoint, several right-hand
    # sides (more than the solve's block of 32), LU's batch broadcast over B's and B's over LU's.
    for n, k, lu_batch, b_batch in [(1, 1, (), ()), (5, 3, (), ()), (33, 40, (2,), (2,)), (70, 1, (), ()),
                                    (8, 2, (3,), (2, 3)), (6, 65, (2, 1), (2, 4)), (4, 3, (3,), ())]:
        A = well_conditioned(*lu_batch, n, n, dtype=dtype, seed=n)
        LU, piv = torch.linalg.lu_factor(A)
        B = randn(*b_batch, n, k, dtype=dtype, seed=k)
        for adjoint in (False, True):
            same(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B, adjoint=adjoint), LU, piv, B, dtype=dtype,
                 scale=n)
            same(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B.mT, left=False, adjoint=adjoint), LU, piv, B,
                 dtype=dtype, scale=n)
    # torch.lu_solve (deprecated), a non-contiguous B, out= (also in another layout).
    A = well_conditioned(3, 6, 6, dtype=dtype)
    LU, piv = torch.linalg.lu_factor(A)
    B = randn(3, 4, 6, dtype=dtype).mT
    same(lambda B, LU, piv: torch.lu_solve(B, LU, piv), B, LU, piv, dtype=dtype)
    want = torch.linalg.lu_solve(LU, piv, B)
    with native_only():
        out = torch.empty(3, 6, 4, dtype=dtype, device=DEV)
        torch.linalg.lu_solve(LU.to(DEV), piv.to(DEV), B.to(DEV), out=out)
    close(out, want, dtype)
    raises_like_cpu(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B), LU, piv.long(), B)
    raises_like_cpu(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B), LU, piv, B[:, :5])
    # Pivots outside [1, n] (CPU's LAPACK reads out of bounds): no access outside the matrix, a finite answer.
    with native_only():
        x = torch.linalg.lu_solve(LU.to(DEV), (piv + 100).to(DEV), B.to(DEV))
    assert x.cpu().isfinite().all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_inv_det_slogdet(dtype):
    for n in [1, 2, 3, 8, 33, 65]:
        A = well_conditioned(n, n, dtype=dtype, seed=n)
        B = randn(n, 3, dtype=dtype, seed=1)
        same(torch.linalg.solve, A, B, dtype=dtype, scale=n)
        same(torch.linalg.inv, A, dtype=dtype, scale=n)
        same(torch.linalg.det, A, dtype=dtype, scale=n)
        same(torch.linalg.slogdet, A, dtype=dtype, scale=n)
    # Batched (with B broadcast), vector right-hand sides, left=False, non-contiguous and transposed inputs.
    A = well_conditioned(2, 3, 7, 7, dtype=dtype, seed=4)
    same(torch.linalg.solve, A, randn(3, 7, 2, dtype=dtype), dtype=dtype)
    same(torch.linalg.solve, A, randn(7, dtype=dtype), dtype=dtype)
    same(lambda A, B: torch.linalg.solve(A, B, left=False), A, randn(2, 3, 5, 7, dtype=dtype), dtype=dtype)
    same(lambda A: torch.linalg.inv(A.mT), A, dtype=dtype)
    same(lambda A: torch.linalg.det(A[..., ::2, ::2]), A, dtype=dtype)
    same(lambda A: torch.linalg.solve_ex(A, A[..., :2].mT.contiguous().mT), A, dtype=dtype)
    same(lambda A: torch.linalg.inv_ex(A), A, dtype=dtype)
    # The aliases: torch.inverse, torch.det, torch.slogdet, torch.logdet (NaN for a negative determinant).
    same(torch.inverse, A, dtype=dtype)
    same(torch.det, A, dtype=dtype)
    same(torch.slogdet, A, dtype=dtype)
    same(torch.logdet, A, dtype=dtype)
    same(torch.logdet, -well_conditioned(3, 3, dtype=dtype), dtype=dtype)
    # Empty batches and 0 x 0 matrices (det 1, inverse empty).
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        E = torch.zeros(shape, dtype=dtype)
        same(torch.linalg.det, E, dtype=dtype)
        same(torch.linalg.inv, E, dtype=dtype)
        same(torch.linalg.slogdet, E, dtype=dtype)
        same(torch.linalg.solve, E, torch.zeros(*shape[:-1], 2, dtype=dtype), dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_singular_matrices(dtype):
    singular = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=dtype)
    # det 0 exactly, slogdet (0, -inf) as CPU's; rank one with equal entries (the multiplier is exactly 1 only when
    # divided: a reciprocal's rounding leaves a nonzero pivot where LAPACK finds 0).
    same(torch.linalg.det, singular, dtype=dtype)
    for v in (1.5409960746765137, 0.1, 3.0, -7.7):
        same(torch.linalg.slogdet, torch.full((2, 2), v, dtype=dtype), dtype=dtype)
        same(torch.linalg.det, torch.full((3, 3), v, dtype=dtype), dtype=dtype)
    same(torch.linalg.slogdet, singular, dtype=dtype)
    same(torch.linalg.det, torch.zeros(2, 4, 4, dtype=dtype), dtype=dtype)
    # inv and solve raise CPU's errors (torch.linalg.LinAlgError), batched or not.
    raises_like_cpu(torch.linalg.inv, singular)
    raises_like_cpu(torch.linalg.inv, torch.stack([torch.eye(3, dtype=dtype), singular]))
    raises_like_cpu(torch.inverse, singular)
    raises_like_cpu(lambda A: torch.linalg.inv_ex(A, check_errors=True), singular)
    raises_like_cpu(torch.linalg.solve, singular, torch.ones(3, 1, dtype=dtype))
    raises_like_cpu(torch.linalg.solve, torch.stack([torch.eye(3, dtype=dtype), singular]),
                    torch.ones(3, 1, dtype=dtype))
    with pytest.raises(torch.linalg.LinAlgError,
                       match=re.escape("linalg.inv: The diagonal element 2 is zero, the inversion could not be "
                                       "completed because the input matrix is singular.")):
        with native_only():
            torch.linalg.inv(torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=dtype, device=DEV))
    # The _ex forms report info and do not raise.
    both = torch.stack([torch.eye(3, dtype=dtype), singular])
    with native_only():
        _, info = torch.linalg.inv_ex(both.to(DEV))
    assert torch.equal(info.cpu(), torch.linalg.inv_ex(both).info) and info.cpu().tolist() == [0, 3]
    # Near-singular but not singular: a solution, close to CPU's in float64.
    if dtype == torch.float64:
        near = singular.clone()
        near[1, 2] += 1e-9
        same(torch.linalg.inv, near, dtype=dtype, scale=1e9)
        same(torch.linalg.det, near, dtype=dtype, scale=1e3)


def test_nan_inputs_give_nan():
    A = torch.tensor([[1.0, float("nan")], [3.0, 4.0]])
    for fn in (torch.linalg.det, torch.linalg.inv_ex, lambda A: torch.linalg.solve_ex(A, A.new_ones(2, 1))):
        want = fn(A)
        with native_only():
            got = fn(A.to(DEV))
        want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
        assert torch.equal(got.cpu().isnan(), want.isnan())


@pytest.mark.parametrize("dtype", FLOATS)
def test_out_variants(dtype):
    A = well_conditioned(2, 5, 5, dtype=dtype, seed=9)
    B = randn(2, 5, 3, dtype=dtype)
    cases = [
        (lambda A, out: torch.linalg.inv(A, out=out), (2, 5, 5)),
        (lambda A, out: torch.linalg.solve(A, B.to(A.device), out=out), (2, 5, 3)),
        (lambda A, out: torch.linalg.det(A, out=out), (2,)),
        (lambda A, out: torch.inverse(A, out=out), (2, 5, 5)),
    ]
    for fn, shape in cases:
        want = fn(A, torch.empty(0, dtype=dtype))
        with native_only():
            for out in [torch.empty(0, dtype=dtype, device=DEV), torch.empty(shape, dtype=dtype, device=DEV)]:
                fn(A.to(DEV), out)
                close(out, want, dtype)
    want = torch.linalg.slogdet(A)
    with native_only():
        sign, logabsdet = torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=dtype, device=DEV)
        torch.linalg.slogdet(A.to(DEV), out=(sign, logabsdet))
        inverse, info = torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int32, device=DEV)
        torch.linalg.inv_ex(A.to(DEV), out=(inverse, info))
    close((sign, logabsdet), want, dtype)
    close(inverse, torch.linalg.inv(A), dtype)
    with pytest.raises(RuntimeError):
        torch.linalg.inv(A.to(DEV), out=torch.empty(0, dtype=torch.int32, device=DEV))


def test_argument_errors():
    sq, rect = torch.randn(3, 3), torch.randn(3, 4)
    raises_like_cpu(torch.linalg.inv, rect)
    raises_like_cpu(torch.linalg.det, rect)
    raises_like_cpu(torch.linalg.slogdet, rect)
    raises_like_cpu(torch.linalg.solve, rect, sq)
    raises_like_cpu(torch.linalg.solve, sq, torch.randn(2, 1))
    raises_like_cpu(torch.linalg.solve, sq, torch.randn(3, 1, dtype=torch.float64))
    raises_like_cpu(torch.linalg.inv, torch.ones(3, 3, dtype=torch.int64))
    raises_like_cpu(torch.linalg.det, torch.ones(3, 3, dtype=torch.int32))
    raises_like_cpu(torch.linalg.solve, torch.ones(3, 3, dtype=torch.int32), torch.ones(3, 1, dtype=torch.int32))
    raises_like_cpu(torch.linalg.inv, torch.randn(3))
    # Operands on two devices: CPU's (and CUDA's) message.
    with native_only(), pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.linalg.solve(sq.to(DEV), torch.randn(3, 1))
    with native_only(), pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.linalg.solve_triangular(sq.to(DEV), torch.randn(3, 1), upper=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gradients_match_cpu(dtype):
    # ATen's derivative formulas (lu_solve, matmul, ...) run natively too.
    A = well_conditioned(2, 4, 4, dtype=dtype, seed=5)
    B = randn(2, 4, 3, dtype=dtype, seed=6)
    fns = [
        lambda A, B: torch.linalg.solve(A, B),
        lambda A, B: torch.linalg.solve(A, B, left=False if A.shape[-1] == B.shape[-1] else True),
        lambda A, B: torch.linalg.inv(A) @ B,
        lambda A, B: torch.linalg.det(A)[..., None, None] * B,
        lambda A, B: torch.linalg.slogdet(A).logabsdet[..., None, None] * B,
        lambda A, B: torch.linalg.lu_solve(*torch.linalg.lu_factor(A), B),
    ]
    for fn in fns:
        grads = []
        for device in ("cpu", DEV):
            a, b = A.to(device).requires_grad_(), B.to(device).requires_grad_()
            with native_only() if device == DEV else torch.enable_grad():
                out = fn(a, b)
                g = torch.ones_like(out)
                grads.append(torch.autograd.grad(out, (a, b), g))
        close(grads[1], grads[0], dtype, scale=10)


def test_complex_runs_on_the_fallback():
    A = torch.randn(3, 3, dtype=torch.complex64) + 3 * torch.eye(3)
    got = torch.linalg.inv(A.to(DEV))
    torch.testing.assert_close(got.cpu(), torch.linalg.inv(A))


def test_larger_matrices():
    # From 128 rows and columns LU runs blocked (panels of 64 columns, their interchanges, a triangular solve and a
    # matrix product per panel); past a group's width in every loop (300 > 256 items). float64 against CPU.
    A = well_conditioned(300, 300, seed=3)
    lu_matches_cpu(A, torch.float64, scale=300)
    same(torch.linalg.solve, A, randn(300, 2), dtype=torch.float64, scale=300)
    for shape in [(2, 150, 130), (130, 200), (200, 129)]:
        lu_matches_cpu(randn(*shape, seed=sum(shape)), torch.float64, scale=200)
    lu_matches_cpu(randn(130, 130, seed=4).float(), torch.float32, scale=130)
    same(torch.linalg.det, well_conditioned(2, 140, 140, seed=5) / 10, dtype=torch.float64, scale=140)
    # A zero pivot in the third panel: info counts from the whole matrix.
    S = randn(140, 140, seed=6)
    S[130:] = 0
    lu_matches_cpu(S, torch.float64, scale=140)
    with native_only():
        assert torch.linalg.lu_factor_ex(S.to(DEV)).info.item() == 131


def triangle(n, upper, dtype, seed=0, batch=()):
    """A random triangular matrix with a diagonal away from zero (well conditioned)."""
    A = randn(*batch, n, n, seed=seed) * 0.5
    A = A.triu() if upper else A.tril()
    A.diagonal(dim1=-2, dim2=-1).copy_(2 + randn(*batch, n, seed=seed + 1).abs())
    return A.to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_triangular(dtype):
    for n, k, batch in [(1, 1, ()), (5, 3, ()), (33, 40, (2,)), (70, 2, ()), (8, 65, (2, 3))]:
        for upper in (False, True):
            A = triangle(n, upper, dtype, seed=n, batch=batch)
            B = randn(*batch, n, k, dtype=dtype, seed=k)
            for unit in (False, True):
                same(lambda A, B: torch.linalg.solve_triangular(A, B, upper=upper, unitriangular=unit), A, B,
                     dtype=dtype, scale=n)
                same(lambda A, B: torch.linalg.solve_triangular(A, B.mT, upper=upper, left=False,
                                                                unitriangular=unit), A, B, dtype=dtype, scale=n)
            # Row-major and transposed A, B broadcast over A's batch, torch.triangular_solve (and its transpose=).
            same(lambda A, B: torch.linalg.solve_triangular(A.mT, B, upper=not upper), A, B, dtype=dtype, scale=n)
            same(lambda A, B: torch.linalg.solve_triangular(A, B[..., :1, :, :] if B.dim() > 3 else B, upper=upper),
                 A, B, dtype=dtype, scale=n)
            for transpose in (False, True):
                same(lambda B, A: torch.triangular_solve(B, A, upper=upper, transpose=transpose), B, A, dtype=dtype,
                     scale=n)
    A = triangle(4, True, dtype)
    B = randn(4, 2, dtype=dtype)
    want = torch.linalg.solve_triangular(A, B, upper=True)
    with native_only():
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch.linalg.solve_triangular(A.to(DEV), B.to(DEV), upper=True, out=out)
        X, M = torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=dtype, device=DEV)
        torch.triangular_solve(B.to(DEV), A.to(DEV), out=(X, M))
    close(out, want, dtype)
    close((X, M), torch.triangular_solve(B, A), dtype)
    same(lambda A, B: torch.linalg.solve_triangular(A, B, upper=True), torch.zeros(2, 0, 0, dtype=dtype),
         torch.zeros(2, 0, 3, dtype=dtype), dtype=dtype)
    raises_like_cpu(lambda A, B: torch.linalg.solve_triangular(A, B, upper=True), A, B[:3])
    raises_like_cpu(lambda A, B: torch.linalg.solve_triangular(A, B, upper=True), A[:, :3], B)
    # Gradients (ATen's formula: solve_triangular again, matmul, tril/triu).
    grads = []
    for device in ("cpu", DEV):
        a, b = A.to(device).requires_grad_(), B.to(device).requires_grad_()
        with native_only() if device == DEV else torch.enable_grad():
            out = torch.linalg.solve_triangular(a, b, upper=True)
            grads.append(torch.autograd.grad(out.sum(), (a, b)))
    close(grads[1], grads[0], dtype, scale=10)


def spd(n, dtype, seed=0, batch=()):
    """A random symmetric positive definite matrix."""
    X = randn(*batch, n, n, seed=seed)
    return (X @ X.mT / n + torch.eye(n, dtype=torch.float64)).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cholesky(dtype):
    for n, batch in [(1, ()), (3, ()), (17, (2,)), (65, ()), (6, (2, 3))]:
        A = spd(n, dtype, seed=n, batch=batch)
        for upper in (False, True):
            same(lambda A: torch.linalg.cholesky(A, upper=upper), A, dtype=dtype, scale=n)
            same(lambda A: torch.linalg.cholesky_ex(A, upper=upper), A, dtype=dtype, scale=n)
            L = torch.linalg.cholesky(A, upper=upper)
            B = randn(*batch, n, 3, dtype=dtype, seed=1)
            same(lambda B, L: torch.cholesky_solve(B, L, upper=upper), B, L, dtype=dtype, scale=n)
            same(lambda L: torch.cholesky_inverse(L, upper=upper), L, dtype=dtype, scale=n)
    # Only the triangle named is read: garbage in the other one changes nothing.
    A = spd(5, dtype)
    same(lambda A: torch.linalg.cholesky(A + torch.ones_like(A).triu(1) * 7), A, dtype=dtype)
    same(lambda A: torch.linalg.cholesky(A + torch.ones_like(A).tril(-1) * 7, upper=True), A, dtype=dtype)
    same(lambda A: torch.linalg.cholesky(A.mT), A, dtype=dtype)
    # Not positive definite: info is the order of the failing minor; cholesky raises CPU's error.
    bad = torch.stack([spd(4, dtype), -torch.eye(4, dtype=dtype), torch.diag(torch.tensor([1.0, 2.0, -1.0, 3.0]))
                       .to(dtype)])
    want = torch.linalg.cholesky_ex(bad).info
    with native_only():
        got = torch.linalg.cholesky_ex(bad.to(DEV)).info
    assert torch.equal(got.cpu(), want), (got, want)
    # Semidefinite: whether the last pivot is 0 or an ulp decides info (rounding as CPU's on these; not on every
    # value: MKL's order is its own).
    for v in (0.1, 3.0, 2.2, 0.7, 5.3):
        semi = torch.full((2, 2), v, dtype=dtype)
        want = torch.linalg.cholesky_ex(semi).info
        with native_only():
            assert torch.equal(torch.linalg.cholesky_ex(semi.to(DEV)).info.cpu(), want), (v, want)
    raises_like_cpu(torch.linalg.cholesky, bad)
    raises_like_cpu(torch.linalg.cholesky, bad[2])
    raises_like_cpu(torch.linalg.cholesky, torch.randn(3, 4).to(dtype))
    with native_only():
        L, info = torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int32, device=DEV)
        torch.linalg.cholesky_ex(A.to(DEV), out=(L, info))
    close(L, torch.linalg.cholesky(A), dtype)
    same(torch.linalg.cholesky, torch.zeros(2, 0, 0, dtype=dtype), dtype=dtype)
    # Gradients of cholesky and cholesky_solve against CPU's.
    B = randn(5, 2, dtype=dtype)
    grads = []
    for device in ("cpu", DEV):
        a, b = A.to(device).requires_grad_(), B.to(device).requires_grad_()
        with native_only() if device == DEV else torch.enable_grad():
            L = torch.linalg.cholesky(a)
            out = torch.cholesky_solve(b, L).sum() + L.sum()
            grads.append(torch.autograd.grad(out, (a, b)))
    close(grads[1], grads[0], dtype, scale=10)


def test_blocked_solves():
    # From 128 rows the solves run blocked (64-row blocks by the unblocked kernels, the rest in GEMMs): lu_solve
    # (both transpositions, LU broadcast over B), solve, inv, solve_triangular (every side, triangle, transpose and
    # unit diagonal), cholesky_solve. float64 against CPU.
    dtype = torch.float64
    A = well_conditioned(2, 150, 150, seed=8)
    LU, piv = torch.linalg.lu_factor(A)
    B = randn(3, 2, 150, 5, seed=9)
    for adjoint in (False, True):
        same(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B, adjoint=adjoint), LU, piv, B, dtype=dtype, scale=150)
        same(lambda LU, piv, B: torch.linalg.lu_solve(LU, piv, B.mT, left=False, adjoint=adjoint), LU, piv, B,
             dtype=dtype, scale=150)
    same(torch.linalg.solve, A, B[0], dtype=dtype, scale=150)
    same(torch.linalg.inv, A[0], dtype=dtype, scale=150)
    for upper in (False, True):
        T = triangle(140, upper, dtype, seed=10, batch=(2,))
        R = randn(2, 140, 3, seed=11)
        for unit in (False, True):
            same(lambda T, R: torch.linalg.solve_triangular(T, R, upper=upper, unitriangular=unit), T, R,
                 dtype=dtype, scale=140)
            same(lambda T, R: torch.linalg.solve_triangular(T, R.mT, upper=upper, left=False, unitriangular=unit), T,
                 R, dtype=dtype, scale=140)
        same(lambda R, T: torch.triangular_solve(R, T, upper=upper, transpose=True), R, T, dtype=dtype, scale=140)
    S = spd(140, dtype, seed=12)
    L = torch.linalg.cholesky(S)
    same(lambda R, L: torch.cholesky_solve(R, L), randn(140, 4, seed=13), L, dtype=dtype, scale=140)
