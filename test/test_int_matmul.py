"""Integer matrix products (mm, bmm, addmm, baddbmm, mv, addmv, addbmm, matmul and their out=/in-place forms)
run natively on opencl for int8, uint8, int16, int32 and int64 (kernels_cl/gemm_integer.cl): exact results
equal to CPU's, which computes in the dtype and wraps (no promotion), with alpha and beta converted to the
dtype as CPU converts them; bool and bad arguments raise CPU's errors. One test per dtype builds the dtype's
one program, whatever the shapes."""
import pytest
import torch

from _device_helpers import assert_same_as_cpu, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def full_range(*shape, dtype, seed=0):
    """Values over the dtype's whole range (near its max and min too): products and sums wrap."""
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def small(*shape, dtype, seed=0):
    return torch.randint(0, 5, shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def same(fn, *inputs):
    """fn on CPU against fn natively on opencl copies of the inputs (non-tensor inputs pass as they are)."""
    want = fn(*inputs)
    with native_only():
        got = fn(*[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in inputs])
    assert_same_as_cpu(got, want)


def same_error(fn, *inputs):
    with pytest.raises(Exception) as cpu_error:
        fn(*inputs)
    with native_only(), pytest.raises(type(cpu_error.value)) as error:
        fn(*[x.to(DEV) for x in inputs])
    assert str(error.value) == str(cpu_error.value)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_products_equal_cpu_with_wraparound(dtype):
    a, b = full_range(37, 40, dtype=dtype, seed=1), full_range(40, 19, dtype=dtype, seed=2)
    bias = full_range(37, 19, dtype=dtype, seed=3)
    ba, bb = full_range(3, 17, 20, dtype=dtype, seed=4), full_range(3, 20, 33, dtype=dtype, seed=5)
    v = full_range(40, dtype=dtype, seed=6)
    same(torch.mm, a, b)
    same(torch.bmm, ba, bb)
    same(lambda s, x, y: torch.addmm(s, x, y, beta=3, alpha=-2 if dtype != torch.uint8 else 7), bias, a, b)
    same(lambda s, x, y: torch.addmm(s, x, y, beta=0, alpha=1), bias, a, b)
    same(lambda s, x, y: torch.addmm(s, x, y, beta=1, alpha=0), bias, a, b)
    same(lambda s, x, y: torch.addmm(s, x, y, beta=0.5, alpha=1.75), bias, a, b)  # CPU truncates to 0 and 1
    same(lambda s, x, y: torch.baddbmm(s, x, y, beta=2, alpha=3), full_range(3, 17, 33, dtype=dtype, seed=7), ba, bb)
    same(torch.mv, a, v)
    same(lambda s, x, y: torch.addmv(s, x, y, beta=5, alpha=3), full_range(37, dtype=dtype, seed=8), a, v)
    same(lambda s, x, y: torch.addbmm(s, x, y, beta=2, alpha=5), full_range(17, 33, dtype=dtype, seed=9), ba, bb)
    # matmul's forms: matrix @ vector, vector @ matrix, batched with a broadcast batch, batch @ matrix, dot.
    same(torch.matmul, a, v)
    same(torch.matmul, full_range(37, dtype=dtype, seed=10), a)
    same(torch.matmul, full_range(2, 1, 5, 40, dtype=dtype, seed=11), full_range(3, 40, 6, dtype=dtype, seed=12))
    same(torch.matmul, ba, full_range(20, 9, dtype=dtype, seed=13))
    same(torch.matmul, v, full_range(40, dtype=dtype, seed=14))


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_layouts_empty_sizes_out_and_in_place(dtype):
    a, b = full_range(40, 37, dtype=dtype, seed=1), full_range(19, 40, dtype=dtype, seed=2)
    # Transposed, sliced (strided) and expanded operands, read in place.
    same(lambda x, y: x.t() @ y.t(), a, b)
    same(lambda x, y: x[::2, 1::3] @ y[1::2, ::3].t()[:12], a, b)
    same(lambda x, y: torch.bmm(x.expand(4, 40, 37).transpose(1, 2), y.t().expand(4, 40, 19)), a[None], b)
    same(lambda x, y: torch.mv(x.t(), y.t()[:, 2]), a, b)  # a vector of stride 40
    # Broadcast biases: a row, a column, a 0-d tensor, an expanded batch.
    s, t = full_range(37, 19, dtype=dtype, seed=3), full_range(3, 37, 19, dtype=dtype, seed=4)
    for bias in (s[0], s[:, :1], s[0, 0].clone(), s[0][None]):
        same(lambda c, x, y: torch.addmm(c, x.t(), y.t(), beta=3, alpha=2), bias, a, b)
    same(lambda c, x, y: torch.baddbmm(c, x, y[:, :19].transpose(1, 2), beta=2), s, t, t)
    same(lambda c, x, y: torch.addmv(c, x, y, beta=7), s[0, 0].clone(), s, s[0])
    # Empty dimensions: m, n or batch 0 give empty results; k = 0 gives beta * bias (zeros for mm).
    e = lambda *shape: torch.zeros(shape, dtype=dtype)
    same(torch.mm, e(0, 4), e(4, 3))
    same(torch.mm, e(3, 4), e(4, 0))
    same(torch.mm, e(3, 0), e(0, 5))
    same(torch.bmm, e(0, 3, 4), e(0, 4, 5))
    same(torch.bmm, e(2, 3, 0), e(2, 0, 5))
    same(lambda c, x, y: torch.addmm(c, x, y, beta=3), s[:3, :5], e(3, 0), e(0, 5))
    same(lambda c, x, y: torch.addmm(c, x, y, beta=0), s[:3, :5], e(3, 0), e(0, 5))
    same(lambda c, x, y: torch.addmv(c, x, y, beta=2), s[0, :3], e(3, 0), e(0))
    same(lambda c, x, y: torch.addbmm(c, x, y, beta=2), s[:3, :5], e(0, 3, 4), e(0, 4, 5))
    # out= (a transposed out keeps its strides) and in-place forms.
    x, y = a.t().contiguous(), b.t().contiguous()  # (37, 40) @ (40, 19)

    def into(op, *args, **kw):
        out = torch.zeros(19, 37, dtype=dtype, device=args[0].device).t()
        op(*args, out=out, **kw)
        return out
    same(lambda p, q: into(torch.mm, p, q), x, y)
    same(lambda c, p, q: into(torch.addmm, c, p, q, beta=2, alpha=3), s, x, y)
    same(lambda p, q: into(torch.matmul, p, q), x, y)
    same(lambda p, q: torch.bmm(p[None], q[None], out=torch.empty(0, dtype=dtype, device=p.device)), x, y)
    same(lambda c, p, q: torch.baddbmm(c[None], p[None], q[None], out=torch.empty(1, 37, 19, dtype=dtype,
                                                                                   device=p.device)), s, x, y)
    same(lambda c, p, q: torch.addmv(c[:, 0], p, q[:, 0], out=torch.empty(37, dtype=dtype, device=p.device)), s, x, y)
    same(lambda c, p, q: torch.addbmm(c, p[None], q[None], out=torch.empty(0, dtype=dtype, device=p.device)), s, x, y)
    same(lambda c, p, q: c.clone().addmm_(p, q, beta=2, alpha=3), s, x, y)
    same(lambda c, p, q: c.t().clone().t().addmm_(p, q, alpha=-1 if dtype != torch.uint8 else 2), s, x, y)
    same(lambda c, p, q: c.clone()[None].baddbmm_(p[None], q[None], beta=3), s, x, y)
    same(lambda c, p, q: c[:, 0].clone().addmv_(p, q[:, 0], beta=3), s, x, y)
    same(lambda c, p, q: c.clone().addbmm_(p[None], q[None], beta=3), s, x, y)
    same(lambda c, p, q: c[0].clone().addbmm_(p[None], q[None]), s, x, y)  # self broadcast, then resized
    # addmm_ into self that is also an operand: the product reads the old values (CPU's result depends on its
    # GEMM's order of writes, so this holds ours to the mathematical answer, computed on CPU without aliasing).
    sq = full_range(20, 20, dtype=dtype, seed=5)
    with native_only():
        d = sq.to(DEV)
        d.addmm_(d, d.t())
    assert torch.equal(d.cpu(), torch.addmm(sq, sq, sq.t()))


def test_errors_are_cpus():
    i32 = small(3, 4, dtype=torch.int32)
    same_error(torch.mm, i32, small(5, 2, dtype=torch.int32))
    same_error(torch.mm, i32, small(4, 2, dtype=torch.int64))
    same_error(torch.mm, i32, small(4, 2, dtype=torch.int32).float())
    same_error(torch.bmm, i32[None], small(2, 4, 2, dtype=torch.int32))
    same_error(torch.bmm, i32[None], small(1, 5, 2, dtype=torch.int32))
    same_error(torch.mv, i32, small(5, dtype=torch.int32))
    same_error(torch.mv, i32, small(4, dtype=torch.int16))
    same_error(torch.addmm, small(2, 2, dtype=torch.int32), i32, small(4, 3, dtype=torch.int32))  # bias shape
    same_error(torch.addmm, small(3, 2, dtype=torch.int64), i32, small(4, 2, dtype=torch.int32))  # bias dtype
    same_error(torch.addbmm, small(3, 2, dtype=torch.int32), i32[None], small(2, 4, 2, dtype=torch.int32))
    same_error(torch.matmul, small(2, 3, 4, dtype=torch.int8), small(5, 2, dtype=torch.int8))
    # alpha and beta must fit the dtype, as CPU converts them.
    i8 = small(3, 3, dtype=torch.int8)
    same_error(lambda c, x, y: torch.addmm(c, x, y, alpha=300), i8, i8, i8)
    same_error(lambda c, x, y: torch.addmv(c, x, y, beta=300), i8[0], i8, i8[0])
    same_error(lambda c, x, y: torch.baddbmm(c, x, y, alpha=-129), i8[None], i8[None], i8[None])
    # bool has no integer product on CPU: the same NotImplementedError names CPU's kernel.
    b, bv = i32[:, :3].bool(), i32[0, :3].bool()
    for fn, args in [(torch.mm, (b, b)), (torch.bmm, (b[None], b[None])), (torch.addmm, (b, b, b)),
                     (torch.baddbmm, (b[None], b[None], b[None])), (torch.mv, (b, bv)), (torch.addmv, (bv, b, bv)),
                     (torch.addbmm, (b, b[None], b[None])), (torch.matmul, (b, b))]:
        same_error(fn, *args)
