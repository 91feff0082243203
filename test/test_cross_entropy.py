"""cross_entropy of (N, C) or (N, C, d1, ...) logits and class targets runs fused (aten/native/cross_entropy.cpp,
kernels_cl/cross_entropy.cl): two launches forward, one backward, in both forms (a work-item per row;
seg items per row on GPUs and for few rows). Values and gradients against CPU; bad targets raise CPU's
error; label smoothing too; what the fused path does not take (tracing, transforms, modes, forward AD,
other shapes) runs the composite, and a double backward differentiates it: both match CPU too."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from _device_helpers import (assert_same_as_cpu, index_checks_deferred, kernel_class, launched_kernels, native_only,
                             raises_index_error)

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FUSED = {"cross_entropy_rows", "cross_entropy_lines"}
FUSED_BACKWARD = {"cross_entropy_backward_rows", "cross_entropy_backward_lines"}
COMPOSITE = {"softmax_rows", "softmax_rows_group", "softmax_lines", "nll_forward_reduce", "nll_reduce_partials",
             "nll_forward_none", "nll_backward", "softmax_backward_rows", "softmax_backward_lines"}


def gen(seed):
    return torch.Generator().manual_seed(seed)


def run_both(fn, x, target, weight=None, grad_seed=1):
    """fn(x, target, weight) on CPU and natively on opencl, with the gradient of x for a random grad_output;
    returns (cpu (loss, grad), opencl (loss, grad), kernel names of the opencl forward and backward)."""
    out = []
    for device in ("cpu", DEV):
        xd = x.detach().to(device).requires_grad_()
        w = None if weight is None else weight.to(device)
        with native_only(), launched_kernels() as names:
            loss = fn(xd, target.to(device), w)
            g = torch.randn(loss.shape, generator=gen(grad_seed), dtype=x.dtype).to(device)
            (grad,) = torch.autograd.grad(loss, xd, g)
        out.append((loss.detach(), grad))
    return out[0], out[1], names


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 3])
@pytest.mark.parametrize("shape", [(300, 10), (200, 37), (64, 16), (3, 3000), (5, 7), (1, 1)])
def test_matches_cpu_and_runs_fused(shape, ignore_index, weighted, reduction, dtype):
    # (300, 10), (200, 37), (64, 16): a row per work-item on CPUs, blocks of 16 whole, partial and exact;
    # (3, 3000), (5, 7): few rows (seg items per row), longer and shorter than the items' registers.
    n, c = shape
    x = (torch.randn(shape, generator=gen(0)) * 4).to(dtype)
    target = torch.randint(0, c, (n,), generator=gen(2))
    target[::5] = ignore_index
    weight = (torch.rand(c, generator=gen(3)) + 0.5).to(dtype) if weighted else None
    want, got, names = run_both(
        lambda a, t, w: F.cross_entropy(a, t, weight=w, reduction=reduction, ignore_index=ignore_index), x, target,
        weight)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert_same_as_cpu(got[0], want[0], rtol=tol * 10, atol=tol)
    assert_same_as_cpu(got[1], want[1], rtol=tol * 10, atol=tol)
    ran = set(names)
    assert len(ran & FUSED) == 1 and len(ran & FUSED_BACKWARD) == 1 and not ran & COMPOSITE, names
    # Forward and backward: the fused kernel, the reduction's sum, the backward kernel.
    assert len(names) == (2 if reduction == "none" else 3), names


@pytest.mark.parametrize("smoothing", [0.1, 1.0])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(300, 37), (3, 3000), (5, 7)])
def test_label_smoothing_matches_cpu_and_runs_fused(shape, weighted, reduction, smoothing):
    n, c = shape
    x = torch.randn(shape, generator=gen(20)) * 4
    target = torch.randint(0, c, (n,), generator=gen(21))
    target[::4] = 2  # ignored
    weight = torch.rand(c, generator=gen(22)) + 0.5 if weighted else None
    want, got, names = run_both(
        lambda a, t, w: F.cross_entropy(a, t, weight=w, reduction=reduction, ignore_index=2, label_smoothing=smoothing),
        x, target, weight)
    assert_same_as_cpu(got[0], want[0], rtol=1e-4, atol=1e-5)
    assert_same_as_cpu(got[1], want[1], rtol=1e-4, atol=1e-6)
    ran = set(names)
    assert ran & FUSED and ran & FUSED_BACKWARD and not ran & COMPOSITE, names


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5, 3, 7), (2, 40, 33), (3, 300, 2)])
def test_spatial_logits_match_cpu_and_run_fused(shape, weighted, reduction, smoothing):
    """(N, C, d1, ...): a row of C classes per position, read as columns (adjacent positions adjacent)."""
    c = shape[1]
    x = torch.randn(shape, generator=gen(30)) * 3
    target = torch.randint(0, c, (shape[0], *shape[2:]), generator=gen(31))
    target.view(-1)[::6] = -100
    weight = torch.rand(c, generator=gen(32)) + 0.5 if weighted else None
    want, got, names = run_both(
        lambda a, t, w: F.cross_entropy(a, t, weight=w, reduction=reduction, label_smoothing=smoothing), x, target,
        weight)
    assert_same_as_cpu(got[0], want[0], rtol=1e-4, atol=1e-5)
    assert_same_as_cpu(got[1], want[1], rtol=1e-4, atol=1e-6)
    assert {"cross_entropy_lines", "cross_entropy_backward_lines"} <= set(names) and not set(names) & COMPOSITE, names


def test_spatial_bad_target_raises_like_cpu():
    x, t = torch.randn(2, 4, 3, 3, generator=gen(33)), torch.randint(0, 4, (2, 3, 3), generator=gen(34))
    t[1, 2, 0] = 9
    with pytest.raises(IndexError, match="Target 9 is out of bounds"):
        F.cross_entropy(x, t)
    with native_only(), raises_index_error("Target 9 is out of bounds"):
        F.cross_entropy(x.to(DEV), t.to(DEV))


def test_forms_follow_the_kernel_class():
    x, t = torch.randn(512, 100, device=DEV), torch.randint(0, 100, (512,), device=DEV)
    with launched_kernels() as names:
        F.cross_entropy(x, t)
    assert ("cross_entropy_lines" if kernel_class() == "gpu" else "cross_entropy_rows") in names, names


def test_one_dim_logits_and_special_values():
    x = torch.randn(7, 6, generator=gen(4))
    x[1, 2] = float("inf")
    x[2, 0] = float("nan")
    x[3] = float("-inf")
    x[4, 5] = float("-inf")
    t = torch.tensor([0, 2, 1, 1, 5, 3, 4])
    for reduction in ("none", "sum"):
        want, got, _ = run_both(lambda a, tt, w: F.cross_entropy(a, tt, reduction=reduction), x, t)
        assert_same_as_cpu(got[0], want[0])
        assert_same_as_cpu(got[1], want[1])
    row = torch.randn(9, generator=gen(5))
    for reduction in ("none", "mean"):
        want, got, names = run_both(lambda a, tt, w: F.cross_entropy(a, tt, reduction=reduction), row, torch.tensor(4))
        assert_same_as_cpu(got[0], want[0])
        assert_same_as_cpu(got[1], want[1])
        assert set(names) & FUSED, names


def test_every_target_ignored_is_nan_for_mean_like_cpu():
    x, t = torch.randn(4, 5, generator=gen(6)), torch.full((4,), -100)
    for reduction in ("mean", "sum", "none"):
        want, got, _ = run_both(lambda a, tt, w: F.cross_entropy(a, tt, reduction=reduction), x, t)
        assert_same_as_cpu(got[0], want[0])
        assert_same_as_cpu(got[1], want[1])


@pytest.mark.parametrize("bad", [10, -1])
@pytest.mark.parametrize("rows", [40, 3])
def test_bad_target_raises_like_cpu_and_the_device_keeps_working(bad, rows):
    x, t = torch.randn(rows, 10, generator=gen(7)), torch.randint(0, 10, (rows,), generator=gen(8))
    t[rows // 2] = bad
    t[-1] = 11
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.cross_entropy(x, t)
    # Raised at the call, the first bad target, as on CPU; recorded for the next wait (GPU class), the one
    # whose row got there first.
    first = f"({bad}|11)" if index_checks_deferred() else bad
    with native_only(), raises_index_error(f"Target {first} is out of bounds"):
        F.cross_entropy(x.to(DEV), t.to(DEV))
    good = t.clamp(0, 9)
    assert_same_as_cpu(F.cross_entropy(x.to(DEV), good.to(DEV)), F.cross_entropy(x, good))


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_double_backward_matches_cpu(smoothing):
    x, t = torch.randn(6, 5, generator=gen(9), dtype=torch.float64), torch.tensor([0, 4, 2, -100, 1, 1])
    w = torch.rand(5, generator=gen(10), dtype=torch.float64)
    v = torch.randn(6, 5, generator=gen(11), dtype=torch.float64)
    results = []
    for device in ("cpu", DEV):
        xd = x.to(device).requires_grad_()
        loss = F.cross_entropy(xd, t.to(device), weight=w.to(device), label_smoothing=smoothing)
        (g,) = torch.autograd.grad(loss, xd, create_graph=True)
        (gg,) = torch.autograd.grad((g * v.to(device)).sum(), xd)
        results.append((g.detach(), gg))
    assert_same_as_cpu(results[1], results[0])


def test_forward_ad_vmap_and_grad_transforms_match_cpu():
    import torch.autograd.forward_ad as fwAD
    x, t, tangent = torch.randn(5, 4, generator=gen(12)), torch.tensor([1, 0, 3, 3, 2]), torch.randn(5, 4)
    out = []
    for device in ("cpu", DEV):
        with fwAD.dual_level():
            dual = fwAD.make_dual(x.to(device), tangent.to(device))
            jvp = fwAD.unpack_dual(F.cross_entropy(dual, t.to(device))).tangent
        per_sample = torch.func.vmap(lambda a, b: F.cross_entropy(a, b))(x.to(device).unsqueeze(1),
                                                                        t.to(device).unsqueeze(1))
        grad = torch.func.grad(lambda a: F.cross_entropy(a, t.to(device), reduction="sum"))(x.to(device))
        out.append((jvp, per_sample, grad))
    assert_same_as_cpu(out[1], out[0])


def test_what_the_fused_path_does_not_take_runs_the_composite():
    x = torch.randn(8, 5, generator=gen(13))
    t = torch.randint(0, 5, (8,), generator=gen(14))
    probabilities = torch.softmax(torch.randn(8, 5, generator=gen(15)), 1)
    cases = [
        lambda a, w: F.cross_entropy(a, t.to(a.device), label_smoothing=1.5),  # CPU's error
        lambda a, w: F.cross_entropy(a, probabilities.to(a.device)),
        lambda a, w: F.cross_entropy(a, t.to(a.device).float()),  # CPU's error: class targets must be integers
        lambda a, w: torch._C._nn.cross_entropy_loss(a, t.to(a.device), None, 5, -100, 0.0),  # no such reduction
        lambda a, w: F.cross_entropy(a, t.to(a.device), weight=w),
    ]
    weight = torch.rand(5, generator=gen(16)) + 0.5
    for case in cases:
        got = []
        for device in ("cpu", DEV):
            a = x.to(device).requires_grad_()
            w = weight.to(device).requires_grad_()  # a weight that needs a gradient: CPU's own answer
            try:
                loss = case(a, w)
                grads = torch.autograd.grad(loss, a)
                got.append((loss.detach(), grads[0]))
            except RuntimeError as e:
                got.append(str(e))
        if isinstance(got[0], str):
            assert got[1] == got[0]
        else:
            assert_same_as_cpu(got[1], got[0])


def test_dispatch_modes_and_tracing_see_the_composite():
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    x, t = torch.randn(4, 3, device=DEV), torch.tensor([0, 2, 1, 1], device=DEV)
    with Record():
        F.cross_entropy(x, t)
    assert any(n.startswith("_log_softmax") for n in seen) and any(n.startswith("nll_loss") for n in seen), seen
    graph = torch.fx.experimental.proxy_tensor.make_fx(lambda a, b: F.cross_entropy(a, b))(x, t)
    targets = {str(n.target) for n in graph.graph.nodes}
    assert any("log_softmax" in n for n in targets) and any("nll_loss" in n for n in targets), targets


def test_logits_changed_in_place_before_backward_is_autograd_s_error():
    """The fused forward saves the logits (not log_softmax's output): changing them in place before the
    backward is autograd's clear error, not a wrong gradient."""
    x = torch.randn(4, 3, device=DEV, requires_grad=True)
    y = x * 1
    loss = F.cross_entropy(y, torch.tensor([0, 1, 2, 0], device=DEV))
    with torch.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
