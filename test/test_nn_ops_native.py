"""F.embedding_bag (aten::_embedding_bag, _embedding_bag_forward_only and their backwards), F.max_unpool2d /
F.max_unpool1d, F.max_unpool3d, F.channel_shuffle, torch.renorm and embedding_renorm_ (nn.Embedding's max_norm) run natively on opencl: values, auxiliary outputs,
gradients, layouts, out= forms and errors against CPU PyTorch, with no CPU fallback (native_only)."""
import re

import pytest
import torch
import torch.nn.functional as F

from _device_helpers import assert_same_as_cpu, index_checks_deferred, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}
SUM_TOL = {torch.float32: 1e-4, torch.float64: 1e-12}


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def to_dev(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


def check_grads(fn, *inputs, tol=None, grad_inputs=None):
    """fn's value and the gradients of the float inputs (or those at `grad_inputs`) on opencl (natively)
    against CPU's, for a random grad_output."""
    floats = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    wanted = floats if grad_inputs is None else grad_inputs
    leaves_c = [x.detach().clone().requires_grad_(i in wanted) if i in floats else x for i, x in enumerate(inputs)]
    leaves_d = [to_dev(x).detach().requires_grad_(i in wanted) if i in floats else to_dev(x)
                for i, x in enumerate(inputs)]
    want = fn(*leaves_c)
    t = (tol or TOL)[want.dtype]
    with native_only():
        got = fn(*leaves_d)
    assert got.device.type == "opencl" and got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=t, atol=t, equal_nan=True)
    if not wanted:
        return
    g = data(*want.shape, dtype=want.dtype, seed=1)
    grads_c = torch.autograd.grad(want, [leaves_c[i] for i in wanted], g)
    with native_only():
        grads_d = torch.autograd.grad(got, [leaves_d[i] for i in wanted], g.to(DEV))
    for gd, gc in zip(grads_d, grads_c):
        assert gd.shape == gc.shape and gd.dtype == gc.dtype
        torch.testing.assert_close(gd.cpu(), gc, rtol=t, atol=t, equal_nan=True)


def raises_like_cpu(fn, *inputs, upto=None, bad_index=False):
    """fn raises on opencl the exception CPU raises, with CPU's message (up to `upto` when given: ATen names
    the tensor's type, torch.FloatTensor on CPU). A bad index (bad_index) on a device that defers index checks
    raises the project's deferred IndexError, with CPU's message, at the synchronize."""
    with pytest.raises(Exception) as cpu_error:
        fn(*inputs)
    message = str(cpu_error.value).splitlines()[0]
    if upto is not None:
        message = message[:message.index(upto)]
    expected = IndexError if bad_index and index_checks_deferred() else cpu_error.type
    with pytest.raises(expected, match=re.escape(message)):
        fn(*[to_dev(x) for x in inputs])
        torch.opencl.synchronize()


# ---- embedding_bag ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_bag_matches_cpu(dtype):
    w = data(12, 5, dtype=dtype)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 11, 0, 7, 7])
    offsets = torch.tensor([0, 4, 4, 8, 9])                     # an empty bag among them
    for mode in ["sum", "mean", "max"]:
        for padding_idx in [None, 4]:
            fn = lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx)
            check_grads(fn, w, idx, offsets, tol=SUM_TOL)
            check_grads(fn, w, idx.int(), offsets.int(), tol=SUM_TOL)
        check_grads(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True), w, idx,
                    torch.tensor([0, 4, 4, 8, 12]), tol=SUM_TOL)
        check_grads(lambda w, i: F.embedding_bag(i, w, mode=mode), w, idx.view(3, 4), tol=SUM_TOL)   # 2-D input
        check_grads(lambda w, i: F.embedding_bag(i, w, mode=mode), w, idx[:0].view(0, 4), tol=SUM_TOL)  # no bags
    psw = data(12, dtype=dtype, seed=3)
    check_grads(lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s), w, idx, offsets, psw,
                tol=SUM_TOL)
    check_grads(lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s, padding_idx=7), w, idx,
                offsets, psw, tol=SUM_TOL)
    # scale_grad_by_freq divides each row's gradient by the row's count among the indices, as F.embedding's does
    # (CPU's embedding_bag divides by the count of the index at another position: row 3 gets 1/2, row 4 2x)
    g = data(5, 5, dtype=dtype, seed=4)
    wd = w.to(DEV).requires_grad_()
    with native_only():
        got, = torch.autograd.grad(F.embedding_bag(idx.to(DEV), wd, offsets.to(DEV), scale_grad_by_freq=True), wd,
                                   g.to(DEV))
    wc = w.clone().requires_grad_()
    plain, = torch.autograd.grad(F.embedding_bag(idx, wc, offsets), wc, g)
    counts = torch.bincount(idx, minlength=12).clamp(min=1).to(dtype).unsqueeze(1)
    torch.testing.assert_close(got.cpu(), plain / counts, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])
    check_grads(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"), w.t().contiguous().t(), idx, offsets,
                tol=SUM_TOL)                                      # a transposed weight
    # ties and NaN in max mode: the first maximum; a NaN only where it comes first, as CPU
    wt = torch.tensor([[1.0, float("nan")], [1.0, 2.0], [float("nan"), 2.0], [-float("inf"), 0.0]], dtype=dtype)
    check_grads(lambda w, i, o: F.embedding_bag(i, w, o, mode="max"), wt, torch.tensor([0, 1, 2, 1, 3, 2, 0]),
                torch.tensor([0, 3, 5]))
    # the auxiliary outputs the backward reads hold CPU's values (the weight's gradient needs them)
    for mode in range(3):
        args = (w, idx, offsets, False, mode, False, None, False, 4)
        want = torch.ops.aten._embedding_bag(*args)
        with native_only():
            got = torch.ops.aten._embedding_bag(*[to_dev(a) for a in args])
            got_fo = torch.ops.aten._embedding_bag_forward_only(*[to_dev(a) for a in args])
        assert_same_as_cpu(got, want, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])
        assert_same_as_cpu(got_fo, want, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])


def test_embedding_bag_errors():
    w = data(10, 3)
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o, mode="max"), w, torch.tensor([1, 10]), torch.tensor([0]),
                    bad_index=True)
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o, mode="sum", padding_idx=1), w, torch.tensor([1, -1]),
                    torch.tensor([0]), bad_index=True)
    if not index_checks_deferred():   # deferred devices word it one way (at the next wait), CPU by its path
        raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), w, torch.tensor([1, 10]), torch.tensor([0]))
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), w, torch.tensor([1, 2]), torch.tensor([1]))
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), w, torch.tensor([1, 2]), torch.tensor([0, 3]))
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), w, torch.tensor([1., 2.]), torch.tensor([0]),
                    upto="torch.")
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), w.long(), torch.tensor([1, 2]), torch.tensor([0]),
                    upto="torch.")
    raises_like_cpu(lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s), w.double(),
                    torch.tensor([1, 2]), torch.tensor([0]), torch.ones(2), upto="torch.")
    # An unknown mode: CPU torch 2.11 crashes on it (2.13 raises this), so ours is checked on its own.
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max"):
        torch.ops.aten._embedding_bag(to_dev(w), to_dev(torch.tensor([1, 2])), to_dev(torch.tensor([0])), False, 3,
                                      False, None, False, -1)
    raises_like_cpu(lambda w, i, o, s: torch.ops.aten._embedding_bag(w, i, o, False, 1, False, s, False, -1), w,
                    torch.tensor([1, 2]), torch.tensor([0]), torch.ones(2))


# ---- max_unpool2d / max_unpool1d ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_max_unpool_matches_cpu(dtype):
    x = data(2, 3, 8, 7, dtype=dtype)
    for k, s, p in [(2, 2, 0), (3, 2, 1)]:
        pooled, ind = F.max_pool2d(x, k, s, p, return_indices=True)
        fn = lambda t, i: F.max_unpool2d(t, i, k, s, p, output_size=x.shape[-2:])
        check_grads(fn, pooled, ind)
        check_grads(fn, pooled.contiguous(memory_format=torch.channels_last),
                    ind.contiguous(memory_format=torch.channels_last))
        check_grads(lambda t, i: F.max_unpool2d(t, i, k, s, p, output_size=x.shape[-2:]), pooled[0], ind[0])
    check_grads(lambda t, i: F.max_unpool2d(t, i, 2), data(0, 3, 4, 3, dtype=dtype),
                torch.zeros(0, 3, 4, 3, dtype=torch.long))
    y = data(2, 3, 9, dtype=dtype)
    pooled, ind = F.max_pool1d(y, 2, return_indices=True)
    check_grads(lambda t, i: F.max_unpool1d(t, i, 2, output_size=[9]), pooled, ind)
    # channels_last in, channels_last out, as CPU
    pooled, ind = F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 2, return_indices=True)
    with native_only():
        got = F.max_unpool2d(pooled.to(DEV), ind.to(DEV), 2, output_size=(8, 7))
    assert got.stride() == F.max_unpool2d(pooled, ind, 2, output_size=(8, 7)).stride()
    out = torch.empty(0, device=DEV, dtype=dtype)
    with native_only():
        torch._C._nn.max_unpool2d(pooled.to(DEV), ind.to(DEV), [8, 7], out=out)
    assert_same_as_cpu(out, torch._C._nn.max_unpool2d(pooled, ind, [8, 7]))


def test_max_unpool_errors():
    x = data(1, 2, 2, 2)
    raises_like_cpu(lambda t, i: F.max_unpool2d(t, i, 2), x, torch.full((1, 2, 2, 2), 20), bad_index=True)
    raises_like_cpu(lambda t, i: F.max_unpool2d(t, i, 2), x, torch.full((1, 2, 2, 2), -1), bad_index=True)
    raises_like_cpu(lambda t, i: F.max_unpool2d(t, i, 2), x, torch.full((1, 2, 2, 2), 1, dtype=torch.int))
    raises_like_cpu(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4]), x, torch.zeros(1, 2, 2, 2, dtype=torch.long))
    raises_like_cpu(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), x[0, 0], torch.zeros(2, 2).long())
    raises_like_cpu(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), x, torch.zeros(1, 2, 2, 1).long())
    raises_like_cpu(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), data(1, 0, 2, 2),
                    torch.zeros(1, 0, 2, 2).long())


# ---- max_unpool3d ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_max_unpool3d_matches_cpu(dtype):
    x = data(2, 3, 6, 5, 4, dtype=dtype)
    for k, s, p in [(2, 2, 0), (3, 2, 1)]:
        pooled, ind = F.max_pool3d(x, k, s, p, return_indices=True)
        fn = lambda t, i: F.max_unpool3d(t, i, k, s, p, output_size=x.shape[-3:])
        check_grads(fn, pooled, ind)
        check_grads(fn, pooled.contiguous(memory_format=torch.channels_last_3d),
                    ind.contiguous(memory_format=torch.channels_last_3d))
        check_grads(fn, pooled[0], ind[0])  # no batch dim
    check_grads(lambda t, i: F.max_unpool3d(t, i, 2), data(0, 3, 2, 2, 2, dtype=dtype),
                torch.zeros(0, 3, 2, 2, 2, dtype=torch.long))
    pooled, ind = F.max_pool3d(x, 2, return_indices=True)
    check_grads(lambda t, i: F.max_unpool3d(t, i, 2, output_size=(7, 5, 5)), pooled, ind)  # a larger output
    out = torch.empty(0, device=DEV, dtype=dtype)
    with native_only():
        torch._C._nn.max_unpool3d(pooled.to(DEV), ind.to(DEV), [6, 5, 4], [2, 2, 2], [0, 0, 0], out=out)
    assert_same_as_cpu(out, torch._C._nn.max_unpool3d(pooled, ind, [6, 5, 4], [2, 2, 2], [0, 0, 0]))
    for reduced in (torch.float16, torch.bfloat16):
        check_grads(lambda t, i: F.max_unpool3d(t, i, 2, output_size=(6, 5, 4)), pooled.to(reduced), ind,
                    tol={reduced: 0})  # copies: exact


def test_max_unpool3d_errors():
    x, i = data(1, 2, 2, 2, 2), torch.zeros(1, 2, 2, 2, 2, dtype=torch.long)
    unpool = lambda size=(4, 4, 4), stride=(2, 2, 2), padding=(0, 0, 0): (
        lambda t, j: torch.ops.aten.max_unpool3d(t, j, size, stride, padding))
    raises_like_cpu(unpool(), x, torch.full((1, 2, 2, 2, 2), 64), bad_index=True)
    raises_like_cpu(unpool(), x, torch.full((1, 2, 2, 2, 2), -1), bad_index=True)
    raises_like_cpu(unpool(), x, i.int())
    raises_like_cpu(unpool(size=(4, 4)), x, i)
    raises_like_cpu(unpool(stride=(2, 2)), x, i)
    raises_like_cpu(unpool(padding=(0, 0)), x, i)
    raises_like_cpu(unpool(stride=(0, 2, 2)), x, i)
    raises_like_cpu(unpool(), x[0, 0], i[0, 0])
    raises_like_cpu(unpool(), x, i[:, :1])
    raises_like_cpu(unpool(), data(1, 0, 2, 2, 2), i[:, :0])
    raises_like_cpu(unpool(), x.long(), i)


# ---- channel_shuffle, renorm ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_channel_shuffle_and_renorm_match_cpu(dtype):
    x = data(2, 6, 3, 4, dtype=dtype)
    for groups in [1, 2, 3, 6]:
        check_grads(lambda t: F.channel_shuffle(t, groups), x)
    check_grads(lambda t: F.channel_shuffle(t, 2), x.contiguous(memory_format=torch.channels_last))
    check_grads(lambda t: F.channel_shuffle(t, 3), data(2, 6, 5, dtype=dtype).transpose(0, 2).transpose(0, 2))
    check_grads(lambda t: F.channel_shuffle(t, 2), data(0, 6, 5, dtype=dtype))
    cl = x.contiguous(memory_format=torch.channels_last)
    with native_only():
        assert F.channel_shuffle(cl.to(DEV), 2).stride() == F.channel_shuffle(cl, 2).stride()
    y = data(4, 3, 5, dtype=dtype) * 2
    for p, dim, maxnorm in [(2, 0, 3.0), (1, 1, 2.5), (3.5, -1, 4.0), (float("inf"), 2, 1.0), (2, 0, 100.0)]:
        check_grads(lambda t: torch.renorm(t, p, dim, maxnorm), y, tol=SUM_TOL)
    check_grads(lambda t: torch.renorm(t, 2, 1, 1.0), y.transpose(0, 2), tol=SUM_TOL)
    z = y.clone()
    with native_only():
        zd = y.to(DEV)
        zd.renorm_(2, 0, 3.0)
        out = torch.empty(0, device=DEV, dtype=dtype)
        torch.renorm(y.to(DEV), 2, 0, 3.0, out=out)
    z.renorm_(2, 0, 3.0)
    assert_same_as_cpu(zd, z, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])
    assert_same_as_cpu(out, z, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])


def test_channel_shuffle_and_renorm_errors():
    x = data(1, 2, 2, 2)
    raises_like_cpu(lambda t: torch.channel_shuffle(t, 3), x)
    raises_like_cpu(lambda t: torch.channel_shuffle(t, 1), x[0, 0])
    raises_like_cpu(lambda t: torch.channel_shuffle(t, 0), x)
    raises_like_cpu(lambda t: torch.renorm(t, 2, 5, 1.0), x)
    raises_like_cpu(lambda t: torch.renorm(t, -1, 0, 1.0), x)
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, -1.0), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_max_norm_renorms_rows_like_cpu(dtype):
    weight = data(10, 4, dtype=dtype) * 2
    # Repeated indices, int64 and int32, rows left alone (not named, or within the limit).
    for indices in [torch.tensor([[1, 2, 2], [9, 1, 0]]), torch.tensor([3, 3, 7], dtype=torch.int32)]:
        for norm_type, max_norm in [(2.0, 1.5), (1.0, 2.0), (float("inf"), 1.0), (3.0, 100.0)]:
            want = torch.embedding_renorm_(weight.clone(), indices, max_norm, norm_type)
            with native_only():
                got = torch.embedding_renorm_(weight.to(DEV), indices.to(DEV), max_norm, norm_type)
            assert_same_as_cpu(got, want, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])
    # Through F.embedding, which renorms the weight in place before the lookup; the gradient as well.
    idx = torch.tensor([[0, 4, 4], [8, 0, 5]])
    check_grads(lambda w: F.embedding(idx.to(w.device), w * 1, max_norm=1.0), weight, tol=SUM_TOL)


def test_embedding_renorm_errors():
    raises_like_cpu(lambda w, i: torch.embedding_renorm_(w, i, 1.0, 2.0), data(4), torch.tensor([1]))
    raises_like_cpu(lambda w, i: torch.embedding_renorm_(w, i, 1.0, 2.0), data(4, 2), torch.tensor([1.0]),
                    upto="but got")
    with pytest.raises(IndexError):
        torch.embedding_renorm_(data(4, 2).to(DEV), torch.tensor([4], device=DEV), 1.0, 2.0)
        torch.opencl.synchronize()


# ---- multi_margin_loss, _weight_norm_interface, rrelu_with_noise ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_multi_margin_loss_matches_cpu(dtype):
    x = data(5, 4, dtype=dtype)
    t = torch.tensor([0, 3, 1, 1, 2])
    w = data(4, dtype=dtype, seed=5).abs()
    for p in [1, 2]:
        for reduction in ["mean", "sum", "none"]:
            check_grads(lambda x, t: F.multi_margin_loss(x, t, p=p, margin=0.7, reduction=reduction), x, t,
                        tol=SUM_TOL)
            check_grads(lambda x, t, w: F.multi_margin_loss(x, t, p=p, margin=0.7, weight=w, reduction=reduction),
                        x, t, w, tol=SUM_TOL, grad_inputs=[0])
    check_grads(lambda x, t: F.multi_margin_loss(x, t, reduction="none"), data(4, dtype=dtype), torch.tensor(2))
    check_grads(lambda x, t: F.multi_margin_loss(x, t, reduction="none"), data(4, dtype=dtype), torch.tensor([2]))
    check_grads(lambda x, t: F.multi_margin_loss(x, t), data(4, dtype=dtype), torch.tensor(1))
    check_grads(lambda x, t: F.multi_margin_loss(x, t, reduction="none"), data(0, 4, dtype=dtype), t[:0])
    check_grads(lambda x, t: F.multi_margin_loss(x, t), x.t().contiguous().t(), t, tol=SUM_TOL)
    y = x.clone()
    y[1, 2], y[3, 0] = float("nan"), float("inf")
    check_grads(lambda x, t: F.multi_margin_loss(x, t, reduction="none"), y, t, tol=SUM_TOL)
    out = torch.empty(0, device=DEV, dtype=dtype)
    with native_only():
        torch._C._nn.multi_margin_loss(x.to(DEV), t.to(DEV), 1, 1, None, 0, out=out)
    assert_same_as_cpu(out, torch._C._nn.multi_margin_loss(x, t, 1, 1, None, 0))


def test_multi_margin_loss_errors():
    x, t = data(3, 4), torch.tensor([0, 3, 1])
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), x, torch.tensor([0, 4, 1]))
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), x, torch.tensor([0, -1, 1]))
    raises_like_cpu(lambda x, t: torch.ops.aten.multi_margin_loss(x, t, 3, 1, None, 1), x, t)
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), x, t[:2])
    raises_like_cpu(lambda x, t, w: F.multi_margin_loss(x, t, weight=w), x, t, torch.ones(3))
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), data(3, 0), t)
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), data(2, 3, 4), t)
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), x, t.int())
    raises_like_cpu(lambda x, t: F.multi_margin_loss(x, t), x.half(), t)


@pytest.mark.parametrize("dtype", FLOATS)
def test_weight_norm_matches_cpu(dtype):
    v = data(6, 3, 2, 2, dtype=dtype)
    for dim in [0, -1]:
        g = torch.norm_except_dim(v, 2, dim % v.dim()) * 1.5
        check_grads(lambda v, g: torch._weight_norm(v, g, dim), v, g, tol=SUM_TOL)
        check_grads(lambda v, g: torch._weight_norm_interface(v, g, dim % v.dim())[0], v, g, tol=SUM_TOL)
    lin = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(5, 3).to(dtype))
    x = data(4, 5, dtype=dtype)
    want = lin(x)
    want.sum().backward()
    lin_d = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(5, 3).to(dtype))
    lin_d.load_state_dict(lin.state_dict())
    lin_d = lin_d.to(DEV)
    with native_only():
        got = lin_d(x.to(DEV))
        got.sum().backward()
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype])
    for (name, pc), pd in zip(lin.named_parameters(), lin_d.parameters()):
        torch.testing.assert_close(pd.grad.cpu(), pc.grad, rtol=SUM_TOL[dtype], atol=SUM_TOL[dtype], msg=name)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rrelu_training_draws_slopes_in_bounds(dtype):
    lower, upper = 0.1, 0.3
    x = data(200, 50, dtype=dtype)
    x[0, :5] = 0
    xd = x.to(DEV).requires_grad_()
    torch.manual_seed(0)
    with native_only():
        out = F.rrelu(xd, lower, upper, training=True)
        g = data(200, 50, dtype=dtype, seed=6).to(DEV)
        grad, = torch.autograd.grad(out, xd, g)
    out, grad, g = out.detach().cpu(), grad.cpu(), g.cpu()
    neg = x <= 0
    assert torch.equal(out[~neg], x[~neg]) and torch.equal(grad[~neg], g[~neg])
    slopes = out[x < 0] / x[x < 0]
    assert slopes.min() >= lower - 1e-6 and slopes.max() <= upper + 1e-6
    assert abs(slopes.mean().item() - (lower + upper) / 2) < 0.01       # U(lower, upper): mean 0.2, sd 0.058
    assert abs(slopes.std().item() - (upper - lower) / 12 ** 0.5) < 0.01
    assert slopes.unique().numel() > 1000                                # a slope per element
    torch.testing.assert_close(grad[x < 0], g[x < 0] * slopes, rtol=1e-5, atol=1e-6)  # the gradient is noise
    assert torch.equal(out[x == 0], x[x == 0])
    # in-place and evaluation (a leaky_relu of the mean slope, as CPU)
    with native_only():
        y = x.to(DEV)
        F.rrelu(y, lower, upper, training=True, inplace=True)
    assert torch.equal((y.cpu() == x)[~neg], torch.ones_like(x, dtype=torch.bool)[~neg])
    check_grads(lambda t: F.rrelu(t, lower, upper, training=False), x)
    raises_like_cpu(lambda t: torch.ops.aten.rrelu_with_noise(t, torch.empty_like(t), 0.5, 0.1, True), x)


# ---- pdist, cdist ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_pdist_matches_cpu(dtype):
    x = data(7, 5, dtype=dtype)
    x[3] = x[1]                                    # a zero distance: its gradient is 0, as CPU's
    x[5, 2] = x[2, 2]                              # a zero coordinate difference
    for p in [0, 1, 0.5, 1.5, 2, 3, float("inf")]:
        check_grads(lambda t: F.pdist(t, p), x, tol=SUM_TOL)
    check_grads(lambda t: F.pdist(t), x.t().contiguous().t())      # a transposed input (pdist copies it)
    for shape in [(1, 5), (4, 0)]:
        check_grads(lambda t: F.pdist(t), data(*shape, dtype=dtype))
    # no rows: CPU's backward crashes (reads before its input), so ours is checked alone: an empty gradient
    empty = torch.empty(0, 5, dtype=dtype, device=DEV, requires_grad=True)
    with native_only():
        out = F.pdist(empty)
        grad, = torch.autograd.grad(out, empty, torch.empty(0, dtype=dtype, device=DEV))
    assert out.shape == (0,) and grad.shape == (0, 5)
    big = data(300, 3, dtype=dtype)                 # 44850 pairs: the row search at scale
    check_grads(lambda t: F.pdist(t), big, tol=SUM_TOL)


def test_pdist_errors():
    raises_like_cpu(lambda t: F.pdist(t), data(2, 3, 4))
    raises_like_cpu(lambda t: F.pdist(t, -1), data(3, 4))
    raises_like_cpu(lambda t: F.pdist(t), data(3, 4).long())
    raises_like_cpu(lambda t: F.pdist(t), data(3, 4).half())


@pytest.mark.parametrize("dtype", FLOATS)
def test_cdist_matches_cpu(dtype):
    a, b = data(2, 5, 4, dtype=dtype), data(2, 6, 4, dtype=dtype, seed=7)
    b[0, 2] = a[0, 1]                               # a zero distance
    for p in [0, 1, 0.5, 1.5, 2, 3, float("inf")]:
        check_grads(lambda x, y: torch.cdist(x, y, p), a, b, tol=SUM_TOL)
    check_grads(lambda x, y: torch.cdist(x, y), a[0], b, tol=SUM_TOL)               # broadcast batch
    check_grads(lambda x, y: torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist"), data(30, 3, dtype=dtype),
                data(27, 3, dtype=dtype, seed=8), tol=SUM_TOL)                        # past 25 rows, without mm
    check_grads(lambda x, y: torch.cdist(x, y), a.transpose(1, 2).contiguous().transpose(1, 2), b, tol=SUM_TOL)
    for sa, sb in [((0, 4), (3, 4)), ((2, 0), (3, 0)), ((0, 2, 4), (0, 3, 4))]:
        check_grads(lambda x, y: torch.cdist(x, y), data(*sa, dtype=dtype), data(*sb, dtype=dtype))


def test_cdist_errors():
    raises_like_cpu(lambda x, y: torch.cdist(x, y), data(3), data(3, 3))
    raises_like_cpu(lambda x, y: torch.cdist(x, y), data(2, 3), data(3, 4))
    raises_like_cpu(lambda x, y: torch.cdist(x, y, -1), data(2, 3), data(3, 3))
    raises_like_cpu(lambda x, y: torch.cdist(x, y), data(2, 3).long(), data(3, 3).long())
    raises_like_cpu(lambda x, y: torch.cdist(x, y), data(2, 3).half(), data(3, 3).half())
