"""torch.kthvalue, median, nanmedian and mode (and index_reduce, addbmm) run natively on opencl: values equal CPU's
exactly; indices equal CPU's where CPU's are determined (median and nanmedian order equal values by position, and
a NaN row's median is its first NaN; mode's rows of up to 16 elements, which CPU sorts stably), and elsewhere
(kthvalue's quickselect, mode's unstable sort, nanmedian of an all-NaN row) point to an element equal to the
value. Gradients and errors against CPU; no CPU fallback (native_only)."""
import re

import pytest
import torch

from _device_helpers import assert_same_as_cpu, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
NAN = float("nan")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=gen(seed)).to(dtype)


def ints(*shape, low=0, high=10, dtype=torch.int64, seed=0):
    return torch.randint(low, high, shape, generator=gen(seed)).to(dtype)


def on_device(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


def run_both(fn, *args, **kwargs):
    want = fn(*args, **kwargs)
    with native_only():
        got = fn(*[on_device(a) for a in args], **{k: on_device(v) for k, v in kwargs.items()})
    return got, want


def raises_like_cpu(fn, *args, **kwargs):
    with pytest.raises(Exception) as cpu_error:
        fn(*args, **kwargs)
    message = str(cpu_error.value).splitlines()[0]
    with pytest.raises(cpu_error.type, match=re.escape(message)):
        fn(*[on_device(a) for a in args], **{k: on_device(v) for k, v in kwargs.items()})


def check_selection(got, want, x, dim, keepdim, exact_indices):
    """(values, indices) of a selection along dim: values equal CPU's (NaN where NaN); indices CPU's where
    exact_indices, else pointing at an element equal to the value (NaN at a NaN)."""
    values, indices = got
    assert_same_as_cpu(values, want[0])
    assert indices.dtype == torch.int64 and indices.shape == want[1].shape
    if exact_indices:
        assert torch.equal(indices.cpu(), want[1])
        return
    idx = indices.cpu()
    if x.dim() == 0:
        assert idx.item() == 0
        return
    picked = x.gather(dim, idx if keepdim else idx.unsqueeze(dim))
    picked = picked if keepdim else picked.squeeze(dim)
    torch.testing.assert_close(picked, want[0], rtol=0, atol=0, equal_nan=True)


def tied(*shape, dtype=torch.float32, seed=0, high=5):
    """Values with many ties (small integers), in dtype."""
    return ints(*shape, high=high, seed=seed).to(dtype)


def shapes_and_dims():
    return [((17,), 0), ((6, 9), 1), ((6, 9), 0), ((3, 4, 50), -1), ((3, 40, 2), 1), ((300, 33), 1), ((2, 5000), 1),
            ((7,), -1)]


# ---- kthvalue ----


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_kthvalue(dtype):
    for shape, dim in shapes_and_dims():
        x = tied(*shape, dtype=dtype, high=20) if dtype in INTS else data(*shape, dtype=dtype)
        n = x.size(dim)
        for k in sorted({1, 2, (n + 1) // 2, n}):
            for keepdim in (False, True):
                got, want = run_both(torch.kthvalue, x, k, dim, keepdim)
                check_selection(got, want, x, dim, keepdim, exact_indices=dtype in FLOATS)
        xt = tied(*shape, dtype=dtype)
        got, want = run_both(torch.kthvalue, xt, max(1, n // 3), dim)
        check_selection(got, want, xt, dim, False, exact_indices=False)


def test_kthvalue_nan_0d_out_and_gradient():
    x = torch.tensor([[3.0, NAN, 1.0, 2.0], [NAN, NAN, 0.5, -1.0]])
    for k in (1, 2, 3, 4):
        got, want = run_both(torch.kthvalue, x, k, 1)
        check_selection(got, want, x, 1, False, exact_indices=False)
    got, want = run_both(torch.kthvalue, torch.tensor(2.5), 1)
    check_selection(got, want, torch.tensor(2.5), 0, False, exact_indices=True)
    x = data(5, 8)
    values_c, indices_c = torch.empty(0), torch.empty(0, dtype=torch.int64)
    torch.kthvalue(x, 3, 0, out=(values_c, indices_c))
    values_d = torch.empty(3, 8, device=DEV).t()[:, 0]  # a non-contiguous (8,) column
    indices_d = torch.empty(0, dtype=torch.int64, device=DEV)
    with native_only():
        torch.kthvalue(x.to(DEV), 3, 0, out=(values_d, indices_d))
    assert_same_as_cpu(values_d, values_c)
    assert torch.equal(indices_d.cpu(), indices_c)
    xd = data(6, 7, dtype=torch.float64).to(DEV).requires_grad_()
    xc = xd.detach().cpu().requires_grad_()
    g = data(6, dtype=torch.float64, seed=2)
    torch.kthvalue(xc, 4, 1)[0].backward(g)
    with native_only():
        torch.kthvalue(xd, 4, 1)[0].backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)


def test_kthvalue_errors():
    raises_like_cpu(torch.kthvalue, data(3, 4), 5, 1)
    raises_like_cpu(torch.kthvalue, data(3, 4), 0, 1)
    raises_like_cpu(torch.kthvalue, torch.empty(3, 0), 1, 1)
    raises_like_cpu(torch.kthvalue, torch.tensor(2.0), 2)
    got, want = run_both(torch.kthvalue, torch.empty(0, 4), 1, 1)
    check_selection(got, want, torch.empty(0, 4), 1, False, exact_indices=True)


# ---- median, nanmedian ----


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_median_and_nanmedian_match_cpu_indices(dtype):
    for shape, dim in shapes_and_dims():
        for x in (tied(*shape, dtype=dtype, seed=1), (data(*shape, dtype=dtype) * 50).to(dtype)):
            for op in (torch.median, torch.nanmedian):
                assert_same_as_cpu(*run_both(op, x))
                for keepdim in (False, True):
                    got, want = run_both(op, x, dim, keepdim)
                    check_selection(got, want, x, dim, keepdim, exact_indices=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_median_nan(dtype):
    x = torch.tensor([[1.0, NAN, 3.0, NAN, 0.0], [2.0, 1.0, 2.0, 5.0, -1.0], [NAN, NAN, NAN, NAN, NAN],
                      [4.0, NAN, 4.0, 4.0, 1.0]], dtype=dtype)
    for op in (torch.median, torch.nanmedian):
        assert_same_as_cpu(*run_both(op, x))
        assert_same_as_cpu(*run_both(op, x[1]))
        got, want = run_both(op, x, 1)
        # an all-NaN row's nanmedian: CPU's nth_element leaves which NaN open
        exact = op is torch.median
        check_selection(got, want, x, 1, False, exact_indices=exact)
        if not exact:
            assert torch.equal(got[1].cpu()[[0, 1, 3]], want[1][[0, 1, 3]])
        got, want = run_both(op, x.t(), 0, True)
        check_selection(got, want, x.t(), 0, True, exact_indices=exact)
    assert_same_as_cpu(*run_both(torch.nanmedian, torch.full((4,), NAN, dtype=dtype)))
    x = data(40, 30, dtype=dtype)
    x[x > 1.2] = NAN
    for op in (torch.median, torch.nanmedian):
        for dim in (0, 1):
            got, want = run_both(op, x, dim)
            check_selection(got, want, x, dim, False, exact_indices=True)


def test_selection_of_sorted_reversed_and_constant_rows():
    # the CPU form's quickselect on the inputs that trouble pivots: every rank of each, against CPU's median and
    # the sorted row
    n = 3001
    rows = torch.stack([torch.arange(n, dtype=torch.float32), torch.arange(n, 0, -1, dtype=torch.float32),
                        torch.full((n,), 2.0), torch.arange(n).remainder(7).float(), data(n)])
    for op in (torch.median, torch.nanmedian):
        got, want = run_both(op, rows, 1)
        check_selection(got, want, rows, 1, False, exact_indices=True)
    sorted_rows = rows.sort(dim=1, stable=True)
    for k in (1, 2, 700, 1500, 2999, n):
        got, want = run_both(torch.kthvalue, rows, k, 1)
        check_selection(got, want, rows, 1, False, exact_indices=False)
        assert torch.equal(got[1].cpu(), sorted_rows.indices[:, k - 1])  # the stable order's k-th


def test_median_0d_out_gradients_and_errors():
    for op in (torch.median, torch.nanmedian):
        got, want = run_both(op, torch.tensor(1.5), 0)
        check_selection(got, want, torch.tensor(1.5), 0, False, exact_indices=True)
        assert_same_as_cpu(*run_both(op, torch.tensor(1.5)))
        x = data(5, 6)
        vc, ic = torch.empty(0), torch.empty(0, dtype=torch.int64)
        op(x, 1, out=(vc, ic))
        vd, id_ = torch.empty(6, 5, device=DEV).t()[:, 0], torch.empty(0, dtype=torch.int64, device=DEV)
        with native_only():
            op(x.to(DEV), 1, out=(vd, id_))
        assert_same_as_cpu(vd, vc)
        assert torch.equal(id_.cpu(), ic)
        raises_like_cpu(op, torch.empty(3, 0), 1)
        raises_like_cpu(op, torch.tensor(3.0), 1)
        for dtype in FLOATS + INTS:  # NaN, converted to the dtype
            assert_same_as_cpu(*run_both(op, torch.empty(0, dtype=dtype)))
        got, want = run_both(op, torch.empty(0, 3), 1)
        check_selection(got, want, torch.empty(0, 3), 1, False, exact_indices=True)
    x = tied(6, 7, dtype=torch.float64, seed=3)
    g = data(6, dtype=torch.float64, seed=2)
    for op in (torch.median, torch.nanmedian):
        xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
        op(xc, 1)[0].backward(g)
        with native_only():
            op(xd, 1)[0].backward(g.to(DEV))
        torch.testing.assert_close(xd.grad.cpu(), xc.grad)
        xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
        op(xc).backward()
        with native_only():
            op(xd).backward()
        torch.testing.assert_close(xd.grad.cpu(), xc.grad)


# ---- mode ----


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
def test_mode(dtype):
    for shape, dim in shapes_and_dims():
        x = tied(*shape, dtype=dtype, high=2 if dtype == torch.bool else 6, seed=4)
        for keepdim in (False, True):
            got, want = run_both(torch.mode, x, dim, keepdim)
            # CPU sorts rows of up to 16 stably and then takes the last of the run, as here
            check_selection(got, want, x, dim, keepdim, exact_indices=x.size(dim) <= 16)
    if dtype in FLOATS:
        x = data(50, 9, dtype=dtype)  # all distinct: the smallest
        got, want = run_both(torch.mode, x, 1)
        check_selection(got, want, x, 1, False, exact_indices=True)


def test_mode_long_rows_0d_and_gradient():
    x = torch.cat([torch.full((700,), 3), torch.full((700,), 1), ints(5000, low=10, high=1000, seed=5)])
    x = x[torch.randperm(x.numel(), generator=gen(6))]
    got, want = run_both(torch.mode, x)
    check_selection(got, want, x, 0, False, exact_indices=False)
    assert got[0].item() == 1  # the smaller of two equally frequent values
    got, want = run_both(torch.mode, torch.tensor(4.0))
    check_selection(got, want, torch.tensor(4.0), 0, False, exact_indices=True)
    x = tied(6, 7, dtype=torch.float64, seed=7)
    g = data(6, dtype=torch.float64, seed=2)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    torch.mode(xc, 1)[0].backward(g)
    with native_only():
        torch.mode(xd, 1)[0].backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)


# ---- index_reduce, addbmm ----


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(dtype, reduce, include_self):
    make = (lambda *s, seed: (data(*s, seed=seed) * 3).to(dtype)) if dtype in FLOATS else \
        (lambda *s, seed: ints(*s, low=-5, high=6, seed=seed).to(dtype))
    self_ = make(5, 4, seed=1)
    index = torch.tensor([0, 4, 2, 0, 4, 4])
    source = make(6, 4, seed=2)
    got, want = run_both(lambda s, i, src: s.index_reduce(0, i, src, reduce, include_self=include_self),
                         self_, index, source)
    assert_same_as_cpu(got, want)
    got, want = run_both(lambda s, i, src: s.index_reduce(1, i, src, reduce, include_self=include_self),
                         self_.t().contiguous(), index, source.t())
    assert_same_as_cpu(got, want)
    got, want = run_both(lambda s, i, src: s.clone().index_reduce_(0, i, src, reduce, include_self=include_self),
                         self_, index.to(torch.int32), source)
    assert_same_as_cpu(got, want)


def test_index_reduce_gradient_and_errors():
    self_ = data(5, 3, dtype=torch.float64)
    index = torch.tensor([0, 4, 2, 0])
    source = data(4, 3, dtype=torch.float64, seed=1)
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            leaves_c = [self_.clone().requires_grad_(), source.clone().requires_grad_()]
            leaves_d = [self_.to(DEV).requires_grad_(), source.to(DEV).requires_grad_()]
            want = leaves_c[0].index_reduce(0, index, leaves_c[1], reduce, include_self=include_self)
            g = data(5, 3, dtype=torch.float64, seed=2)
            grads_c = torch.autograd.grad(want, leaves_c, g)
            with native_only():
                got = leaves_d[0].index_reduce(0, index.to(DEV), leaves_d[1], reduce, include_self=include_self)
                grads_d = torch.autograd.grad(got, leaves_d, g.to(DEV))
            torch.testing.assert_close(got.detach().cpu(), want.detach())
            for gd, gc in zip(grads_d, grads_c):
                torch.testing.assert_close(gd.cpu(), gc)
    raises_like_cpu(lambda s, i, src: s.index_reduce(0, i, src, "amax"), self_, torch.tensor([0, 5, 1, 1]), source)
    raises_like_cpu(lambda s, i, src: s.index_reduce(0, i, src, "sum"), self_, index, source)


@pytest.mark.parametrize("dtype", FLOATS)
def test_addbmm(dtype):
    tol = {torch.float32: 1e-4, torch.float64: 1e-12}[dtype]
    b1, b2 = data(4, 5, 6, dtype=dtype, seed=1), data(4, 6, 7, dtype=dtype, seed=2)
    for self_ in (data(5, 7, dtype=dtype), data(7, dtype=dtype), data(1, 1, dtype=dtype)):
        for beta, alpha in ((1, 1), (0.5, -2.0), (0, 1)):
            got, want = run_both(lambda s, a, b: torch.addbmm(s, a, b, beta=beta, alpha=alpha), self_, b1, b2)
            assert_same_as_cpu(got, want, rtol=tol, atol=tol)
    for self_ in (data(5, 7, dtype=dtype), data(7, dtype=dtype), data(1, dtype=dtype)):  # in place: self broadcast
        got, want = run_both(lambda s, a, b: s.clone().addbmm_(a, b, beta=0.5), self_, b1, b2)
        assert_same_as_cpu(got, want, rtol=tol, atol=tol)
    got, want = run_both(lambda s, a, b: torch.addbmm(s, a, b, out=torch.empty(3, device=s.device, dtype=dtype)),
                         data(5, 7, dtype=dtype), b1.transpose(1, 2).contiguous().transpose(1, 2), b2)
    assert_same_as_cpu(got, want, rtol=tol, atol=tol)
    got, want = run_both(torch.addbmm, data(5, 7, dtype=dtype), torch.empty(0, 5, 6, dtype=dtype),
                         torch.empty(0, 6, 7, dtype=dtype))
    assert_same_as_cpu(got, want)


def test_addbmm_gradient_and_errors():
    inputs = [data(5, 7, dtype=torch.float64), data(4, 5, 6, dtype=torch.float64, seed=1),
              data(4, 6, 7, dtype=torch.float64, seed=2)]
    leaves_c = [x.clone().requires_grad_() for x in inputs]
    leaves_d = [x.to(DEV).requires_grad_() for x in inputs]
    g = data(5, 7, dtype=torch.float64, seed=3)
    grads_c = torch.autograd.grad(torch.addbmm(*leaves_c, beta=0.5, alpha=2.0), leaves_c, g)
    with native_only():
        grads_d = torch.autograd.grad(torch.addbmm(*leaves_d, beta=0.5, alpha=2.0), leaves_d, g.to(DEV))
    for gd, gc in zip(grads_d, grads_c):
        torch.testing.assert_close(gd.cpu(), gc)
    raises_like_cpu(torch.addbmm, data(5, 7), data(4, 5, 6), data(3, 6, 7))
    raises_like_cpu(torch.addbmm, data(5, 7), data(4, 5, 6), data(4, 5, 7))
    raises_like_cpu(torch.addbmm, data(5, 7), data(5, 6), data(4, 6, 7))
    raises_like_cpu(torch.addbmm, data(3, 7), data(4, 5, 6), data(4, 6, 7))
