"""nansum/nanmean, aminmax, cummax/cummin, logcumsumexp and the log_normal_, geometric_ and
cauchy_ distributions on opencl, against CPU PyTorch (the distributions: seeding and statistics).

Forward comparisons run with the fallback refusing (native_only), so an operator that went to
the CPU fallback fails; gradients compare values only (PyTorch's backward formulas may use
operators this backend serves through the fallback).
"""
import math

import pytest
import torch

import torch_opencl  # noqa: F401

from _device_helpers import assert_same_as_cpu, compare_with_cpu, native_only

DEV = torch.device("opencl")
F32, F64, I32, I64, BOOL = torch.float32, torch.float64, torch.int32, torch.int64, torch.bool
BF16 = torch.bfloat16


def make(shape, dtype, seed=0, nans=False):
    g = torch.Generator().manual_seed(seed)
    if dtype == BOOL:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=F64)
        if nans and x.numel() > 0:
            x.view(-1)[torch.randint(0, x.numel(), (max(1, x.numel() // 5),), generator=g)] = float("nan")
        return x.to(dtype)
    return torch.randint(-9, 10, shape, generator=g, dtype=dtype)


def same_error(fn, *inputs):
    with pytest.raises(Exception) as want:
        fn(*inputs)
    # CPU raises NotImplementedError for dtypes its kernel lacks; a clear RuntimeError is as good
    kinds = (RuntimeError, NotImplementedError) if isinstance(want.value, NotImplementedError) else type(want.value)
    with native_only(), pytest.raises(kinds):
        fn(*[x.to(DEV) for x in inputs])


# ---- nansum / nanmean ----

@pytest.mark.parametrize("dtype", [F32, F64, BF16, I64, BOOL])
def test_nansum(dtype):
    x = make((4, 5, 6), dtype, nans=True)
    rtol = 1e-4 if dtype == F32 else None
    compare_with_cpu(lambda t: (t.nansum(), t.nansum(0), t.nansum((0, 2), keepdim=True), t.nansum(-1)), x, rtol=rtol,
            atol=rtol)
    if dtype.is_floating_point:
        compare_with_cpu(lambda t: (t.nanmean(), t.nanmean(1), t.nanmean((0, 1), keepdim=True)), x, rtol=rtol, atol=rtol)
    compare_with_cpu(lambda t: t.nansum(1, dtype=F64), x)


def test_nansum_paths_and_forms():
    big = make((1000, 70), F32, seed=1, nans=True)  # strided (dim 0), per-row (dim 1), chunked full sum
    compare_with_cpu(lambda t: (t.nansum(0), t.nansum(1), t.nansum(), t.t().nansum(0), t.nanmean(0)), big, rtol=1e-4,
            atol=1e-4)
    x = make((3, 4), F32, seed=2, nans=True)
    compare_with_cpu(lambda t: (t.nansum(), t.nansum(0)), torch.tensor(float("nan")))
    compare_with_cpu(lambda t: (t.nansum(), t.nansum(0), t.nansum(1, keepdim=True), t.nanmean(0)), torch.empty(0, 3))
    want = torch.empty(0)
    torch.nansum(x, 1, out=want)
    with native_only():
        out = torch.empty(7, device=DEV)
        torch.nansum(x.to(DEV), 1, out=out)
    assert_same_as_cpu(out, want)
    same_error(lambda t: torch.nansum(t, 1, dtype=F64, out=torch.empty(0, device=t.device)), x)
    same_error(lambda t: t.nansum(2), x)
    same_error(lambda t: t.nansum(), x.to(torch.complex64))


# ---- aminmax ----

@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, BOOL])
def test_aminmax(dtype):
    x = make((4, 5, 6), dtype, nans=True)
    compare_with_cpu(lambda t: tuple(t.aminmax()), x)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            compare_with_cpu(lambda t: tuple(t.aminmax(dim=dim, keepdim=keepdim)), x)
    compare_with_cpu(lambda t: tuple(t.aminmax(keepdim=True)), x)


def test_aminmax_forms():
    x = make((70, 600), F32, seed=3)
    compare_with_cpu(lambda t: (tuple(t.aminmax(dim=0)), tuple(t.aminmax(dim=1)), tuple(t.aminmax())), x)
    s = torch.tensor(2.5)
    compare_with_cpu(lambda t: (tuple(t.aminmax()), tuple(t.aminmax(dim=0)), tuple(t.aminmax(dim=0, keepdim=True))), s)
    compare_with_cpu(lambda t: tuple(t.aminmax(dim=0)), torch.empty(3, 0))
    same_error(lambda t: t.aminmax(), torch.empty(0, 3))
    same_error(lambda t: t.aminmax(dim=0), torch.empty(0, 3))
    y = make((5, 6), F32, seed=4)
    want = torch.aminmax(y, dim=1)
    with native_only():
        mn, mx = torch.empty(0, device=DEV), torch.empty(0, device=DEV)
        torch.aminmax(y.to(DEV), dim=1, out=(mn, mx))
    assert_same_as_cpu((mn, mx), tuple(want))


# ---- cummax / cummin ----

@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, BOOL])
def test_cummax_cummin(dtype):
    x = make((4, 5, 6), dtype, nans=True)
    for dim in (0, 1, -1):
        compare_with_cpu(lambda t: (tuple(t.cummax(dim)), tuple(t.cummin(dim))), x)


def test_cummax_ties_nan_and_forms():
    # ties move the index to the later element; a NaN takes over and keeps its (last) index
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, float("nan"), 5.0, float("nan"), 7.0], [2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 4.0, 4.0]])
    compare_with_cpu(lambda t: (tuple(t.cummax(1)), tuple(t.cummin(1)), tuple(t.cummax(0))), x)
    compare_with_cpu(lambda t: (tuple(t.cummax(0)), tuple(t.cummin(-1))), torch.tensor(3.5))
    compare_with_cpu(lambda t: (tuple(t.cummax(1)), tuple(t.cummin(0))), torch.empty(0, 4))
    y = make((6, 7), F32, seed=5)
    compare_with_cpu(lambda t: (tuple(t.t().cummax(0)), tuple(t[:, ::2].cummin(1))), y)
    want = torch.cummax(y, 0)
    with native_only():
        values = torch.empty(7, 6, device=DEV).t()  # strided values, fresh indices
        indices = torch.empty(0, dtype=I64, device=DEV)
        torch.cummax(y.to(DEV), 0, out=(values, indices))
    assert_same_as_cpu((values, indices), tuple(want))
    same_error(lambda t: t.cummax(2), y)


# ---- logcumsumexp ----

@pytest.mark.parametrize("dtype", [F32, F64, BF16])
def test_logcumsumexp(dtype):
    x = make((4, 5, 6), dtype) * 10
    rtol = {F32: 1e-5, F64: 1e-12, BF16: 2e-2}[dtype]
    for dim in (0, 1, -1):
        compare_with_cpu(lambda t: t.logcumsumexp(dim), x, rtol=rtol, atol=rtol)


def test_logcumsumexp_special_values_and_forms():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[-inf, -inf, 0.0, inf, 1.0, inf], [1.0, nan, 2.0, -inf, 3.0, 4.0], [-inf, 5.0, -inf, inf, -inf, 0.0]])
    compare_with_cpu(lambda t: (t.logcumsumexp(1), t.logcumsumexp(0)), x)
    compare_with_cpu(lambda t: (t.logcumsumexp(0), t.logcumsumexp(-1)), torch.tensor(1.5))
    compare_with_cpu(lambda t: t.logcumsumexp(1), torch.empty(0, 3))
    y = make((50, 40), F32, seed=6)
    compare_with_cpu(lambda t: (t.t().logcumsumexp(1), t[::3].logcumsumexp(0)), y, rtol=1e-5, atol=1e-5)
    want = torch.logcumsumexp(y, 1)
    with native_only():
        out = torch.empty(1, device=DEV)
        torch.logcumsumexp(y.to(DEV), 1, out=out)
    assert_same_as_cpu(out, want)
    same_error(lambda t: t.logcumsumexp(0), torch.arange(5))
    same_error(lambda t: t.logcumsumexp(3), y)


# ---- gradients (PyTorch's formulas over these forward kernels) ----

GRAD_FNS = {
    "nansum": lambda t: (t.nansum(1) * torch.arange(1.0, 6.0, device=t.device)).sum(),
    "nanmean": lambda t: t.nanmean(0).pow(2).sum(),
    "aminmax": lambda t: sum(v.sum() for v in t.aminmax(dim=1)),
    "cummax": lambda t: (t.cummax(1).values * torch.arange(1.0, 7.0, device=t.device)).sum(),
    "cummin": lambda t: t.cummin(0).values.pow(2).sum(),
    "logcumsumexp": lambda t: (t.logcumsumexp(1) * torch.arange(1.0, 7.0, device=t.device)).sum(),
}


@pytest.mark.parametrize("name", sorted(GRAD_FNS))
def test_gradients(name):
    if name == "aminmax" and tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 12):
        pytest.skip("torch 2.11 has no derivative formula for aminmax (CPU raises too)")
    x = make((5, 6), F64, seed=7)
    if name.startswith("nan"):
        x[1, 2] = float("nan")
    xc = x.clone().requires_grad_()
    GRAD_FNS[name](xc).backward()
    xd = x.to(DEV).requires_grad_()
    GRAD_FNS[name](xd).backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=1e-9, atol=1e-9, equal_nan=True)


# ---- random: log_normal_, geometric_, cauchy_ ----

N = 200_000
FLOATS = [F32, F64, BF16]


def drawn(fill, dtype=F32, seed=1234, n=N):
    g = torch.Generator(device=DEV).manual_seed(seed)
    with native_only():
        return fill(torch.empty(n, dtype=dtype, device=DEV), g).cpu()


@pytest.mark.parametrize("dtype", FLOATS)
def test_log_normal_statistics(dtype):
    x = drawn(lambda t, g: t.log_normal_(0.5, 0.4, generator=g), dtype).double()
    assert x.dtype == F64 and bool((x > 0).all())
    logs = x.log()
    tol = 0.02 if dtype == BF16 else 0.01
    assert abs(logs.mean().item() - 0.5) < tol
    assert abs(logs.std().item() - 0.4) < tol
    assert abs(x.mean().item() - math.exp(0.5 + 0.4 ** 2 / 2)) < 0.02


@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_geometric_statistics(dtype):
    p = 0.3
    x = drawn(lambda t, g: t.geometric_(p, generator=g), dtype).double()
    assert bool((x >= 1).all()) and bool((x == x.round()).all())
    assert abs(x.mean().item() - 1 / p) < 0.05
    assert abs(x.var().item() - (1 - p) / p ** 2) < 0.3
    assert abs((x == 1).double().mean().item() - p) < 0.01
    assert abs((x == 2).double().mean().item() - p * (1 - p)) < 0.01


@pytest.mark.parametrize("dtype", FLOATS)
def test_cauchy_statistics(dtype):
    x = drawn(lambda t, g: t.cauchy_(1.0, 2.0, generator=g), dtype).double()
    assert bool(torch.isfinite(x).all())
    assert abs(x.median().item() - 1.0) < 0.05
    # quartiles at median -+ sigma
    q = torch.quantile(x[:100_000], torch.tensor([0.25, 0.75], dtype=F64))
    assert abs(q[0].item() + 1.0) < 0.1 and abs(q[1].item() - 3.0) < 0.1


@pytest.mark.parametrize("name", ["log_normal_", "geometric_", "cauchy_"])
def test_random_seeding_and_forms(name):
    args = {"log_normal_": (0.0, 1.0), "geometric_": (0.5,), "cauchy_": (0.0, 1.0)}[name]
    fill = lambda t, g: getattr(t, name)(*args, generator=g)
    a, b = drawn(fill, seed=7, n=1001), drawn(fill, seed=7, n=1001)
    assert torch.equal(a, b)
    assert not torch.equal(a, drawn(fill, seed=8, n=1001))
    g = torch.Generator(device=DEV).manual_seed(9)
    with native_only():
        first = getattr(torch.empty(64, device=DEV), name)(*args, generator=g).cpu()
        second = getattr(torch.empty(64, device=DEV), name)(*args, generator=g).cpu()
        strided = getattr(torch.zeros(8, 16, device=DEV).t(), name)(*args)  # non-contiguous output
        empty = getattr(torch.empty(0, device=DEV), name)(*args)
        scalar = getattr(torch.empty((), device=DEV), name)(*args)
    assert not torch.equal(first, second)
    assert bool((strided.cpu() != 0).all()) and strided.shape == (16, 8)
    assert empty.numel() == 0 and scalar.dim() == 0
    # the default generator: same seed, same numbers
    torch.manual_seed(11)
    with native_only():
        c = getattr(torch.empty(100, device=DEV), name)(*args).cpu()
    torch.manual_seed(11)
    with native_only():
        d = getattr(torch.empty(100, device=DEV), name)(*args).cpu()
    assert torch.equal(c, d)


def test_random_functional_forms_and_errors():
    with native_only():
        g = torch.Generator(device=DEV).manual_seed(3)
        x = torch.zeros(1000, device=DEV)
        y = torch.cauchy(x, 0.0, 1.0, generator=g) if hasattr(torch, "cauchy") else x.clone().cauchy_(generator=g)
        assert y.device.type == "opencl" and bool((y.cpu() != 0).any())
    for fn in (lambda t: t.log_normal_(0.0, -1.0), lambda t: t.geometric_(1.5), lambda t: t.cauchy_(0.0, 0.0),
               lambda t: t.long().cauchy_(), lambda t: t.long().log_normal_()):
        same_error(fn, torch.zeros(4))
