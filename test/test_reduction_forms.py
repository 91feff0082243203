"""Reductions, scans, embedding backward, index_add and index_put_(accumulate=True) in both kernel
classes (runtime/kernel_forms.h): scripts/test.sh runs this file again with
TORCH_OPENCL_KERNEL_CLASS=gpu, where the GPU forms (reduce_rows/reduce_cols, scan_tiles and its chunk
passes, sorted segmented sums) serve. Shapes reach each branch of each form: long, short and
medium rows, chunked two-pass reductions, columns, middle dims, several reduced dims, strided
inputs, empty ones, NaN, float64 and integer dtypes, duplicate indices, padding_idx. Where the path
matters the test checks the kernels the profiler saw."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_opencl
from _device_helpers import assert_same_as_cpu, launched_kernels, native_only

DEV = "opencl"
GPU = torch_opencl._C._device_properties(0)["kernel_class"] == "gpu"


def kernels_run(fn):
    """The names of the device kernels fn enqueues (recorded at launch: no profiler needed)."""
    fn()  # compiled before recording
    torch.opencl.synchronize()
    with launched_kernels() as names:
        fn()
        torch.opencl.synchronize()
    return set(names)


def check(fn, x, rtol=1e-4, atol=1e-5):
    want = fn(x)
    with native_only():
        got = fn(x.to(DEV))
    assert_same_as_cpu(got, want, rtol=rtol, atol=atol)


# ---- reductions ----

# (shape, dims): long rows (chunked: two passes), medium and short rows (several per group), a full
# reduction, columns (few and many outputs, chunked), a middle dim, two reduced dims, odd sizes.
SHAPES = [
    ((3, 5000), (-1,)),
    ((70, 300), (-1,)),
    ((1000, 7), (-1,)),
    ((100003,), None),
    ((3000, 40), (0,)),
    ((5000, 3), (0,)),
    ((6, 500, 7), (1,)),
    ((4, 30, 50), (0, 2)),
    ((33, 1025), (0, 1)),
]


@pytest.mark.parametrize("shape,dims", SHAPES)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "var", "std", "norm", "logsumexp"])
def test_float_reductions(shape, dims, op):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    d = dims if dims is not None else tuple(range(x.dim()))
    fns = {
        "sum": lambda t: t.sum(d),
        "mean": lambda t: t.mean(d),
        "amax": lambda t: t.amax(d),
        "amin": lambda t: t.amin(d),
        "var": lambda t: t.var(d),
        "std": lambda t: t.std(d, correction=0),
        "norm": lambda t: torch.linalg.vector_norm(t, 3.0, d),
        "logsumexp": lambda t: torch.logsumexp(t, d),
    }
    if op in ("sum", "mean"):
        # Sums against the exact (float64) ones, within twice the pairwise-summation bound of float32
        # rounding, (log2(n) + 1) * eps * the same sum of |x| (a dropped or doubled element of 3000x40's sum(0)
        # larger than 4e-3 fails it): CPU's own float32 result is off the exact one by that order (3.4e-5 for
        # sum(0) of 3000x40 over 20 seeds, more than an absolute 1e-5; 0.45 of the bound for rows of 7).
        n = x.numel() // fns[op](x).numel()
        exact, magnitude = fns[op](x.double()), fns[op](x.double().abs())
        with native_only():
            got = fns[op](x.to(DEV)).cpu()
        assert got.dtype == torch.float32 and got.shape == exact.shape
        bound = 2 * (math.log2(n) + 1) * 2.0**-24 * magnitude
        assert ((got.double() - exact).abs() <= bound).all(), ((got.double() - exact).abs() / bound).max()
        return
    check(fns[op], x)


@pytest.mark.parametrize("shape,dims", SHAPES)
def test_prod_float64_and_integers(shape, dims):
    torch.manual_seed(1)
    d = dims if dims is not None else tuple(range(len(shape)))
    x = 1 + 1e-3 * torch.randn(*shape, dtype=torch.float64)
    check(lambda t: t.prod(d[0]) if len(d) == 1 else t.prod(), x, rtol=1e-10, atol=0)
    check(lambda t: t.sum(d), x, rtol=1e-10, atol=1e-10)
    i = torch.randint(-1000, 1000, shape)
    check(lambda t: t.sum(d), i, rtol=0, atol=0)
    check(lambda t: t.amax(d), i, rtol=0, atol=0)
    b = torch.rand(*shape) > 0.999
    check(lambda t: t.any(d[0]) if len(d) == 1 else t.any(), b, rtol=0, atol=0)
    check(lambda t: (~t).all(d[0]) if len(d) == 1 else (~t).all(), b, rtol=0, atol=0)


@pytest.mark.parametrize("shape,dims", SHAPES)
def test_arg_reductions_take_the_first_of_ties_as_cpu(shape, dims):
    torch.manual_seed(2)
    x = torch.randint(0, 5, shape).float()  # many ties
    dim = dims[0] if dims is not None and len(dims) == 1 else None
    check(lambda t: t.argmax(dim), x, rtol=0, atol=0)
    check(lambda t: t.argmin(dim), x, rtol=0, atol=0)
    if dim is not None:
        check(lambda t: tuple(t.max(dim)), x, rtol=0, atol=0)
        check(lambda t: tuple(t.min(dim)), x, rtol=0, atol=0)


@pytest.mark.parametrize("shape,dims", [((3, 5000), (-1,)), ((3000, 40), (0,)), ((100003,), None), ((1000, 7), (-1,))])
def test_nan_propagates(shape, dims):
    x = torch.randn(*shape)
    x.view(-1)[x.numel() // 2] = float("nan")
    d = dims if dims is not None else tuple(range(x.dim()))
    check(lambda t: t.amax(d), x)
    check(lambda t: t.amin(d), x)
    check(lambda t: t.sum(d), x)
    check(lambda t: t.argmax(d[0]) if dims else t.argmax(), x, rtol=0, atol=0)


# Contiguous runs in the CPU forms load 16 elements as one vector where the input is the accumulate type
# (float, double) and add the tail one by one: lengths either side of 16 and its multiples, NaN in the
# vector body and in the tail, infinities, for each op that takes the vector path (var/std through their
# max and centered-mean passes).
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [15, 16, 17, 47, 256, 4099])
@pytest.mark.parametrize("special", ["none", "nan_body", "nan_tail", "inf"])
def test_vector_runs(dtype, n, special):
    torch.manual_seed(n)
    x = torch.randn(3, n, dtype=dtype)
    if special == "nan_body":
        x[1, min(5, n - 1)] = float("nan")
    elif special == "nan_tail":
        x[2, n - 1] = float("nan")
    elif special == "inf":
        x[0, n // 2], x[2, n - 1] = float("inf"), float("-inf")
    for op in (lambda t: t.sum(1), lambda t: t.mean(1), lambda t: t.var(1), lambda t: t.std(1),
               lambda t: t.amax(1), lambda t: t.amin(1), lambda t: torch.linalg.vector_norm(t, 1, dim=1),
               lambda t: torch.linalg.vector_norm(t, dim=1), lambda t: torch.linalg.vector_norm(t, float("inf"), dim=1),
               lambda t: t.sum(), lambda t: torch.linalg.vector_norm(t)):
        check(op, x)


# Column sums (outputs adjacent in the input, reduce_columns in the CPU class): widths either side of 16
# and its multiples, heights either side of four rows and of one pass (1024 rows), a strided output, mean,
# float64, NaN and inf in a column.
@pytest.mark.parametrize("rows,cols", [(1, 5), (3, 16), (7, 17), (256, 33), (1024, 48), (1025, 70), (4099, 3)])
def test_column_sums(rows, cols):
    torch.manual_seed(rows + cols)
    x = torch.randn(rows, cols)
    check(lambda t: t.sum(0), x)
    check(lambda t: t.mean(0), x)
    check(lambda t: t.sum(0), x.double())
    check(lambda t: t.sum((0, 1)) if t.dim() == 3 else t.view(rows, 1, cols).sum(0), x)
    y = x.clone()
    y[rows // 2, cols - 1] = float("nan")
    y[0, 0] = float("inf")
    check(lambda t: t.sum(0), y)
    # Column maxima and minima (reduce_columns too): NaN wins, inf and -inf, a column of -inf only.
    for z in (x, y):
        check(lambda t: t.amax(0), z)
        check(lambda t: t.amin(0), z)
        check(lambda t: t.amax(0), z.double())
    w = y.clone()
    w[:, 0] = float("-inf")
    w[-1, cols // 2] = float("nan")  # in the last chunk of the tall shapes
    check(lambda t: t.amax(0), w)
    check(lambda t: t.amin(0), -w)
    with native_only():  # into a strided out=
        out = torch.empty(cols, 2, device=DEV)[:, 1]
        torch.sum(x.to(DEV), 0, out=out)
    torch.testing.assert_close(out.cpu(), x.sum(0), rtol=1e-4, atol=1e-5)


def test_strided_and_empty_inputs():
    torch.manual_seed(3)
    x = torch.randn(300, 200)
    check(lambda t: t.t().sum(1), x)       # rows read with a stride
    check(lambda t: t.t().sum(0), x)
    check(lambda t: t[:, ::3].amax(0), x)
    check(lambda t: t[::2, 1::2].mean((0, 1)), x)
    check(lambda t: t.sum(0), torch.randn(0, 5))
    check(lambda t: t.sum(1), torch.randn(5, 0))
    check(lambda t: t.mean(1), torch.randn(5, 0))  # NaN as on CPU
    check(lambda t: t.sum(), torch.randn(0))


def test_training_shapes():
    # AdamW/clip_grad_norm_ (full norms), the loss mean, bias gradients (sum over the batch).
    torch.manual_seed(4)
    g = torch.randn(8192, 384)
    # Sums of 8192 terms of order 1: CPU and opencl are each about 5e-5 off the float64 sum.
    check(lambda t: t.sum(0), g, atol=2e-4)
    check(lambda t: torch.linalg.vector_norm(t), g)
    check(lambda t: t.mean(), g)


def test_reduction_kernels_follow_the_kernel_class():
    rows = torch.randn(64, 1000, device=DEV)
    cols = torch.randn(1000, 64, device=DEV)
    big = torch.randn(100000, device=DEV)
    if GPU:
        assert "reduce_rows" in kernels_run(lambda: rows.sum(-1))
        assert "reduce_cols" in kernels_run(lambda: cols.sum(0))
        assert {"reduce_rows", "reduce_partials"} <= kernels_run(lambda: big.sum())
        assert {"reduce_cols", "reduce_outer_partials"} <= kernels_run(lambda: cols[:, :8].sum(0))
    else:
        seen = kernels_run(lambda: (rows.sum(-1), cols.sum(0), big.sum(), cols.amax(0), cols.prod(0)))  # prod: outer
        assert not {"reduce_rows", "reduce_cols"} & seen, seen
        assert {"reduce_columns", "reduce_outer", "reduce_group"} <= seen, seen
        assert "reduce_outer" not in kernels_run(lambda: cols.amax(0))
        # A linear layer's bias gradient (a sum over a batch of 128): one pass of 16 outputs a work-item;
        # columns longer than 1024 rows are summed in chunks of 256 rows, then the chunks' sums.
        grad, tall = torch.randn(128, 256, device=DEV), torch.randn(32768, 64, device=DEV)
        torch.opencl.synchronize()
        with launched_kernels() as names:
            grad.sum(0)
            torch.opencl.synchronize()
        assert names == ["reduce_columns"], names
        assert {"reduce_columns", "reduce_outer_partials"} <= kernels_run(lambda: tall.sum(0))


# ---- scans ----

# (shape, dim): long lines (chunked), short lines sharing a group, strided lines (few: the parallel
# form; many: a work-item per line in both classes), odd sizes.
SCAN_SHAPES = [((3, 5000), -1), ((200, 37), -1), ((40, 3), 0), ((900, 300), 0), ((10, 3000), 0), ((7, 1), 1),
               ((5, 6, 70), 1)]


@pytest.mark.parametrize("shape,dim", SCAN_SHAPES)
def test_value_scans(shape, dim):
    torch.manual_seed(5)
    x = torch.randn(*shape)
    check(lambda t: torch.cumsum(t, dim), x, rtol=1e-5, atol=1e-4)
    check(lambda t: torch.logcumsumexp(t, dim), x, rtol=1e-5, atol=1e-5)
    near_one = 1 + 1e-3 * x
    check(lambda t: torch.cumprod(t, dim), near_one, rtol=1e-5, atol=1e-6)
    i = torch.randint(-5, 5, shape)
    check(lambda t: torch.cumsum(t, dim), i, rtol=0, atol=0)
    check(lambda t: torch.cumprod(t.clamp(1, 2), dim), i, rtol=0, atol=0)  # wraps as on CPU


@pytest.mark.parametrize("shape,dim", SCAN_SHAPES)
def test_cummax_cummin_ties_and_nan_as_cpu(shape, dim):
    torch.manual_seed(6)
    x = torch.randint(0, 4, shape).float()
    check(lambda t: tuple(torch.cummax(t, dim)), x, rtol=0, atol=0)
    check(lambda t: tuple(torch.cummin(t, dim)), x, rtol=0, atol=0)
    x.view(-1)[x.numel() // 3] = float("nan")
    x.view(-1)[x.numel() // 2] = float("nan")
    check(lambda t: tuple(torch.cummax(t, dim)), x, rtol=0, atol=0)
    check(lambda t: tuple(torch.cummin(t, dim)), x, rtol=0, atol=0)
    i = torch.randint(-3, 3, shape)
    check(lambda t: tuple(torch.cummax(t, dim)), i, rtol=0, atol=0)


def test_scans_float64_in_place_and_strided():
    torch.manual_seed(7)
    x = torch.randn(4, 3000, dtype=torch.float64)
    check(lambda t: torch.cumsum(t, 1), x, rtol=1e-12, atol=1e-12)
    check(lambda t: t.clone().cumsum_(1), torch.randn(6, 5000), rtol=1e-5, atol=1e-4)
    check(lambda t: torch.cumsum(t.t(), 1), torch.randn(3000, 4), rtol=1e-5, atol=1e-4)
    check(lambda t: torch.cumsum(t, 0), torch.randn(0, 3))


def test_scan_kernels_follow_the_kernel_class():
    long_lines = torch.randn(2, 20000, device=DEV)
    short = torch.randn(100, 30, device=DEV)
    if GPU:
        assert {"scan_chunk_totals", "scan_chunk_carries", "scan_tiles"} <= kernels_run(lambda: long_lines.cumsum(1))
        assert "scan_tiles" in kernels_run(lambda: torch.cummax(short, 1))
    else:
        # A work-item a line; where items are vectorised (Intel's CPU runtime), contiguous lines of sums
        # go through tiles of line_lanes lines (scan_lines_tiles).
        lanes = torch_opencl._C._device_properties(0)["line_lanes"] > 1
        seen = kernels_run(lambda: (long_lines.cumsum(1), torch.cummax(short, 1)))
        assert {"scan_lines_tiles" if lanes else "scan_lines", "scan_extreme_lines"} <= seen, seen
        assert "scan_tiles" not in seen, seen


# ---- embedding backward, index_add, index_put_(accumulate=True) ----

def embedding_grad(weight, indices, grad, **kwargs):
    w = weight.clone().requires_grad_()
    F.embedding(indices, w, **kwargs).backward(grad)
    return w.grad


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 3}, {"scale_grad_by_freq": True},
                                    {"padding_idx": 0, "scale_grad_by_freq": True}])
def test_embedding_backward(index_dtype, kwargs):
    torch.manual_seed(8)
    V, D = 50, 37
    # Runs of one index longer than several chunks of sorted positions, and rows never hit.
    idx = torch.cat([torch.randint(0, 40, (300,)), torch.full((200,), 3), torch.tensor([49])])
    idx = idx[torch.randperm(idx.numel())].reshape(3, -1).to(index_dtype)
    w = torch.randn(V, D)
    g = torch.randn(*idx.shape, D)
    want = embedding_grad(w, idx, g, **kwargs)
    with native_only():
        got = embedding_grad(w.to(DEV), idx.to(DEV), g.to(DEV), **kwargs)
    assert_same_as_cpu(got, want, rtol=1e-5, atol=1e-5)


def test_embedding_backward_small_float64_and_empty():
    w = torch.randn(6, 4, dtype=torch.float64)
    for idx in (torch.tensor([2]), torch.tensor([5, 5, 0]), torch.zeros(0, dtype=torch.long)):
        g = torch.randn(idx.numel(), 4, dtype=torch.float64)
        want = embedding_grad(w, idx, g)
        with native_only():
            got = embedding_grad(w.to(DEV), idx.to(DEV), g.to(DEV))
        assert_same_as_cpu(got, want)


def test_embedding_backward_is_deterministic_and_follows_the_kernel_class():
    torch.manual_seed(9)
    idx = torch.randint(0, 30, (4096,), device=DEV)
    g = torch.randn(4096, 64, device=DEV)
    run = lambda: torch.ops.aten.embedding_dense_backward(g, idx, 30, -1, False)  # noqa: E731
    assert torch.equal(run().cpu(), run().cpu())
    seen = kernels_run(run)
    if GPU:
        assert {"segment_chunk_sums", "segment_chunk_joins"} <= seen and "segment_column_walk" not in seen, seen
    else:
        assert "segment_column_walk" in seen and "segment_chunk_sums" not in seen, seen
    # With scale_grad_by_freq the CPU form sorts too (it divides each row's sum by its count).
    seen = kernels_run(lambda: torch.ops.aten.embedding_dense_backward(g, idx, 30, -1, True))
    assert "segment_chunk_sums" in seen and "segment_column_walk" not in seen, seen


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_add(dtype, dim):
    torch.manual_seed(10)
    shape = [7, 9, 11]
    n = 150
    index = torch.randint(0, shape[dim], (n,))
    index[:40] = 2  # a long run of one index
    src_shape = list(shape)
    src_shape[dim] = n
    self = (torch.randn(shape) * 10).to(dtype)
    src = (torch.randn(src_shape) * 10).to(dtype)
    alpha = 3 if dtype == torch.int64 else 0.5
    check(lambda s: s[0].index_add(dim, s[1], s[2], alpha=alpha), _Tuple((self, index, src)), rtol=1e-5, atol=1e-4)


def test_index_add_walks_the_index_in_order_on_the_cpu_class():
    """The CPU form adds source rows in the index's order, as CPU does: the same bits for floats (columns
    past a work-item's 64, a strided source, an index out of order with repeats, rows never hit)."""
    torch.manual_seed(13)
    self, src = torch.randn(300, 200), torch.randn(1000, 200) * 100
    index = torch.randint(0, 250, (1000,))
    want = self.index_add(0, index, src)
    with native_only():
        got = self.to(DEV).index_add(0, index.to(DEV), src.to(DEV))
        seen = kernels_run(lambda: self.to(DEV).index_add(0, index.to(DEV), src.to(DEV)))
        strided = self.t().to(DEV).index_add(1, index.to(DEV), src.t().to(DEV))
    assert ("segment_column_walk" in seen) == (not GPU), seen
    if not GPU:
        assert torch.equal(got.cpu(), want)
    assert_same_as_cpu(got, want, rtol=1e-5, atol=1e-4)
    assert_same_as_cpu(strided, self.t().index_add(1, index, src.t()), rtol=1e-5, atol=1e-4)


def test_index_add_strided_self_and_source():
    torch.manual_seed(11)
    self = torch.randn(20, 30)
    src = torch.randn(50, 20)
    index = torch.randint(0, 30, (50,))
    # dim 1 of a transposed self; a permuted 3-d self whose dims around dim do not chain.
    check(lambda s: s[0].t().index_add(0, s[1], s[2]), _Tuple((self, index, src)))
    self3 = torch.randn(4, 5, 6)
    src3 = torch.randn(4, 8, 6)
    index3 = torch.tensor([0, 4, 4, 1, 0, 4, 2, 2])
    check(lambda s: s[0].permute(2, 1, 0).index_add(1, s[1], s[2].permute(2, 1, 0)), _Tuple((self3, index3, src3)))


@pytest.mark.parametrize("case", ["rows", "negative", "2d_index", "broadcast"])
def test_index_put_accumulate(case):
    torch.manual_seed(12)
    x = torch.randn(40, 16)
    idx = torch.randint(0, 40, (300,))
    cases = {
        "rows": lambda s: s[0].index_put((s[1],), s[2], accumulate=True),
        "negative": lambda s: s[0].index_put((s[1] - 40,), s[2], accumulate=True),
        "2d_index": lambda s: s[0].index_put((s[1].reshape(20, 15),), s[2].reshape(20, 15, 16), accumulate=True),
        "broadcast": lambda s: s[0].index_put((s[1],), s[2][0], accumulate=True),
    }
    check(cases[case], _Tuple((x, idx, torch.randn(300, 16))), rtol=1e-5, atol=1e-4)


def test_x_colon_idx_accumulate():
    torch.manual_seed(13)
    x = torch.randn(5, 40, 3)
    idx = torch.randint(0, 40, (100,))
    v = torch.randn(5, 100, 3)

    def fn(s):
        y = s[0].clone()
        torch.ops.aten.index_put_(y, [None, s[1]], s[2], True)
        return y

    check(fn, _Tuple((x, idx, v)), rtol=1e-5, atol=1e-4)


def test_deterministic_mode_uses_segment_sums_in_either_class():
    torch.manual_seed(14)
    x = torch.zeros(10, 8, device=DEV)
    idx = torch.randint(0, 10, (500,), device=DEV)
    v = torch.randn(500, 8, device=DEV)
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        a = kernels_run(lambda: x.index_add(0, idx, v))
        b = kernels_run(lambda: x.index_put((idx,), v, accumulate=True))
        r1 = x.index_put((idx,), v, accumulate=True).cpu()
        r2 = x.index_put((idx,), v, accumulate=True).cpu()
    finally:
        torch.use_deterministic_algorithms(before)
    # Sorted segment sums in the GPU class, the CPU form's walk over the index in order in the CPU class.
    form = "segment_chunk_sums" if GPU else "segment_column_walk"
    assert form in a and form in b, (a, b)
    assert torch.equal(r1, r2)
    torch.testing.assert_close(r1, torch.zeros(10, 8).index_put((idx.cpu(),), v.cpu(), accumulate=True),
                               rtol=1e-5, atol=1e-5)


# ---- global average pooling (a mean in the GPU forms) ----

@pytest.mark.parametrize("shape", [(4, 8, 10, 10), (2, 5, 4, 4), (3, 7, 9)])
def test_adaptive_avg_pool_to_one(shape):
    torch.manual_seed(15)
    x = torch.randn(*shape)

    def fwd_bwd(t):
        t = t.clone().requires_grad_()
        y = F.adaptive_avg_pool2d(t, 1)
        y.backward(torch.arange(y.numel(), dtype=y.dtype, device=y.device).reshape(y.shape))
        return y, t.grad

    check(fwd_bwd, x, rtol=1e-5, atol=1e-6)
    check(lambda t: F.adaptive_avg_pool2d(t.to(memory_format=torch.channels_last), 1), torch.randn(2, 6, 9, 9))
    if GPU and shape[-1] * shape[-2] >= 64:
        assert "reduce_rows" in kernels_run(lambda: F.adaptive_avg_pool2d(x.to(DEV), 1))


class _Tuple(tuple):
    """Several CPU tensors handed to check() as one input: .to(device) moves each."""

    def to(self, device):
        return _Tuple(t.to(device) for t in self)
