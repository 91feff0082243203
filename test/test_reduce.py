"""Reductions and scans (aten/native/reduce.cpp, aten/native/reduce_ops.cpp, aten/native/scan.cpp) against CPU PyTorch.

Every comparison runs the opencl side under fallback mode "error", so an operator that
silently went to the CPU fallback fails the test. Each (input, accumulate, output) dtype
signature compiles one program, so the dtype lists are kept to what exercises distinct paths.
"""
import math
import re

import pytest
import torch

import torch_opencl  # noqa: F401

from hypothesis import given, settings, strategies as st

from _device_helpers import assert_same_as_cpu, compare_with_cpu, native_only

DEV = torch.device("opencl")
F32, F64, I32, I64, BOOL = torch.float32, torch.float64, torch.int32, torch.int64, torch.bool


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == BOOL:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=F64).to(dtype)
    return torch.randint(-9, 10, shape, generator=g, dtype=dtype)


# ---- every operator over dim sets, keepdim and dtypes ----

DIMS = [None, 0, -1, (0, 2), (-1, 1), (0, 1, 2)]

FLOAT_OPS = {
    "sum": lambda x, d, k: x.sum() if d is None else x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean() if d is None else x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax() if d is None else x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin() if d is None else x.amin(d, keepdim=k),
    "var": lambda x, d, k: torch.var(x, d, keepdim=k),
    "std": lambda x, d, k: torch.std(x, d, correction=0, keepdim=k),
    "var_mean": lambda x, d, k: torch.var_mean(x, d, correction=2, keepdim=k),
    "std_mean": lambda x, d, k: torch.std_mean(x, d, keepdim=k),
    "norm2": lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda x, d, k: torch.linalg.vector_norm(x, 1, d, keepdim=k),
    "norm0": lambda x, d, k: torch.linalg.vector_norm(x, 0, d, keepdim=k),
    "norm_inf": lambda x, d, k: torch.linalg.vector_norm(x, math.inf, d, keepdim=k),
    "norm_neginf": lambda x, d, k: torch.linalg.vector_norm(x, -math.inf, d, keepdim=k),
    "norm_p3": lambda x, d, k: torch.linalg.vector_norm(x, 3.5, d, keepdim=k),
    "norm_m1": lambda x, d, k: torch.linalg.vector_norm(x, -1, d, keepdim=k),
    "logsumexp": lambda x, d, k: torch.logsumexp(x, d if d is not None else (0, 1, 2), keepdim=k),
    "any": lambda x, d, k: (x > 1).any() if d is None else (x > 1).any(d, keepdim=k),
    "all": lambda x, d, k: (x > -2).all() if d is None else (x > -2).all(d, keepdim=k),
}

INT_OPS = {
    "sum": FLOAT_OPS["sum"],
    "amax": FLOAT_OPS["amax"],
    "amin": FLOAT_OPS["amin"],
    "any": lambda x, d, k: x.any() if d is None else x.any(d, keepdim=k),
    "all": lambda x, d, k: x.all() if d is None else x.all(d, keepdim=k),
}


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_float_ops(name, dtype):
    x = make((5, 6, 7), dtype)
    # float64 shares every code path with float32 but the dtype: fewer dim sets.
    for dims in DIMS if dtype == F32 else [None, (-1, 1)]:
        for keepdim in (False, True):
            compare_with_cpu(lambda t: FLOAT_OPS[name](t, dims, keepdim), x)


@pytest.mark.parametrize("dtype", [I64, I32, BOOL])
@pytest.mark.parametrize("name", sorted(INT_OPS))
def test_int_ops(name, dtype):
    x = make((4, 5, 6), dtype)
    for dims in DIMS:
        compare_with_cpu(lambda t: INT_OPS[name](t, dims, True), x)


@pytest.mark.parametrize("dtype", [F32, F64, I64, I32, BOOL])
def test_max_min_dim_and_arg(dtype):
    x = make((5, 6, 7), dtype)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            compare_with_cpu(lambda t: t.max(dim, keepdim=keepdim), x)
            compare_with_cpu(lambda t: t.min(dim, keepdim=keepdim), x)
            if dtype != BOOL:
                compare_with_cpu(lambda t: t.argmax(dim, keepdim=keepdim), x)
                compare_with_cpu(lambda t: t.argmin(dim, keepdim=keepdim), x)
    compare_with_cpu(lambda t: (t.max(), t.min()), x)
    if dtype != BOOL:
        compare_with_cpu(lambda t: (t.argmax(), t.argmin(), t.argmax(keepdim=True)), x)
        compare_with_cpu(lambda t: (t.transpose(0, 2).argmax(), t[:, ::2].argmin()), x)


@pytest.mark.parametrize("dtype", [F32, I64, BOOL])
def test_prod(dtype):
    x = make((4, 5, 3), dtype) if dtype != F32 else torch.rand(4, 5, 3) + 0.5
    compare_with_cpu(lambda t: (t.prod(), t.prod(1), t.prod(-1, keepdim=True), t.prod(0, dtype=F64)), x)


def test_sum_dtypes_and_accumulation():
    compare_with_cpu(lambda t: (t.sum(), t.sum(1, dtype=F64), t.sum(dtype=I32)), make((6, 7), I32))
    compare_with_cpu(lambda t: (t.sum(), t.sum(0)), make((6, 7), BOOL))
    compare_with_cpu(lambda t: (t.sum(1, dtype=F64), t.mean(0, dtype=F64)), make((6, 70), F32), rtol=1e-12, atol=1e-12)
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.rand(300, 40).to(dtype)
        compare_with_cpu(lambda t: (t.sum(), t.sum(0), t.mean(1), t.amax(1)), x)


# ---- layouts, sizes, edge cases ----

def test_non_contiguous():
    x = make((8, 9, 10), F32)
    views = [
        lambda t: t.transpose(0, 2),
        lambda t: t[:, ::2, 1::3],
        lambda t: t.permute(1, 2, 0)[2:],
        lambda t: t[1].t(),
        lambda t: t.expand(3, 8, 9, 10),
    ]
    for view in views:
        for dims in (None, 0, -1, (0, 1), (0, -1)):
            compare_with_cpu(lambda t: view(t).sum(dims) if dims is not None else view(t).sum(), x)
            compare_with_cpu(lambda t: view(t).amax(dims if dims is not None else ()), x)
            compare_with_cpu(lambda t: torch.var(view(t), dims), x)
        compare_with_cpu(lambda t: (view(t).argmax(), view(t).argmax(-1), view(t).max(0)), x)
        compare_with_cpu(lambda t: (view(t).cumsum(0), view(t).cumprod(-1)), x)


def test_zero_dim():
    x = torch.tensor(2.5)
    compare_with_cpu(lambda t: (t.sum(), t.sum(0), t.mean(), t.amax(), t.max(), t.argmax(), t.argmax(0), t.prod(),
                       torch.linalg.vector_norm(t), t.cumsum(0), t.max(0), t.logsumexp(0)), x)
    compare_with_cpu(lambda t: (t.sum(), t.any(), t.all()), torch.tensor(3))


def test_empty():
    x = torch.empty(0, 4)
    compare_with_cpu(lambda t: (t.sum(), t.sum(0), t.prod(), t.prod(0), t.mean(), t.mean(0), t.any(), t.all(0),
                       torch.linalg.vector_norm(t), t.logsumexp(0), t.sum(1), t.amax(1), t.argmax(1),
                       t.cumsum(0), t.var(0)), x)
    for fn in (lambda t: t.amax(), lambda t: t.amax(0), lambda t: t.max(), lambda t: t.max(0), lambda t: t.argmax(),
               lambda t: t.argmin(0), lambda t: t.min(), lambda t: torch.linalg.vector_norm(t, math.inf)):
        with pytest.raises(Exception) as want:
            fn(x)
        with native_only(), pytest.raises(type(want.value)):
            fn(x.to(DEV))


def test_large():
    x = torch.rand(1_000_000, dtype=F32)
    want = x.sum()
    with native_only():
        got = x.to(DEV).sum().cpu()
    assert abs(got.item() - want.item()) <= 1e-5 * abs(want.item())
    y = torch.randn(1000, 1000)
    compare_with_cpu(lambda t: (t.sum(0), t.sum(1), t.mean(), t.amax(0), t.argmax(), t.norm(), t.var()), y, rtol=1e-4,
            atol=1e-4)
    compare_with_cpu(lambda t: t.cumsum(0), torch.rand(100_000), rtol=1e-5, atol=1e-3)
    z = torch.rand(3, 300_000)
    compare_with_cpu(lambda t: (t.sum(1), t.max(1), t.std(1), t.sum(0)), z, rtol=1e-4, atol=1e-4)


# Shapes that reach each launch of aten/native/reduce.cpp: groups (with chunks and runs over several
# reduced dims), a work-item per contiguous row (many outputs), and reduce_outer for strided
# reductions (one chunk, several chunks with the second pass, reduced dims that do not merge).
PATH_CASES = {
    "group_chunks": ((300_001,), None),
    "group_rows": ((3, 5000), 1),
    "group_runs": ((50, 66, 3), (0, 2)),
    "serial_rows": ((600, 37), 1),
    "outer_chunks": ((30_000, 70), 0),  # chunks from 2**21 elements (below, one pass)
    "outer_one_chunk": ((70, 600), 0),
    "outer_3d": ((40, 9, 130), (0, 1)),
    "group_strided": ((400, 5), 0),
    "group_runs_130": ((9, 130, 5), (0, 2)),
}


@pytest.mark.parametrize("case", sorted(PATH_CASES))
def test_launch_paths(case):
    shape, dims = PATH_CASES[case]
    x = make(shape, F32, seed=3)
    x.view(-1)[x.numel() // 3] = float("nan") if case != "group_chunks" else 0.5
    fns = lambda t: (t.sum(dims), t.mean(dims), torch.var(t, dims), t.amax(dims), t.amin(dims),
                     torch.linalg.vector_norm(t, 2, dims), (t > 1).any(dims) if dims is not None else (t > 1).any())
    compare_with_cpu(fns, x, rtol=1e-4, atol=1e-4)
    compare_with_cpu(fns, x.abs().nan_to_num(), rtol=1e-4, atol=1e-4)
    compare_with_cpu(lambda t: (t.sum(dims), t.amax(dims)), make(shape, I64, seed=4))
    compare_with_cpu(lambda t: (t.sum(dims), torch.var(t, dims)), make(shape, F64, seed=5))
    compare_with_cpu(lambda t: t.sum(dims), make(shape, torch.bfloat16, seed=6), rtol=2e-2, atol=2e-1)


def test_launch_paths_non_contiguous():
    base = make((30, 41, 70), F32, seed=7)
    sliced = base[:, ::2]  # reduced dims 0 and 1 do not merge: reduce_outer's generic walk
    compare_with_cpu(lambda t: (t.sum((0, 1)), t.var((0, 1)), t.amax((0, 1)), t.sum((0, 2)), t.sum(-1)), sliced, rtol=1e-4,
            atol=1e-4)
    wide = make((700, 90), F32, seed=8)
    compare_with_cpu(lambda t: (t.t().sum(0), t.t().sum(1), t.t().mean(-1, keepdim=True), t.t().std(0)), wide, rtol=1e-4,
            atol=1e-4)


@pytest.mark.parametrize("dtype", [F32, I64, BOOL])
def test_arg_launch_paths(dtype):
    # Many outputs: a work-item each, over 16 lanes for contiguous rows (R >= 32, then the
    # tail), one by one for short rows, and in lock-step blocks of 8 for strided columns.
    g = torch.Generator().manual_seed(9)
    for shape in ((600, 100), (600, 20), (100, 600), (37, 700)):
        x = torch.randint(0, 4, shape, generator=g).to(dtype)  # many ties: the first index wins
        if dtype == F32:
            x[5, 3] = x[5, 40 % shape[1]] = x[7, shape[1] - 1] = float("nan")  # the first NaN wins
            x[:, 11] = float("nan") if shape[0] == 37 else x[:, 11]
        fns = lambda t: (t.max(1), t.min(1), t.max(0), t.min(0), t.t().max(1), t.t().min(0))
        compare_with_cpu(fns, x)
        if dtype != BOOL:
            compare_with_cpu(lambda t: (t.argmax(1), t.argmin(0), t.argmax(0, keepdim=True), t.t().argmin(1)), x)


def test_nan_and_ties():
    x = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [2.0, 5.0, 5.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    compare_with_cpu(lambda t: (t.amax(1), t.amin(1), t.max(1), t.min(1), t.argmax(1), t.argmin(1), t.max(), t.argmax(),
                       t.sum(1)), x)
    ties = torch.zeros(3, 1000)
    ties[:, 500:] = 1
    compare_with_cpu(lambda t: (t.argmax(1), t.argmin(1), t.max(1), t.argmax()), ties)
    inf = torch.tensor([[float("inf"), 1.0], [-float("inf"), -float("inf")]])
    compare_with_cpu(lambda t: (t.logsumexp(1), t.amax(1), t.norm(dim=1)), inf)


def test_out_and_inplace_forms():
    x = make((6, 7), F32)
    with native_only():
        d = x.to(DEV)
        out = torch.empty(0, device=DEV)
        torch.sum(d, 1, out=out)
        assert_same_as_cpu(out, x.sum(1))
        torch.mean(d, 0, keepdim=True, out=out)
        assert_same_as_cpu(out, x.mean(0, keepdim=True))
        strided = torch.empty(7, 2, device=DEV)[:, 0]
        torch.amax(d, 0, out=strided)
        assert_same_as_cpu(strided, x.amax(0))
        values, indices = torch.empty(0, device=DEV), torch.empty(0, dtype=I64, device=DEV)
        torch.max(d, 1, out=(values, indices))
        assert_same_as_cpu((values, indices), x.max(1))
        torch.argmin(d, 0, out=indices)
        assert_same_as_cpu(indices, x.argmin(0))
        torch.var(d, 1, out=out)
        assert_same_as_cpu(out, x.var(1))
        torch.linalg.vector_norm(d, 3, 1, out=out)
        assert_same_as_cpu(out, torch.linalg.vector_norm(x, 3, 1))
        torch.logsumexp(d, 1, out=out)
        assert_same_as_cpu(out, x.logsumexp(1))
        torch.cumsum(d, 1, out=out)
        assert_same_as_cpu(out, x.cumsum(1))
        b = torch.empty(0, dtype=BOOL, device=DEV)
        torch.any(d > 0, 1, out=b)
        assert_same_as_cpu(b, (x > 0).any(1))
        e = d.clone()
        e.cumsum_(0)
        assert_same_as_cpu(e, x.cumsum(0))
        e = d.clone()
        e.cumprod_(1)
        assert_same_as_cpu(e, x.cumprod(1))
        wide = torch.empty(0, dtype=F64, device=DEV)
        torch.sum(d, 1, out=wide)  # the out dtype is the result dtype, as on CPU
        assert_same_as_cpu(wide, torch.sum(x, 1, out=torch.empty(0, dtype=F64)))


def test_norm_functions():
    x = make((5, 8), F32)
    compare_with_cpu(lambda t: (t.norm(), t.norm(1), t.norm(p=3, dim=1), t.norm(dim=0, keepdim=True), t.norm(float("inf")),
                       torch.norm(t, 2, dim=(0, 1)), torch.norm(t, dim=1, dtype=F64)), x)


def test_scans():
    for dtype in (F32, F64, I64, I32, BOOL):
        x = make((4, 5, 6), dtype)
        compare_with_cpu(lambda t: (t.cumsum(0), t.cumsum(-1), t.cumsum(1, dtype=F64)), x)
        if dtype != BOOL:
            compare_with_cpu(lambda t: t.cumprod(2), x if dtype.is_floating_point else x.clamp(-2, 2))


def test_errors():
    x = make((3, 4), I64)
    # An integer input with a bad dim: CPU names the dtype first (std/var check it before the dims).
    for fn in (lambda t: t.mean(), lambda t: t.var(), lambda t: t.sum(5), lambda t: t.amax((0, 0)),
               lambda t: t.std(5), lambda t: torch.var_mean(t, 5), lambda t: t[0, 0].std(1)):
        with pytest.raises(Exception) as want:
            fn(x)
        with native_only(), pytest.raises(type(want.value), match=re.escape(str(want.value).splitlines()[0][:40])):
            fn(x.to(DEV))


# ---- random shapes and dim sets ----

@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=4), data=st.data())
def test_random_reductions(shape, data):
    ndim = len(shape)
    dims = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim, unique_by=lambda d: d % ndim))
    keepdim = data.draw(st.booleans())
    transpose = data.draw(st.booleans()) and ndim >= 2
    x = make(shape, F32, seed=len(shape))
    prep = (lambda t: t.transpose(0, -1)) if transpose else (lambda t: t)
    compare_with_cpu(lambda t: (prep(t).sum(dims, keepdim=keepdim), prep(t).mean(dims, keepdim=keepdim),
                       torch.var(prep(t), dims, keepdim=keepdim), torch.linalg.vector_norm(prep(t), dim=dims, keepdim=keepdim)), x)
    if x.numel() > 0:
        compare_with_cpu(lambda t: (prep(t).amax(dims, keepdim=keepdim), prep(t).argmax(dims[0], keepdim=keepdim)), x)


# ---- gradients through our kernels ----

GRAD_FNS = {
    "sum": lambda t: t.sum(1).pow(2).sum(),
    "mean": lambda t: (t.mean((0, 1)) * 3).sum(),
    "amax": lambda t: t.amax(1).sum(),
    "var": lambda t: t.var(0).sum(),
    "norm": lambda t: t.norm(dim=1).sum() + torch.linalg.vector_norm(t),
    "logsumexp": lambda t: t.logsumexp(1).sum(),
    "cumsum": lambda t: (t.cumsum(1) * torch.arange(5.0, device=t.device)).sum(),
}


@pytest.mark.parametrize("name", sorted(GRAD_FNS))
def test_gradients(name):
    x = make((4, 5), F32, seed=3)
    xc = x.clone().requires_grad_()
    GRAD_FNS[name](xc).backward()
    xd = x.to(DEV).requires_grad_()
    GRAD_FNS[name](xd).backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=1e-4, atol=1e-5)


def test_clip_grad_norm_reductions_are_native():
    # clip_grad_norm_ also stacks and multiplies (other operators, maybe served by the fallback):
    # what must not reach the fallback are its norms.
    ps = [torch.nn.Parameter(make((10, 10), F32, seed=s).to(DEV)) for s in range(3)]
    for k, p in enumerate(ps):
        p.grad = make((10, 10), F32, seed=10 + k).to(DEV)
    want = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad.cpu()) for p in ps]))
    old = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    try:
        torch.opencl.reset_fallback_stats()
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm=1e9, foreach=False)
        served = torch.opencl.fallback_stats()
    finally:
        torch.opencl.set_fallback_mode(old)
    torch.testing.assert_close(total.cpu(), want)
    assert not [op for op in served if "norm" in op or "sum" in op], served


# A constant slice has variance exactly 0 on CPU (Welford's update), and std's backward masks its
# gradient there; a mean summed as x / n was an ulp off, which gave std ~3e-8 and a gradient of ~0.1
# where CPU's is 0. Shapes that take the row, column, outer and whole-tensor kernels. (CPU's own
# whole-tensor var of 100000 equal floats is 8.9e-16, not 0: the device's exact 0 is asserted instead.)
@pytest.mark.parametrize("shape, dim", [((4, 5), 1), ((7, 1000), 1), ((1000, 7), 0), ((3, 4, 5), (0, 2)),
                                        ((100000,), 0), ((5,), None)])
def test_var_and_std_of_constant_slices_are_exactly_zero(shape, dim):
    x = torch.full(shape, 0.3923, dtype=F32)
    with native_only():
        for fn in (lambda t: t.var(dim), lambda t: t.std(dim, correction=0), lambda t: torch.var_mean(t, dim)[0]):
            got = fn(x.to(DEV)).cpu()
            assert torch.equal(got, torch.zeros_like(got)), got
            torch.testing.assert_close(got, fn(x), rtol=0, atol=1e-7)
        leaf = x.to(DEV).requires_grad_()
        leaf.std(dim).sum().backward()
    assert torch.equal(leaf.grad.cpu(), torch.zeros(shape))  # CPU's, wherever its std is exactly 0
    # Data with a large offset keeps its variance (the shift is an element of each slice).
    y = make(shape, F32) * 3 + 1000
    with native_only():
        torch.testing.assert_close(y.to(DEV).var(dim).cpu(), y.var(dim), rtol=1e-4, atol=1e-4)


def test_half_prod_accumulates_in_float():
    # 16 values whose running product passes half's 65504 before coming back down: CPU multiplies in
    # half and gives inf; the device (as CUDA) accumulates in float and rounds the product once.
    x = torch.tensor([40.0, 40.0, 50.0, 0.01, 0.02, 3.0, 1.0, 2.0] * 2, dtype=torch.float16)
    with native_only():
        got = x.to(DEV).prod().cpu()
    assert torch.equal(got, x.float().prod().half()) and torch.isfinite(got)
