"""Optimizer steps on opencl against the same steps on CPU: SGD (momentum, Nesterov,
dampening, weight decay, maximize), Adam and AdamW (amsgrad, weight decay, maximize),
each in the for-loop, foreach=True and fused=True implementations, and clip_grad_norm_.
Also: a training step of an MLP with dropout under AdamW and clip_grad_norm_ is native
except for an explicit allow-list of operators other branches make native."""
import copy

import pytest
import torch
from torch import nn

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
STEPS = 4
TOL = dict(rtol=1e-5, atol=1e-5)

# Operators the fallback may still serve in a training step: reductions and BLAS,
# which other branches make native. TO SHRINK to empty as those land.


@pytest.fixture
def fallback_stats():
    torch.opencl.reset_fallback_stats()
    yield
    torch.opencl.reset_fallback_stats()


def _params(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    shapes = [(7, 5), (5,), (3, 4, 2), (1,)]
    return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]


def _grads(step, params):
    g = torch.Generator().manual_seed(100 + step)
    return [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]


def _run(opt_cls, kwargs, device, dtype=torch.float32, clip=None):
    params = [p.to(device).requires_grad_() for p in _params(dtype)]
    opt = opt_cls(params, **kwargs)
    for step in range(STEPS):
        for p, g in zip(params, _grads(step, params)):
            p.grad = g.to(device)
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
    return [p.detach().cpu() for p in params], opt


IMPLS = [dict(foreach=False), dict(foreach=True), dict(fused=True)]
SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True),
]
ADAM_CONFIGS = [
    dict(lr=0.01),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, weight_decay=0.1, betas=(0.8, 0.9)),
    dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.05, eps=1e-6),
]


def _compare(opt_cls, kwargs, dtype=torch.float32, clip=None):
    expected, _ = _run(opt_cls, kwargs, "cpu", dtype, clip)
    got, opt = _run(opt_cls, kwargs, DEV, dtype, clip)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, **TOL)
    return opt


@pytest.mark.parametrize("impl", IMPLS, ids=["forloop", "foreach", "fused"])
@pytest.mark.parametrize("config", SGD_CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_sgd_matches_cpu(impl, config):
    _compare(torch.optim.SGD, {**config, **impl})


@pytest.mark.parametrize("opt_cls", [torch.optim.Adam, torch.optim.AdamW])
@pytest.mark.parametrize("impl", IMPLS, ids=["forloop", "foreach", "fused"])
@pytest.mark.parametrize("config", ADAM_CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_adam_matches_cpu(opt_cls, impl, config):
    _compare(opt_cls, {**config, **impl})


@pytest.mark.parametrize("opt_cls", [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW])
def test_fused_float64(opt_cls):
    kwargs = dict(lr=0.01, fused=True, weight_decay=0.01)
    if opt_cls is torch.optim.SGD:
        kwargs["momentum"] = 0.9
    _compare(opt_cls, kwargs, dtype=torch.float64)


def test_fused_tensor_lr():
    _compare(torch.optim.AdamW, dict(lr=torch.tensor(0.01), fused=True))


def test_fused_skips_step_on_found_inf():
    p = torch.ones(4, device=DEV)
    g = torch.full((4,), 2.0, device=DEV)
    m, v, vmax = torch.zeros(4, device=DEV), torch.zeros(4, device=DEV), torch.zeros(4, device=DEV)
    step = torch.ones((), device=DEV)
    torch._fused_adam_([p], [g], [m], [v], [vmax], [step], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                       eps=1e-8, amsgrad=False, maximize=False, found_inf=torch.ones((), device=DEV))
    assert torch.equal(p.cpu(), torch.ones(4))
    # grad_scale divides the gradient: scaled by 4 and unscaled, the result equals the plain step
    torch._fused_sgd_([p], [g * 4], [], weight_decay=0.0, momentum=0.0, lr=0.5, dampening=0.0, nesterov=False,
                      maximize=False, is_first_step=True, grad_scale=torch.full((), 4.0, device=DEV),
                      found_inf=torch.zeros((), device=DEV))
    torch.testing.assert_close(p.cpu(), torch.zeros(4))


def test_fused_non_contiguous_param():
    base_cpu = torch.randn(6, 4)
    grad = torch.randn(4, 6)
    expected = base_cpu.t() - 0.1 * grad  # (CPU's own _fused_sgd_ misbehaves with an empty buffer list)
    base = base_cpu.to(DEV)
    param = base.t()
    torch._fused_sgd_([param], [grad.to(DEV)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                      nesterov=False, maximize=False, is_first_step=True)
    torch.testing.assert_close(base.cpu().t(), expected, **TOL)


def test_fused_bad_input_errors():
    p = torch.ones(4, device=DEV)
    with pytest.raises(RuntimeError, match="same length|gradients"):
        torch._fused_sgd_([p], [], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
                          maximize=False, is_first_step=True)
    with pytest.raises(RuntimeError, match="dtype"):
        torch._fused_sgd_([p], [torch.ones(4, device=DEV, dtype=torch.int32)], [], weight_decay=0.0,
                          momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=True)


@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_norm_matches_cpu(foreach):
    _compare(torch.optim.SGD, dict(lr=0.1, momentum=0.9, foreach=foreach), clip=0.5)


@pytest.mark.parametrize("impl", IMPLS, ids=["forloop", "foreach", "fused"])
def test_optimizer_steps_are_native(impl, fallback_stats):
    for opt_cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
        kwargs = dict(lr=0.01, weight_decay=0.01, **impl)
        if opt_cls is torch.optim.SGD:
            kwargs.update(momentum=0.9, nesterov=True)
        else:
            kwargs.update(amsgrad=True)
        torch.opencl.set_fallback_mode("error")
        try:
            _run(opt_cls, kwargs, DEV)
        finally:
            torch.opencl.set_fallback_mode("warn")


@pytest.mark.parametrize("fused", [False, True])
def test_mlp_training_step_runs_without_fallback(fused, fallback_stats):
    # The target: an MLP with dropout under AdamW and clip_grad_norm_, with
    # TORCH_OPENCL_FALLBACK=error, so any operator served on the CPU raises.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4)).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
    x = torch.randn(5, 8).to(DEV)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    torch.opencl.reset_fallback_stats()
    torch.opencl.set_fallback_mode("error")
    try:
        for _ in range(2):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    finally:
        torch.opencl.set_fallback_mode("warn")
    after = [p.detach().cpu() for p in model.parameters()]
    assert torch.opencl.fallback_stats() == {}
    assert any(not torch.equal(b, a) for b, a in zip(before, after))
