"""layer_norm, group_norm and batch_norm (training and eval, running stats) run natively on
opencl: values and gradients (input, weight, bias) against CPU."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = [torch.float32, torch.float64]


def check_grad(fn, inputs, rtol=1e-5, atol=1e-5):
    cpu = [None if x is None else x.clone().requires_grad_() for x in inputs]
    dev = [None if x is None else x.to(DEV).requires_grad_() for x in inputs]
    y_cpu = fn(*cpu)
    with native_only():
        y_dev = fn(*dev)
        torch.testing.assert_close(y_dev.cpu(), y_cpu.detach(), rtol=rtol, atol=atol)
        if y_cpu.numel() == 0:
            return
        g = torch.randn(y_cpu.shape, dtype=y_cpu.dtype, generator=torch.Generator().manual_seed(5))
        grads_dev = torch.autograd.grad(y_dev, [x for x in dev if x is not None], g.to(DEV))
    grads_cpu = torch.autograd.grad(y_cpu, [x for x in cpu if x is not None], g)
    for a, b in zip(grads_dev, grads_cpu):
        torch.testing.assert_close(a.cpu(), b, rtol=rtol * 10, atol=atol * 10)


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,normalized", [((4, 5, 6), (6,)), ((4, 5, 6), (5, 6)), ((3, 200), (200,)),
                                              ((0, 6), (6,)), ((6,), (6,))])
def test_layer_norm_matches_cpu(dtype, affine, shape, normalized):
    x = data(*shape, dtype=dtype)
    w = data(*normalized, dtype=dtype, seed=1) if affine else None
    b = data(*normalized, dtype=dtype, seed=2) if affine else None
    check_grad(lambda x, w, b: F.layer_norm(x, normalized, w, b, eps=1e-5), [x, w, b])


def test_layer_norm_non_contiguous_and_stats():
    x = data(5, 4, 6)
    check_grad(lambda x: F.layer_norm(x.transpose(0, 1), (6,)), [x])
    with native_only():
        out, mean, rstd = torch.native_layer_norm(x.to(DEV), [6], None, None, 1e-5)
    ref = torch.native_layer_norm(x, [6], None, None, 1e-5)
    assert mean.shape == ref[1].shape and rstd.shape == ref[2].shape
    torch.testing.assert_close(rstd.cpu(), ref[2])


def test_layer_norm_bad_shape_raises_like_cpu():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(torch.zeros(3, 4, device=DEV), (5,))


# A constant row has variance exactly 0 on CPU (Welford's update), so eps = 0 gives NaN there; a mean
# summed as x / n is off by an ulp and gave a huge rstd instead. Rows of 3 and of 64 take different kernels.
@pytest.mark.parametrize("rows", [3, 64])
@pytest.mark.parametrize("dtype", FLOATS)
def test_norm_of_constant_rows_with_eps_zero_is_nan_as_on_cpu(rows, dtype):
    x = (torch.randn(rows, dtype=dtype) * 100)[:, None].expand(rows, 37).contiguous()
    with native_only():
        for fn in (lambda t: F.layer_norm(t, (37,), eps=0.0), lambda t: F.group_norm(t.view(rows, 1, 37), 1, eps=0.0),
                   lambda t: torch.ops.aten.native_layer_norm(t, (37,), None, None, 0.0)[1]):
            expected, got = fn(x), fn(x.to(DEV)).cpu()
            torch.testing.assert_close(got, expected, equal_nan=True)
    # Empty rows: CPU's mean is 0 and its rstd NaN.
    empty = torch.randn(5, 0, dtype=dtype)
    for expected, got in zip(torch.ops.aten.native_layer_norm(empty, (0,), None, None, 1e-5),
                             torch.ops.aten.native_layer_norm(empty.to(DEV), (0,), None, None, 1e-5)):
        torch.testing.assert_close(got.cpu(), expected, equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("groups", [1, 3, 6])
@pytest.mark.parametrize("shape", [(3, 6, 4, 5), (2, 6), (2, 6, 7)])
def test_group_norm_matches_cpu(dtype, groups, shape):
    x = data(*shape, dtype=dtype)
    check_grad(lambda x, w, b: F.group_norm(x, groups, w, b), [x, data(6, dtype=dtype, seed=1),
                                                                data(6, dtype=dtype, seed=2)])
    check_grad(lambda x: F.group_norm(x, groups), [x])


def test_group_norm_bad_groups_raises():
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(torch.zeros(2, 6, 3, device=DEV), 4)


@pytest.mark.parametrize("dtype", FLOATS)
# Planes (S per channel and sample) shorter than, not a multiple of and longer than the CPU form's 8 lanes and
# 4096-element runs; more samples than a work-group's items (N = 70), each taking planes in turn; one sample.
@pytest.mark.parametrize("shape", [(3, 6, 4, 5), (8, 6), (4, 6, 7), (70, 6, 3), (1, 6, 5000), (2, 6, 64, 65)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_cpu(dtype, shape, training):
    x = data(*shape, dtype=dtype)
    w, b = data(6, dtype=dtype, seed=1), data(6, dtype=dtype, seed=2)
    rm_cpu, rv_cpu = data(6, dtype=dtype, seed=3), data(6, dtype=dtype, seed=4).abs() + 0.5
    rm_dev, rv_dev = rm_cpu.to(DEV), rv_cpu.to(DEV)

    def fn(x, w, b):
        on_dev = x.device.type == DEV
        return F.batch_norm(x, rm_dev if on_dev else rm_cpu, rv_dev if on_dev else rv_cpu, w, b,
                            training=training, momentum=0.3, eps=1e-4)

    check_grad(fn, [x, w, b])
    torch.testing.assert_close(rm_dev.cpu(), rm_cpu)
    torch.testing.assert_close(rv_dev.cpu(), rv_cpu)


def test_batch_norm_without_running_stats_or_affine():
    check_grad(lambda x: F.batch_norm(x, None, None, training=True), [data(5, 3, 4)])


def test_batchnorm2d_module_tracks_like_cpu():
    torch.manual_seed(0)
    cpu = nn.BatchNorm2d(4)
    dev = copy.deepcopy(cpu).to(DEV)
    with native_only():
        for step in range(3):
            x = data(2, 4, 3, 3, seed=step)
            cpu(x)
            dev(x.to(DEV))
        dev.eval()
        cpu.eval()
        x = data(2, 4, 3, 3, seed=9)
        torch.testing.assert_close(dev(x.to(DEV)).cpu(), cpu(x))
    torch.testing.assert_close(dev.running_mean.cpu(), cpu.running_mean)
    torch.testing.assert_close(dev.running_var.cpu(), cpu.running_var)
    assert int(dev.num_batches_tracked.cpu()) == 3
