"""softmax / log_softmax and nll_loss / nll_loss2d (hence cross_entropy) run natively on opencl:
values and gradients against CPU, dtypes, 0-size, non-contiguous, bad targets."""


import pytest
import torch
import torch.nn.functional as F

from _device_helpers import assert_same_as_cpu, native_only, raises_index_error

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]


def check_grad(fn, inputs, grad_seed=0, rtol=1e-5, atol=1e-5):
    """fn on CPU and on opencl (natively): outputs and input gradients agree."""
    cpu = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    dev = [x.to(DEV).requires_grad_(x.is_floating_point()) for x in inputs]
    y_cpu = fn(*cpu)
    with native_only():
        y_dev = fn(*dev)
        torch.testing.assert_close(y_dev.cpu(), y_cpu.detach(), rtol=rtol, atol=atol, equal_nan=True)
        if y_cpu.numel() == 0:
            return
        g = torch.randn(y_cpu.shape, dtype=y_cpu.dtype, generator=torch.Generator().manual_seed(grad_seed))
        wrt_cpu = [x for x in cpu if x.requires_grad]
        wrt_dev = [x for x in dev if x.requires_grad]
        grads_dev = torch.autograd.grad(y_dev, wrt_dev, g.to(DEV))
    grads_cpu = torch.autograd.grad(y_cpu, wrt_cpu, g)
    for a, b in zip(grads_dev, grads_cpu):
        torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("shape,dim", [((5, 10), 1), ((3, 4, 5), 1), ((3, 4, 5), 0), ((2, 300), -1), ((7,), 0),
                                       ((), 0), ((0, 4), 1), ((3, 0), 1)])
def test_softmax_matches_cpu(fn, dtype, shape, dim):
    x = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(1)) * 4
    check_grad(lambda t: fn(t, dim), [x])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_over_a_dim_with_columns_after_it(fn, dtype):
    # Columns after the dim (inner > 1): the CPU form's work-items take 16 adjacent columns of one outer
    # index, whole blocks and a partial one (37 = 16 + 16 + 5), with NaN, inf and a column of -inf only.
    x = torch.randn(3, 50, 37, dtype=dtype, generator=torch.Generator().manual_seed(2)) * 4
    check_grad(lambda t: fn(t, 1), [x])
    check_grad(lambda t: fn(t, 0), [x[:, :, :20]])
    x[1, 7, 3] = float("nan")
    x[0, 5, 36] = float("inf")
    x[2, :, 20] = float("-inf")
    with native_only():
        torch.testing.assert_close(fn(x.to(DEV), 1).cpu(), fn(x, 1), equal_nan=True)
        torch.testing.assert_close(torch._safe_softmax(x.to(DEV), 1).cpu(), torch._safe_softmax(x, 1), equal_nan=True)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_non_contiguous_and_out(fn):
    x = torch.randn(6, 5, 4)
    check_grad(lambda t: fn(t.transpose(0, 2), 1), [x])
    op = torch._softmax if fn is F.softmax else torch._log_softmax
    with native_only():
        out = torch.empty(5, 4, device=DEV).t()  # not contiguous
        ret = torch.ops.aten._softmax.out(x[0].to(DEV).t(), 1, False, out=out) if fn is F.softmax else \
            torch.ops.aten._log_softmax.out(x[0].to(DEV).t(), 1, False, out=out)
    assert ret is out
    torch.testing.assert_close(out.cpu(), op(x[0].t(), 1, False))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_softmax_reduced_precision(dtype):
    x = torch.randn(4, 33).to(dtype)
    with native_only():
        y = F.log_softmax(x.to(DEV), 1)
    assert y.dtype == dtype
    torch.testing.assert_close(y.cpu(), F.log_softmax(x, 1), rtol=1e-2, atol=1e-2)


def test_softmax_special_values():
    x = torch.tensor([[1.0, float("nan"), 2.0], [float("-inf")] * 3, [float("inf"), 0.0, 1.0], [1e30, -1e30, 0.0]])
    with native_only():
        for fn in (F.softmax, F.log_softmax):
            torch.testing.assert_close(fn(x.to(DEV), 1).cpu(), fn(x, 1), equal_nan=True)


def test_softmax_bad_dim_raises_like_cpu():
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(torch.zeros(2, 3, device=DEV), 2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("shape,tshape", [((6, 5), (6,)), ((5,), ()), ((2, 5, 3, 4), (2, 3, 4)), ((0, 5), (0,))])
def test_cross_entropy_matches_cpu(dtype, reduction, weighted, ignore_index, shape, tshape):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(shape, dtype=dtype, generator=gen)
    t = torch.randint(0, 5, tshape, generator=gen)
    w = torch.rand(5, dtype=dtype, generator=gen) if weighted else None
    check_grad(lambda a: F.cross_entropy(a, t.to(a.device), weight=None if w is None else w.to(a.device),
                                         reduction=reduction, ignore_index=ignore_index), [x])


def test_nll_loss_all_ignored_is_nan_like_cpu():
    x, t = torch.randn(3, 4), torch.full((3,), 1)
    check_grad(lambda a: F.nll_loss(a, t.to(a.device), ignore_index=1), [x])


def test_nll_loss_out_forms():
    x, t = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])
    with native_only():
        out, tw = torch.empty(0, device=DEV), torch.empty(0, device=DEV)
        torch.ops.aten.nll_loss_forward.output(x.to(DEV), t.to(DEV), None, 1, -100, output=out, total_weight=tw)
    ref = torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)
    torch.testing.assert_close(out.cpu(), ref[0])
    torch.testing.assert_close(tw.cpu(), ref[1])


@pytest.mark.parametrize("target", [7, -1])
def test_bad_target_raises_like_cpu(target):
    x, t = torch.randn(3, 4), torch.tensor([0, target, 1])
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds"):
        F.nll_loss(x, t)
    with native_only(), raises_index_error(f"Target {target} is out of bounds"):
        F.nll_loss(x.to(DEV), t.to(DEV))
    with native_only(), raises_index_error(f"Target {target} is out of bounds"):
        F.cross_entropy(x.to(DEV).reshape(3, 4, 1, 1), t.to(DEV).reshape(3, 1, 1))
    good = torch.tensor([0, 3, 1])
    assert_same_as_cpu(F.nll_loss(x.to(DEV), good.to(DEV)), F.nll_loss(x, good))


def test_nll_loss_shape_errors_like_cpu():
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.nll_loss(torch.zeros(3, 4, device=DEV), torch.zeros(2, dtype=torch.long, device=DEV))
    with pytest.raises(RuntimeError, match="only batches of spatial targets supported"):
        torch.ops.aten.nll_loss2d_forward(torch.zeros(2, 3, 4, 4, device=DEV),
                                          torch.zeros(2, 4, dtype=torch.long, device=DEV), None, 1, -100)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(4, 5), (0, 3), (), (7,)])
@pytest.mark.parametrize("loss", ["mse", "smooth_l1", "smooth_l1_beta0", "huber"])
def test_elementwise_losses_match_cpu(dtype, reduction, shape, loss):
    gen = torch.Generator().manual_seed(4)
    a, b = torch.randn(shape, dtype=dtype, generator=gen), torch.randn(shape, dtype=dtype, generator=gen)
    r = {"none": 0, "mean": 1, "sum": 2}[reduction]
    fn = {
        "mse": lambda x: F.mse_loss(x, b.to(x.device), reduction=reduction),
        "smooth_l1": lambda x: F.smooth_l1_loss(x, b.to(x.device), reduction=reduction, beta=0.5),
        # beta=0 is l1 (F.smooth_l1_loss routes it to l1_loss in Python; the aten op handles it itself)
        "smooth_l1_beta0": lambda x: torch.ops.aten.smooth_l1_loss(x, b.to(x.device), r, 0.0),
        "huber": lambda x: F.huber_loss(x, b.to(x.device), reduction=reduction, delta=0.7),
    }[loss]
    check_grad(fn, [a])


def test_elementwise_loss_broadcast_and_errors():
    a, b = torch.randn(3, 4), torch.randn(4)
    with native_only():
        torch.testing.assert_close(torch.ops.aten.mse_loss(a.to(DEV), b.to(DEV), 0).cpu(),
                                   torch.ops.aten.mse_loss(a, b, 0))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        torch.ops.aten.smooth_l1_loss(a.to(DEV), a.to(DEV), 1, -1.0)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(a.to(DEV), a.to(DEV), delta=0.0)


def test_target_on_another_device_is_an_error():
    x = torch.randn(3, 4).to(DEV)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1, 2]), None, 1, -100)
