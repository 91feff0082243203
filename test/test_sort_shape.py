"""sort/argsort/topk, flip/roll/repeat/tile, linspace/logspace, binary_cross_entropy and
log_sigmoid run natively on opencl, against CPU: dtypes, dims, descending/stable, ties and NaN,
0-size and 0-d tensors, non-contiguous inputs and outputs, out= forms, gradients, bad input."""

import itertools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

from _device_helpers import kernel_class, launched_kernels, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
# One program per dtype: the list stays short to keep a cold run quick.
SORT_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool, torch.bfloat16]


def data(*shape, dtype=torch.float32, seed=0, ties=False):
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if ties or not dtype.is_floating_point:
        x = torch.randint(-4 if dtype != torch.uint8 else 0, 5, shape, generator=gen)
        return x.to(dtype)
    return (torch.randn(shape, generator=gen) * 3).to(dtype)


def check_sort(x, dim=-1, descending=False, stable=True):
    v, i = torch.sort(x.to(DEV), dim=dim, descending=descending, stable=stable)
    rv, ri = torch.sort(x, dim=dim, descending=descending, stable=stable)
    assert i.dtype == torch.int64
    torch.testing.assert_close(v.cpu(), rv, equal_nan=True, rtol=0, atol=0)
    if stable:
        assert torch.equal(i.cpu(), ri)
    else:  # any order of equal keys: the indices must select the sorted values, each once
        torch.testing.assert_close(torch.gather(x, dim, i.cpu()), rv, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(i.cpu().sort(dim).values, ri.sort(dim).values)


# ---- sort / argsort ----

@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_matches_cpu(dtype):
    with native_only():
        for n in [1, 5, 16, 17, 100, 300]:
            x = data(3, n, dtype=dtype, seed=n)
            for descending in [False, True]:
                check_sort(x, -1, descending, stable=True)
                check_sort(x, -1, descending, stable=False)
        x = data(4, 6, 5, dtype=dtype, seed=1)
        for dim in [0, 1, 2, -2]:
            check_sort(x, dim, descending=dim % 2 == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("n", [5000, 20000])
def test_sort_long_rows_take_the_multi_pass_path(dtype, n):
    x = data(2, n, dtype=dtype, seed=n, ties=True)
    if dtype.is_floating_point:
        x[:, ::97] = float("nan")
    with native_only():
        check_sort(x, descending=False)
        check_sort(x, descending=True)
        check_sort(x.t().contiguous(), dim=0, descending=True)
        for k in [5, 100]:  # the one-pass and the sorting topk
            v, i = torch.topk(x.to(DEV), k)
            rv, _ = torch.topk(x, k)
            torch.testing.assert_close(v.cpu(), rv, equal_nan=True)
            torch.testing.assert_close(torch.gather(x, 1, i.cpu()), rv, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_sort_few_long_rows_take_the_chunk_merges_in_the_cpu_class(dtype):
    # CPU class: chunks merge-sorted by a work-item each, then merge passes over spans of 256 outputs (odd chunk
    # counts, a last run without a partner, rows not a multiple of the span); the GPU class sorts the same rows
    # with the bitonic network
    for rows, n in [(1, 17), (1, 257), (3, 1000), (1, 4097), (2, 70001), (5, 3333)]:
        x = data(rows, n, dtype=dtype, seed=n, ties=True)
        if dtype.is_floating_point:
            x[:, ::13] = float("nan")
        with native_only(), launched_kernels() as names:
            check_sort(x, 1, descending=False)
            check_sort(x, 1, descending=True)
        assert ("sort_chunks" in names) == (kernel_class() == "cpu"), names
        assert ("merge_pass" in names) == (kernel_class() == "cpu" and n > 256), names


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_sort_many_rows_take_the_merge_sort_path(dtype):
    # >= 8 rows per compute unit: one work-item merge-sorts each row
    for n in [17, 40, 333]:
        x = data(1200, n, dtype=dtype, seed=n, ties=True)
        if dtype.is_floating_point:
            x[::3, ::7] = float("nan")
        with native_only():
            check_sort(x, 1, descending=n % 2 == 0)
            check_sort(x, 1, descending=n % 2 == 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_sort_ties_nan_inf_and_signed_zero(dtype):
    vals = torch.tensor([1.0, float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1.0, float("nan"), 0.0, -2.0,
                         1.0, -float("inf")], dtype=dtype)
    x = torch.stack([vals, vals.flip(0), vals.roll(3)])
    with native_only():
        for descending in [False, True]:
            check_sort(x, -1, descending, stable=True)
            check_sort(x.repeat(1, 3), -1, descending, stable=True)  # 36: the work-group path
            check_sort(x, 0, descending, stable=True)


def test_sort_edge_shapes_non_contiguous_and_out():
    x = data(5, 7)
    with native_only():
        v, i = torch.sort(torch.empty(0, 3, device=DEV), dim=0)
        assert v.shape == (0, 3) and i.shape == (0, 3)
        v, i = torch.sort(torch.tensor(2.5, device=DEV))
        assert v.item() == 2.5 and i.item() == 0 and v.dim() == 0
        for view in [x.t(), x[:, ::2], x[1:, 2:5]]:
            check_sort(view, 0, True)
            check_sort(view, 1, False)
        values = torch.empty(0, device=DEV)
        indices = torch.empty(0, dtype=torch.long, device=DEV)
        ret = torch.sort(x.to(DEV), 1, True, out=(values, indices))
        assert ret[0] is values and ret[1] is indices
        rv, ri = torch.sort(x, 1, True)
        torch.testing.assert_close(values.cpu(), rv)
        assert torch.equal(indices.cpu(), ri)
        # non-contiguous out= tensors are written through
        vbig = torch.zeros(7, 5, device=DEV)
        ibig = torch.zeros(7, 5, dtype=torch.long, device=DEV)
        torch.sort(x.to(DEV), stable=True, dim=0, out=(vbig.t(), ibig.t()))
        torch.testing.assert_close(vbig.t().cpu(), torch.sort(x, 0).values)
        assert torch.equal(ibig.t().cpu(), torch.sort(x, stable=True, dim=0).indices)
        xi = data(4, 9, dtype=torch.int32, seed=3)
        for stable in [False, True]:
            idx = torch.argsort(xi.to(DEV), dim=1, descending=True, stable=stable).cpu()
            torch.testing.assert_close(torch.gather(xi, 1, idx), torch.sort(xi, 1, descending=True).values)
        assert torch.equal(torch.argsort(xi.to(DEV), stable=True, dim=0).cpu(), torch.argsort(xi, stable=True, dim=0))
    with pytest.raises(IndexError):
        torch.sort(x.to(DEV), dim=2)


# ---- topk ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_topk_matches_cpu(dtype):
    x = data(6, 40, dtype=dtype, seed=2)
    with native_only():
        for dim, k in [(1, 1), (1, 7), (1, 40), (1, 0), (0, 3), (-2, 6)]:
            for largest in [True, False]:
                v, i = torch.topk(x.to(DEV), k, dim=dim, largest=largest)
                rv, _ = torch.topk(x, k, dim=dim, largest=largest)
                torch.testing.assert_close(v.cpu(), rv)
                torch.testing.assert_close(torch.gather(x, dim, i.cpu()), rv)
                vu, _ = torch.topk(x.to(DEV), k, dim=dim, largest=largest, sorted=False)
                torch.testing.assert_close(vu.cpu().sort(dim).values, rv.sort(dim).values)


def test_topk_nan_zero_dim_out_and_errors():
    x = data(3, 10)
    x[0, 4] = float("nan")
    with native_only():
        for largest in [True, False]:
            v, i = torch.topk(x.to(DEV), 4, largest=largest)
            rv, ri = torch.topk(x, 4, largest=largest)
            torch.testing.assert_close(v.cpu(), rv, equal_nan=True)
        v, i = torch.topk(torch.tensor(3.0, device=DEV), 1)
        assert v.item() == 3.0 and i.item() == 0
        values = torch.empty(0, device=DEV)
        indices = torch.empty(0, dtype=torch.long, device=DEV)
        torch.topk(x.t().to(DEV), 2, dim=0, out=(values, indices))
        torch.testing.assert_close(values.cpu(), torch.topk(x.t(), 2, dim=0).values, equal_nan=True)
    with pytest.raises(RuntimeError, match="out of range"):
        torch.topk(x.to(DEV), 11)


@pytest.mark.parametrize("op", ["sort", "topk"])
def test_sort_topk_gradients_match_cpu(op):
    x = data(4, 9, seed=5)
    g = data(4, 3 if op == "topk" else 9, seed=6)

    def run(t):
        t = t.clone().requires_grad_()
        out = torch.sort(t, 1, descending=True)[0] if op == "sort" else torch.topk(t, 3, 1)[0]
        out.backward(g.to(t.device))
        return t.grad

    torch.testing.assert_close(run(x.to(DEV)).cpu(), run(x))


# ---- flip / roll / repeat / tile ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.float16, torch.int64])  # 4, 1, 2, 8 bytes
def test_flip_roll_repeat_match_cpu(dtype):
    x = data(2, 3, 4, 5, dtype=dtype, seed=7)
    xd = x.to(DEV)
    with native_only():
        for dims in [[0], [1, 2], [0, 1, 2, 3], [-1], []]:
            assert torch.equal(torch.flip(xd, dims).cpu(), torch.flip(x, dims))
        for shifts, dims in [(1, 0), ((2, -1), (0, 3)), (7, None), ((1, 1), (2, 2)), (-3, 1), (13, 3)]:
            expected = torch.roll(x, shifts) if dims is None else torch.roll(x, shifts, dims)
            got = torch.roll(xd, shifts) if dims is None else torch.roll(xd, shifts, dims)
            assert torch.equal(got.cpu(), expected)
        for reps in [(2, 1, 1, 1), (1, 2, 3, 1), (2, 2, 1, 1, 3), (0, 1, 1, 1)]:
            assert torch.equal(xd.repeat(*reps).cpu(), x.repeat(*reps))
        assert torch.equal(xd.tile((2,)).cpu(), x.tile((2,)))


def test_flip_roll_repeat_layouts_edges_and_errors():
    x = data(2, 3, 4, 5)
    with native_only():
        for view in [x.transpose(1, 3), x[:, :, ::2], x.expand(3, 2, 3, 4, 5)]:
            vd = view.to(DEV)
            assert torch.equal(torch.flip(vd, [1, -1]).cpu(), torch.flip(view, [1, -1]))
            assert torch.equal(vd.repeat(*([2] * view.dim())).cpu(), view.repeat(*([2] * view.dim())))
            assert torch.equal(torch.roll(vd, (1, -2), (0, 2)).cpu(), torch.roll(view, (1, -2), (0, 2)))
        xt = x.to(DEV).transpose(1, 3)  # strided input without a copy
        assert torch.equal(torch.flip(xt, [2]).cpu(), torch.flip(x.transpose(1, 3), [2]))
        cl = x.to(memory_format=torch.channels_last)
        out = torch.flip(cl.to(DEV), [1])
        assert out.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(out.cpu(), torch.flip(cl, [1]))
        s = torch.tensor(3.0)
        assert torch.equal(s.to(DEV).repeat(2, 2).cpu(), s.repeat(2, 2))
        assert torch.equal(torch.flip(s.to(DEV), []).cpu(), s)
        assert torch.equal(torch.roll(s.to(DEV), 1).cpu(), torch.roll(s, 1))
        e = torch.empty(0, 3)
        assert torch.flip(e.to(DEV), [0, 1]).shape == (0, 3)
        assert torch.roll(e.to(DEV), 1, 1).shape == (0, 3)
        assert e.to(DEV).repeat(2, 2).shape == (0, 6)
        out = torch.empty(0, device=DEV)
        torch.ops.aten.flip.out(x.to(DEV), [0], out=out)
        assert torch.equal(out.cpu(), torch.flip(x, [0]))
    with pytest.raises(RuntimeError, match="multiple times"):
        torch.flip(x.to(DEV), [0, 0])
    with pytest.raises(RuntimeError, match="can not be smaller"):
        x.to(DEV).repeat(2, 2)
    with pytest.raises(RuntimeError, match="must align"):
        torch.roll(x.to(DEV), (1, 2), (0,))


def test_flip_repeat_roll_gradients_match_cpu():
    x = data(3, 4, seed=8)

    def run(t):
        t = t.clone().requires_grad_()
        y = torch.flip(t, [0]) * 2 + torch.roll(t, 1, 1)
        z = y.repeat(2, 1, 3).tile((1, 2))
        z.backward(data(*z.shape, seed=9).to(t.device))
        return t.grad

    torch.testing.assert_close(run(x.to(DEV)).cpu(), run(x))


# ---- linspace / logspace ----

RANGES = [(0, 1, 5), (0, 10, 25), (-3, 10, 41), (0, 100, 70), (1.5, -2.25, 1001), (0.1, 0.7, 333), (-5, 5, 2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_linspace_matches_cpu(dtype):
    with native_only():
        for start, end, steps in RANGES:
            expected = torch.linspace(start, end, steps, dtype=dtype)
            got = torch.linspace(start, end, steps, dtype=dtype, device=DEV).cpu()
            if dtype.is_floating_point:  # CPU's vectorized loop may differ by one ulp
                torch.testing.assert_close(got, expected, rtol=2e-7 if dtype == torch.float32 else 1e-15, atol=0)
            else:
                assert torch.equal(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_logspace_matches_cpu(dtype):
    with native_only():
        for (start, end, steps), base in itertools.product(RANGES + [(0, 8, 9)], [10.0, 2.0, 1.5]):
            expected = torch.logspace(start, end, steps, base, dtype=dtype)
            got = torch.logspace(start, end, steps, base, dtype=dtype, device=DEV).cpu()
            if dtype.is_floating_point:
                torch.testing.assert_close(got, expected, rtol=2e-7 if dtype == torch.float32 else 1e-13, atol=0)
            else:
                # CPU's integers exactly, the last digit of powers near 2^53 and the undefined conversion of
                # powers past int64's range (INT64_MIN on x86) included: a device's pow may be 1 ulp off.
                assert torch.equal(got, expected), (start, end, steps, base, got[got != expected],
                                                    expected[got != expected])


def test_linspace_logspace_steps_out_and_half_types():
    with native_only():
        for fn in [torch.linspace, torch.logspace]:
            assert fn(0, 1, 0, device=DEV).shape == (0,)
            torch.testing.assert_close(fn(3, 4, 1, device=DEV).cpu(), fn(3, 4, 1))
            out = torch.zeros(3, 4, device=DEV)[:, 1]  # non-contiguous out of the right size
            ret = fn(0, 1, 3, out=out)
            assert ret is out
            torch.testing.assert_close(out.cpu(), fn(0, 1, 3))
            out = torch.empty(7, 2, device=DEV)  # resized
            fn(-1, 1, 5, out=out)
            torch.testing.assert_close(out.cpu(), fn(-1, 1, 5))
            for dtype in [torch.bfloat16, torch.float16]:  # one ulp: CPU rounds after every step
                got = fn(-2, 3, 50, dtype=dtype, device=DEV).cpu()
                torch.testing.assert_close(got.float(), fn(-2, 3, 50, dtype=dtype).float(), rtol=1e-2, atol=1e-2)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.linspace(0, 1, -1, device=DEV)


# ---- binary_cross_entropy / logsigmoid ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [None, "full", "broadcast"])
def test_binary_cross_entropy_forward_backward_match_cpu(dtype, reduction, weighted):
    gen = torch.Generator().manual_seed(10)
    x = torch.rand(4, 5, dtype=dtype, generator=gen)
    x[0, 0], x[0, 1], x[0, 2] = 0.0, 1.0, 1e-45  # log clamped at -100
    y = torch.rand(4, 5, dtype=dtype, generator=gen)
    y[1, 1], y[1, 2] = 0.0, 1.0
    w = {None: None, "full": torch.rand(4, 5, dtype=dtype, generator=gen),
         "broadcast": torch.rand(5, dtype=dtype, generator=gen)}[weighted]

    def run(dev):
        t = x.to(dev).requires_grad_()
        loss = F.binary_cross_entropy(t, y.to(dev), None if w is None else w.to(dev), reduction=reduction)
        loss.backward(torch.linspace(-1, 1, loss.numel(), dtype=dtype).reshape(loss.shape).to(dev))
        return loss.detach(), t.grad

    with native_only():
        loss, grad = run(DEV)
    expected_loss, expected_grad = run("cpu")
    torch.testing.assert_close(loss.cpu(), expected_loss)
    torch.testing.assert_close(grad.cpu(), expected_grad)


def test_binary_cross_entropy_out_empty_and_bad_input():
    x, y = torch.rand(6), torch.rand(6)
    with native_only():
        out = torch.empty(0, device=DEV)
        torch._C._nn.binary_cross_entropy(x.to(DEV), y.to(DEV), reduction=0, out=out)
        torch.testing.assert_close(out.cpu(), F.binary_cross_entropy(x, y, reduction="none"))
        e = torch.empty(0, device=DEV)
        assert F.binary_cross_entropy(e, e, reduction="sum").item() == 0
        assert F.binary_cross_entropy(e, e).isnan().item()
    for bad in [1.5, -0.1, float("nan")]:
        xb = x.clone()
        xb[2] = bad
        with native_only(), pytest.raises(RuntimeError, match="input should be between 0 and 1"):
            F.binary_cross_entropy(xb.to(DEV), y.to(DEV))
        with native_only(), pytest.raises(RuntimeError, match="target should be between 0 and 1"):
            F.binary_cross_entropy(y.to(DEV), xb.to(DEV))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logsigmoid_forward_backward_match_cpu(dtype):
    x = (torch.randn(5, 7, generator=torch.Generator().manual_seed(11)) * 10).to(dtype)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    g = torch.randn(5, 7).to(dtype)

    def run(t, grad):
        t = t.clone().requires_grad_()
        y = F.logsigmoid(t)
        y.backward(grad)
        return y.detach(), t.grad

    with native_only():
        y, gx = run(x.to(DEV).t(), g.to(DEV).t())
    ey, egx = run(x.t(), g.t())
    torch.testing.assert_close(y.cpu(), ey, equal_nan=True)
    torch.testing.assert_close(gx.cpu(), egx, equal_nan=True)
    with native_only():
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch._C._nn.log_sigmoid(x.to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), F.logsigmoid(x), equal_nan=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        F.logsigmoid(torch.ones(3, dtype=torch.long, device=DEV))


# ---- the shape space ----

shapes = st.lists(st.integers(0, 6), min_size=0, max_size=4)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, data_=st.data())
def test_sort_topk_flip_repeat_over_shapes(shape, data_):
    x = data(*shape, ties=data_.draw(st.booleans()), seed=len(shape))
    dims = max(x.dim(), 1)
    dim = data_.draw(st.integers(-dims, dims - 1))
    descending = data_.draw(st.booleans())
    with native_only():
        check_sort(x, dim, descending, stable=True)
        size = x.shape[dim] if x.dim() else 1
        k = data_.draw(st.integers(0, size))
        v, i = torch.topk(x.to(DEV), k, dim, largest=descending)
        rv, _ = torch.topk(x, k, dim, largest=descending)
        torch.testing.assert_close(v.cpu(), rv)
        flip_dims = data_.draw(st.lists(st.integers(0, dims - 1), unique=True)) if x.dim() else []
        assert torch.equal(torch.flip(x.to(DEV), flip_dims).cpu(), torch.flip(x, flip_dims))
        reps = data_.draw(st.lists(st.integers(0, 3), min_size=x.dim(), max_size=x.dim() + 2))
        if reps:
            assert torch.equal(x.to(DEV).repeat(*reps).cpu(), x.repeat(*reps))
