"""gather, scatter (src/value, reduce=add/multiply), scatter_add, scatter_reduce (sum/prod/mean/
amax/amin, include_self), advanced indexing (x[idx], x[:, idx], x[mask], broadcast index tensors,
index_put_ with and without accumulate), nonzero / torch.where(cond) / argwhere, masked_select and
masked_scatter_ run natively on opencl, against CPU: dtypes, 0-size and 0-d tensors, non-contiguous
operands, negative and duplicate indices, out= forms, bad indices (CPU's error, device still usable)
and gradients."""

import pytest
import torch

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
HAS_FP64 = True
try:
    torch.zeros(1, dtype=torch.float64, device=DEV) + 1
except RuntimeError:
    HAS_FP64 = False
FLOATS = [torch.float32] + ([torch.float64] if HAS_FP64 else [])
DTYPES = FLOATS + [torch.int64, torch.bool]


def data(*shape, dtype=torch.float32, seed=0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3
    return (x > 0) if dtype == torch.bool else x.to(dtype)


def gen(seed=1):
    return torch.Generator().manual_seed(seed)


def noncontig(t):
    """The same values, laid out with gaps and a transposed stride order."""
    if t.dim() < 2:
        return torch.stack([t, t], -1)[..., 0]
    big = torch.empty(t.shape[::-1] + (2,), dtype=t.dtype).transpose(0, t.dim() - 1)[..., 0]
    big.copy_(t)
    assert not big.is_contiguous()
    return big


def to_dev(t):
    """A device copy keeping the CPU tensor's strides (so non-contiguous stays non-contiguous)."""
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=DEV)
    out.copy_(t)
    return out


def same_error(cpu_fn, dev_fn):
    """dev_fn raises what cpu_fn raises (type and first line), natively, and the device still works."""
    with pytest.raises(Exception) as cpu_err:
        cpu_fn()
    with native_only(), pytest.raises(type(cpu_err.value)) as dev_err:
        dev_fn()
    assert str(dev_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]
    with native_only():
        y = torch.arange(6, device=DEV).reshape(2, 3)[:, torch.tensor([2, 0], device=DEV)]
    assert y.cpu().tolist() == [[2, 0], [5, 3]]


# ---- gather ----


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_cpu(dtype):
    x = data(4, 5, 6, dtype=dtype)
    g = gen()
    with native_only():
        for dim in [0, 1, 2, -1]:
            shape = [3, 4, 5]
            shape[dim] = 7
            idx = torch.randint(0, x.shape[dim], shape, generator=g)
            torch.testing.assert_close(torch.gather(x.to(DEV), dim, idx.to(DEV)).cpu(), torch.gather(x, dim, idx))
        # non-contiguous self and index
        idx = torch.randint(0, 4, (4, 5, 6), generator=g)
        xn, idn = noncontig(x), noncontig(idx)
        torch.testing.assert_close(torch.gather(to_dev(xn), 0, to_dev(idn)).cpu(), torch.gather(xn, 0, idn))


def test_gather_edge_cases_and_out():
    x = data(4, 3)
    with native_only():
        empty = torch.gather(x.to(DEV), 1, torch.empty(4, 0, dtype=torch.long, device=DEV))
        assert empty.shape == (4, 0)
        s = torch.gather(torch.tensor(5.0, device=DEV), 0, torch.tensor(0, device=DEV))
        assert s.shape == () and s.item() == 5.0
        out = torch.empty(0, device=DEV)
        idx = torch.tensor([[2, 0], [1, 1]])
        ret = torch.gather(x.to(DEV), 1, idx.to(DEV), out=out)
        assert ret is out
        i32 = torch.gather(x.to(DEV), 1, idx.to(torch.int32).to(DEV))
    torch.testing.assert_close(out.cpu(), torch.gather(x, 1, idx))
    torch.testing.assert_close(i32.cpu(), torch.gather(x, 1, idx.to(torch.int32)))


@pytest.mark.parametrize("bad", [4, -1])
def test_gather_out_of_range_raises_like_cpu(bad):
    x, idx = data(4, 3), torch.tensor([[0, bad]])
    same_error(lambda: torch.gather(x, 0, idx), lambda: torch.gather(x.to(DEV), 0, idx.to(DEV)))


# ---- scatter family ----


def unique_index(shape, dim, size, g):
    """Indices along `dim` without duplicates in any line (assignments are then deterministic)."""
    lines = torch.rand(shape[:dim] + (size,) + shape[dim + 1:], generator=g).argsort(dim)
    return lines.narrow(dim, 0, shape[dim]).contiguous()


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_src_and_value_match_cpu(dtype):
    x, src = data(5, 6, dtype=dtype), data(3, 6, dtype=dtype, seed=2)
    g = gen()
    with native_only():
        for dim in [0, 1]:
            idx = unique_index((3, 4), dim, x.shape[dim], g)
            torch.testing.assert_close(x.to(DEV).scatter(dim, idx.to(DEV), src.to(DEV)).cpu(), x.scatter(dim, idx, src))
            torch.testing.assert_close(x.to(DEV).scatter(dim, idx.to(DEV), 1).cpu(), x.scatter(dim, idx, 1))
            xd = to_dev(noncontig(x))
            xd.scatter_(dim, idx.to(DEV), src.to(DEV))
            torch.testing.assert_close(xd.cpu(), x.scatter(dim, idx, src))
        out = torch.empty(0, dtype=dtype, device=DEV)
        ret = torch.scatter(x.to(DEV), 1, idx.to(DEV), src.to(DEV), out=out)
        assert ret is out
    torch.testing.assert_close(out.cpu(), torch.scatter(x, 1, idx, src))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
def test_scatter_reduce_add_multiply_with_duplicates(dtype):
    x, src = data(4, 5, dtype=dtype), data(6, 5, dtype=dtype, seed=3)
    idx = torch.randint(0, 4, (6, 5), generator=gen())
    with native_only():
        for reduce in ["add", "multiply"]:
            torch.testing.assert_close(x.to(DEV).scatter(0, idx.to(DEV), src.to(DEV), reduce=reduce).cpu(),
                                       x.scatter(0, idx, src, reduce=reduce))
            torch.testing.assert_close(x.to(DEV).scatter(0, idx.to(DEV), 2, reduce=reduce).cpu(),
                                       x.scatter(0, idx, 2, reduce=reduce))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bfloat16, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_scatter_add_duplicates_match_cpu(dtype):
    # Small integer values: sums are exact in every dtype, whatever order the atomic adds run in.
    x = torch.randint(0, 3, (4, 5), generator=gen(4)).to(dtype)
    src = torch.randint(0, 3, (40, 5), generator=gen(5)).to(dtype)
    idx = torch.randint(0, 4, (40, 5), generator=gen(6))
    with native_only():
        got = x.to(DEV).scatter_add(0, idx.to(DEV), src.to(DEV))
        idx2 = torch.randint(0, 5, (4, 9), generator=gen(7))
        src2 = noncontig(src[:9, :4].t())  # (4, 9), strided
        got_t = to_dev(noncontig(x)).scatter_add_(1, to_dev(idx2), to_dev(src2))
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch.scatter_add(x.to(DEV), 0, idx.to(DEV), src.to(DEV), out=out)
    torch.testing.assert_close(got.cpu(), x.scatter_add(0, idx, src))
    torch.testing.assert_close(got_t.cpu(), x.scatter_add(1, idx2, src2))
    torch.testing.assert_close(out.cpu(), x.scatter_add(0, idx, src))


@pytest.mark.parametrize("dtype,n", [(torch.float32, 2_000_000), (torch.int64, 2_000_000), (torch.int16, 60_000)])
def test_scatter_add_and_index_put_many_collisions(dtype, n):
    # n ones land in 3 slots: the atomic adds (CAS loops on 4 and 8-byte elements, and on the word
    # holding a 2-byte one) lose none. Plain read-modify-writes lose thousands at 2M on PoCL.
    idx = torch.randint(0, 3, (n,), generator=gen(8))
    want = torch.bincount(idx, minlength=3).to(dtype)
    with native_only():
        ones, didx = torch.ones(n, dtype=dtype, device=DEV), idx.to(DEV)
        got = torch.zeros(3, dtype=dtype, device=DEV).scatter_add_(0, didx, ones)
        put = torch.zeros(3, dtype=dtype, device=DEV).index_put_((didx,), ones, accumulate=True)
        neg = torch.full((40,), -1, dtype=dtype, device=DEV)
        prod = torch.ones(3, dtype=dtype, device=DEV).scatter_reduce_(0, didx[:40], neg, "prod")
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(put.cpu(), want)
    torch.testing.assert_close(prod.cpu(), torch.ones(3, dtype=dtype).scatter_reduce_(0, idx[:40], neg.cpu(), "prod"))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_two_matches_cpu(dtype, reduce):
    x, src = data(4, 5, dtype=dtype), data(7, 5, dtype=dtype, seed=3)
    idx = torch.randint(0, 3, (7, 5), generator=gen(9))  # row 3 never hit: include_self=False keeps it
    with native_only():
        for include_self in [True, False]:
            got = x.to(DEV).scatter_reduce(0, idx.to(DEV), src.to(DEV), reduce, include_self=include_self)
            torch.testing.assert_close(got.cpu(), x.scatter_reduce(0, idx, src, reduce, include_self=include_self))


def test_scatter_reduce_nan_propagates_like_cpu():
    x = torch.tensor([1.0, float("nan"), 3.0])
    src = torch.tensor([float("nan"), 5.0, 0.5, 2.0])
    idx = torch.tensor([0, 1, 2, 2])
    with native_only():
        for reduce in ["amax", "amin"]:
            torch.testing.assert_close(x.to(DEV).scatter_reduce(0, idx.to(DEV), src.to(DEV), reduce).cpu(),
                                       x.scatter_reduce(0, idx, src, reduce), equal_nan=True)


@pytest.mark.parametrize("bad", [5, -1])
def test_scatter_out_of_range_raises_like_cpu(bad):
    x, idx = data(4, 5), torch.tensor([[0, bad]])
    same_error(lambda: x.clone().scatter_(1, idx, 1.0), lambda: x.to(DEV).scatter_(1, idx.to(DEV), 1.0))
    src = torch.ones(1, 2)
    same_error(lambda: x.scatter_add(1, idx, src), lambda: x.to(DEV).scatter_add(1, idx.to(DEV), src.to(DEV)))


# ---- advanced indexing ----


def index_cases():
    g = gen(10)
    i3 = torch.tensor([2, 0, -1, 1])
    r = torch.randint(0, 3, (2, 2, 2), generator=g)
    return [
        (lambda x: x[i3]),
        (lambda x: x[:, i3]),
        (lambda x: x[..., torch.tensor([[0, 4], [-5, 2]])]),
        (lambda x: x[i3, :, torch.tensor([1, 3, 0, 2])]),                 # not adjacent: indexed dims first
        (lambda x: x[torch.tensor([[0], [2]]), torch.tensor([1, 2, 3])]),  # broadcast together
        (lambda x: x[1:, torch.tensor([0, 2])]),
        (lambda x: x[None, :, torch.tensor([1, 1, 1])]),
        (lambda x: x[i3.to(torch.int32)]),
        (lambda x: x[r]),
        (lambda x: x[torch.empty(0, dtype=torch.long)]),
        (lambda x: x[:, :, torch.tensor([4, 0])]),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_matches_cpu(dtype):
    x = data(3, 4, 5, dtype=dtype)
    with native_only():
        for case in index_cases():
            want = case(x)
            torch.testing.assert_close(case(x.to(DEV)).cpu(), want)
            torch.testing.assert_close(case(to_dev(noncontig(x))).cpu(), want)
        # index tensors on the device, and boolean masks (through nonzero)
        for m in [x.ne(0) if dtype == torch.bool else x > 0, (x > 0)[:, :, 0], torch.zeros(3, 4, 5, dtype=torch.bool)]:
            m = m if dtype != torch.bool else m.bool()
            torch.testing.assert_close(x.to(DEV)[m.to(DEV)].cpu(), x[m])
        torch.testing.assert_close(x.to(DEV)[:, torch.tensor([3, 0], device=DEV)].cpu(), x[:, [3, 0]])


def test_index_out_form_and_empty_dims():
    x = data(3, 4)
    idx = torch.tensor([2, 0])
    with native_only():
        out = torch.empty(0, device=DEV)
        ret = torch.ops.aten.index.Tensor_out(x.to(DEV), [None, idx.to(DEV)], out=out)
        assert ret is out
        z = torch.zeros(0, 4, device=DEV)[:, idx.to(DEV)]
        assert z.shape == (0, 2)
    torch.testing.assert_close(out.cpu(), x[:, idx])
    same_error(lambda: torch.zeros(0, 3)[torch.tensor([0])], lambda: torch.zeros(0, 3, device=DEV)[torch.tensor([0])])


@pytest.mark.parametrize("bad", [(4, None), (-5, None), (None, 7)])
def test_index_out_of_range_raises_like_cpu(bad):
    x = data(4, 5)
    row, col = bad
    key = (torch.tensor([0, row]),) if row is not None else (slice(None), torch.tensor([col, 1]))
    dkey = tuple(k.to(DEV) if isinstance(k, torch.Tensor) else k for k in key)
    same_error(lambda: x[key], lambda: x.to(DEV)[dkey])
    same_error(lambda: x.clone().index_put_(key, torch.tensor(1.0)), lambda: x.to(DEV).index_put_(dkey, torch.tensor(1.0)))


def test_index_shape_errors_like_cpu():
    x = data(4, 5)
    a, b = torch.tensor([0, 1, 2]), torch.tensor([0, 1])
    same_error(lambda: x[a, b], lambda: x.to(DEV)[a.to(DEV), b.to(DEV)])
    m = torch.ones(3, dtype=torch.bool)
    same_error(lambda: x[m], lambda: x.to(DEV)[m.to(DEV)])
    same_error(lambda: x.clone().index_put_((a,), torch.ones(2, 2)), lambda: x.to(DEV).index_put_((a.to(DEV),), torch.ones(2, 2, device=DEV)))
    same_error(lambda: x.clone().index_put_((a,), torch.ones(5, dtype=torch.int64)),
               lambda: x.to(DEV).index_put_((a.to(DEV),), torch.ones(5, device=DEV, dtype=torch.int64)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put_matches_cpu(dtype):
    x = data(5, 4, 3, dtype=dtype)
    idx = torch.tensor([4, 0, -2])  # no duplicates: assignment order does not matter
    mask = data(5, 4, 3, seed=6) > 0
    cases = [
        ((idx,), data(3, 4, 3, dtype=dtype, seed=2)),                                # whole rows
        ((idx,), data(3, dtype=dtype, seed=2)),                                      # a broadcast value
        ((slice(None), torch.tensor([3, 1])), data(5, 2, 3, dtype=dtype, seed=2)),
        ((idx, slice(None), torch.tensor([2, 0, 1])), data(3, 4, dtype=dtype, seed=2)),  # not adjacent
        ((mask,), data(int(mask.sum()), dtype=dtype, seed=5)),                       # a value per element
        ((mask[:, :, 0],), data(3, dtype=dtype, seed=5)),
        ((idx,), torch.tensor(True if dtype == torch.bool else 7, dtype=dtype)),       # a CPU 0-d value
        ((mask,), torch.tensor(False if dtype == torch.bool else -3, dtype=dtype)),    # masked_fill_
    ]
    with native_only():
        for key, val in cases:
            want = x.clone()
            want[key] = val
            dkey = tuple(k.to(DEV) if isinstance(k, torch.Tensor) else k for k in key)
            dval = val if val.dim() == 0 else val.to(DEV)
            for start in [x.to(DEV), to_dev(noncontig(x))]:
                start[dkey] = dval
                torch.testing.assert_close(start.cpu(), want)


def test_non_contiguous_out_and_scalar_value_accumulate():
    x = data(4, 5)
    idx = torch.tensor([[3, 0, 1, 1, 2], [0, 0, 3, 2, 1]])
    rows = torch.tensor([2, 0, 2])
    with native_only():
        out = torch.empty(5, 2, device=DEV).t()  # (2, 5), transposed strides
        torch.gather(x.to(DEV), 0, idx.to(DEV), out=out)
        out2 = torch.empty(5, 3, device=DEV).t()
        torch.ops.aten.index.Tensor_out(x.to(DEV), [rows.to(DEV)], out=out2)
        acc = x.to(DEV).index_put_((rows.to(DEV),), torch.tensor(1.5), accumulate=True)  # CPU 0-d value
    torch.testing.assert_close(out.cpu(), torch.gather(x, 0, idx))
    torch.testing.assert_close(out2.cpu(), x[rows])
    torch.testing.assert_close(acc.cpu(), x.clone().index_put_((rows,), torch.tensor(1.5), accumulate=True))


def test_too_many_strided_dims_is_a_clear_error():
    # Nine dims whose strides cannot be merged: refused with a message, and the device keeps working.
    x = torch.randn([2] * 9, device=DEV).permute(*reversed(range(9)))
    idx = torch.zeros([2] * 9, dtype=torch.long, device=DEV)
    with native_only(), pytest.raises(RuntimeError, match="make the operands contiguous first"):
        torch.gather(x, 0, idx)
    with native_only():
        torch.testing.assert_close(torch.gather(x.contiguous(), 0, idx).cpu(), torch.gather(x.cpu().contiguous(), 0, idx.cpu()))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bfloat16, torch.int32, torch.int16, torch.uint8])
def test_index_put_accumulate_with_duplicates(dtype):
    x = torch.randint(0, 3, (6, 3), generator=gen(11)).to(dtype)
    v = torch.randint(0, 3, (50, 3), generator=gen(12)).to(dtype)
    idx = torch.randint(-6, 6, (50,), generator=gen(13))
    with native_only():
        got = x.to(DEV).index_put_((idx.to(DEV),), v.to(DEV), accumulate=True)
        got2 = to_dev(noncontig(x)).index_put_((idx.to(DEV)[:10], torch.tensor([1], device=DEV)), v[:10, 0].to(DEV),
                                               accumulate=True)
        got3 = torch.index_put(x.to(DEV), (idx.to(DEV),), v[0].to(DEV), accumulate=True)  # broadcast value
    torch.testing.assert_close(got.cpu(), x.clone().index_put_((idx,), v, accumulate=True))
    torch.testing.assert_close(got2.cpu(), x.clone().index_put_((idx[:10], torch.tensor([1])), v[:10, 0], accumulate=True))
    torch.testing.assert_close(got3.cpu(), torch.index_put(x, (idx,), v[0], accumulate=True))


# ---- nonzero, masked_select, masked_scatter_ ----


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_matches_cpu(dtype):
    with native_only():
        for shape in [(), (0,), (7,), (3, 0, 2), (4, 5, 6), (70000,)]:  # the last spans many chunks
            x = data(*shape, dtype=dtype, seed=3)
            if dtype != torch.bool and x.numel():
                x = x * (x.abs() > 2)  # mostly zeros
            assert torch.equal(torch.nonzero(x.to(DEV)).cpu(), torch.nonzero(x))
        x = data(4, 6, dtype=dtype)
        xn = noncontig(x)
        assert torch.equal(torch.nonzero(to_dev(xn)).cpu(), torch.nonzero(xn))
        assert torch.equal(torch.argwhere(x.to(DEV)).cpu(), torch.argwhere(x))
        for got, want in zip(torch.where(x.to(DEV)), torch.where(x)):
            assert torch.equal(got.cpu(), want)
        for got, want in zip(torch.nonzero(x.to(DEV), as_tuple=True), torch.nonzero(x, as_tuple=True)):
            assert torch.equal(got.cpu(), want)
        out = torch.empty(0, dtype=torch.long, device=DEV)
        ret = torch.nonzero(x.to(DEV), out=out)
        assert ret is out
    assert torch.equal(out.cpu(), torch.nonzero(x))


def test_nonzero_static_and_count_nonzero_match_cpu():
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    with native_only():
        for size, fill in [(0, -1), (2, -1), (6, 9)]:
            assert torch.equal(torch.nonzero_static(x.to(DEV), size=size, fill_value=fill).cpu(),
                               torch.nonzero_static(x, size=size, fill_value=fill))
        for dim in [None, 0, (0, 1)]:
            assert torch.equal(torch.count_nonzero(x.to(DEV), dim=dim).cpu(), torch.count_nonzero(x, dim=dim))


def test_nonzero_counts_nan_and_not_negative_zero():
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0, float("inf")])
    with native_only():
        assert torch.equal(torch.nonzero(x.to(DEV)).cpu(), torch.nonzero(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_matches_cpu(dtype):
    x = data(4, 5, dtype=dtype)
    with native_only():
        for mask in [data(4, 5, seed=7) > 0, data(5, seed=8) > 0, torch.zeros(4, 5, dtype=torch.bool), torch.ones(1, dtype=torch.bool)]:
            torch.testing.assert_close(torch.masked_select(x.to(DEV), mask.to(DEV)).cpu(), torch.masked_select(x, mask))
        xn, mask = noncontig(x), data(4, 5, seed=9) > 0
        torch.testing.assert_close(torch.masked_select(to_dev(xn), to_dev(noncontig(mask))).cpu(), torch.masked_select(xn, mask))
        # the mask broadcast against a smaller self
        torch.testing.assert_close(torch.masked_select(x[0].to(DEV), mask.to(DEV)).cpu(), torch.masked_select(x[0], mask))
        out = torch.empty(0, dtype=dtype, device=DEV)
        ret = torch.masked_select(x.to(DEV), mask.to(DEV), out=out)
        assert ret is out
        empty = torch.masked_select(torch.zeros(0, 3, device=DEV), torch.zeros(0, 3, dtype=torch.bool, device=DEV))
        assert empty.shape == (0,)
    torch.testing.assert_close(out.cpu(), torch.masked_select(x, mask))


def test_printing_a_tensor_runs_natively():
    x = torch.tensor([[1.5, -2.0, 0.0], [float("inf"), 3.25, float("nan")]])
    with native_only():
        text = repr(x.to(DEV))
        text_int = repr(torch.arange(5, device=DEV))
    assert text.replace(", device='opencl:0'", "") == repr(x)
    assert "tensor([0, 1, 2, 3, 4], device='opencl:0')" == text_int


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_scatter_matches_cpu(dtype):
    x = data(4, 5, dtype=dtype)
    src = data(30, dtype=dtype, seed=4)
    with native_only():
        for mask in [data(4, 5, seed=7) > 0, data(5, seed=8) > 0, torch.zeros(4, 5, dtype=torch.bool)]:
            torch.testing.assert_close(x.to(DEV).masked_scatter_(mask.to(DEV), src.to(DEV)).cpu(),
                                       x.clone().masked_scatter_(mask, src))
            torch.testing.assert_close(to_dev(noncontig(x)).masked_scatter_(mask.to(DEV), src.to(DEV)).cpu(),
                                       x.clone().masked_scatter_(mask, src))
            torch.testing.assert_close(torch.masked_scatter(x.to(DEV), mask.to(DEV), src.to(DEV)).cpu(),
                                       torch.masked_scatter(x, mask, src))
    mask = torch.ones(4, 5, dtype=torch.bool)
    same_error(lambda: x.clone().masked_scatter_(mask, src[:3]), lambda: x.to(DEV).masked_scatter_(mask.to(DEV), src[:3].to(DEV)))


# ---- gradients (PyTorch's formulas over these same operators) ----


def grads(fn, *inputs):
    """fn's output and the gradients of its float inputs, on CPU and on the device."""
    results = []
    for device in ["cpu", DEV]:
        leaves = [t.detach().to(device).requires_grad_(t.is_floating_point()) if isinstance(t, torch.Tensor) else t
                  for t in inputs]
        args = [t.to(device) if isinstance(t, torch.Tensor) and not t.is_floating_point() else t for t in leaves]
        out = fn(*args)
        g = torch.linspace(-1, 1, out.numel()).reshape(out.shape).to(device)
        if device == DEV:
            with native_only():
                out.backward(g)
        else:
            out.backward(g)
        results.append([out.detach().cpu()] + [t.grad.cpu() for t in leaves
                                               if isinstance(t, torch.Tensor) and t.requires_grad])
    return results


@pytest.mark.parametrize("name", ["index", "index_2d", "mask", "index_put_acc", "gather", "scatter", "scatter_add",
                                  "scatter_reduce_sum", "scatter_reduce_amax", "scatter_reduce_mean", "masked_select",
                                  "masked_scatter"])
def test_gradients_match_cpu(name):
    x, s = data(5, 4), data(6, 4, seed=2)
    idx = torch.tensor([3, 0, 3, -1, 2, 0])
    gidx = torch.randint(0, 5, (6, 4), generator=gen(14))
    uidx = unique_index((3, 4), 0, 5, gen(15))
    mask = data(5, 4, seed=3) > 0
    fns = {
        "index": (lambda a: a[idx.to(a.device)] * 2, x),
        "index_2d": (lambda a: a[idx.to(a.device)[:4], torch.tensor([1, 1, 0, 3], device=a.device)], x),
        "mask": (lambda a: a[mask.to(a.device)], x),
        "index_put_acc": (lambda a, b: a.index_put((idx.to(a.device),), b, accumulate=True), x, s),
        "gather": (lambda a: torch.gather(a, 0, gidx.to(a.device)), x),
        "scatter": (lambda a, b: a.scatter(0, uidx.to(a.device), b[:3]), x, s),
        "scatter_add": (lambda a, b: a.scatter_add(0, gidx.to(a.device), b), x, s),
        "scatter_reduce_sum": (lambda a, b: a.scatter_reduce(0, gidx.to(a.device), b, "sum"), x, s),
        "scatter_reduce_amax": (lambda a, b: a.scatter_reduce(0, gidx.to(a.device), b, "amax", include_self=False), x, s),
        "scatter_reduce_mean": (lambda a, b: a.scatter_reduce(0, gidx.to(a.device), b, "mean"), x, s),
        "masked_select": (lambda a: torch.masked_select(a, mask.to(a.device)), x),
        "masked_scatter": (lambda a, b: a.masked_scatter(mask.to(a.device), b), x, s),
    }
    fn, *inputs = fns[name]
    cpu, dev = grads(fn, *inputs)
    for c, d in zip(cpu, dev):
        torch.testing.assert_close(d, c, rtol=1e-4, atol=1e-5)
