"""torch.autocast("opencl"): PyTorch's lower-precision and fp32 operator lists,
registered for AutocastPrivateUse1, with bfloat16 as the default dtype."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

DEV = torch.device("opencl")


def test_autocast_is_available_with_bfloat16_default():
    assert torch.amp.is_autocast_available("opencl")
    assert torch.get_autocast_dtype("opencl") == torch.bfloat16
    supported = torch.opencl.get_amp_supported_dtype()
    assert torch.bfloat16 in supported
    assert (torch.float16 in supported) == torch.opencl.is_fp16_supported()
    assert torch.opencl.is_bf16_supported()


def test_lower_precision_ops_give_bfloat16():
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    lin = torch.nn.Linear(16, 4)
    lin_d = torch.nn.Linear(16, 4).to(DEV)
    lin_d.load_state_dict(lin.state_dict())
    ad, bd = a.to(DEV), b.to(DEV)
    with torch.autocast("opencl"):
        assert torch.is_autocast_enabled("opencl")
        mm = ad @ bd
        out = lin_d(ad)
        bmm = torch.bmm(ad[None], bd[None])
        addmm = torch.addmm(torch.zeros(4, device=DEV), ad, bd)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mm_c = a @ b
        out_c = lin(a)
    for t in (mm, out, bmm, addmm):
        assert t.dtype == torch.bfloat16 and t.device.type == "opencl"
    assert mm_c.dtype == torch.bfloat16
    torch.testing.assert_close(mm.cpu(), mm_c, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(out.cpu(), out_c, atol=2e-2, rtol=2e-2)
    assert (ad @ bd).dtype == torch.float32  # outside the region
    assert not torch.is_autocast_enabled("opencl")


def test_fp32_ops_give_float32():
    x = torch.randn(6, 10)
    xd = x.to(DEV).bfloat16()
    with torch.autocast("opencl"):
        sm = torch.softmax(xd, dim=1)
        lsm = F.log_softmax(xd, dim=1)
        ex = torch.exp(xd)
        s = torch.sum(xd)
        mse = F.mse_loss(xd, torch.zeros_like(xd))
    for t in (sm, lsm, ex, s, mse):
        assert t.dtype == torch.float32, t
    # As on cuda (CPU autocast keeps softmax in the input dtype): computed in float32.
    sm_c = torch.softmax(x.bfloat16().float(), dim=1)
    lsm_c = F.log_softmax(x.bfloat16().float(), dim=1)
    torch.testing.assert_close(sm.cpu(), sm_c, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lsm.cpu(), lsm_c, atol=1e-5, rtol=1e-5)


def test_promote_ops_widen():
    a = torch.randn(5, device=DEV)
    b = torch.randn(5, device=DEV).bfloat16()
    with torch.autocast("opencl"):
        assert torch.addcmul(a, a, b).dtype == torch.float32
        assert torch.atan2(a, b).dtype == torch.float32


def test_training_step_under_autocast():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(12, 8, device=DEV), torch.randint(0, 3, (12,), device=DEV)
    with torch.autocast("opencl"):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype == torch.float32 and torch.isfinite(p.grad.cpu()).all()
    opt.step()


def test_binary_cross_entropy_is_banned_as_on_cuda():
    p = torch.rand(4, device=DEV)
    with torch.autocast("opencl"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, torch.ones(4, device=DEV))
        F.binary_cross_entropy_with_logits(p, torch.ones(4, device=DEV))


def test_unsupported_dtype_warns_and_disables():
    if torch.opencl.is_fp16_supported():
        pytest.skip("the device has cl_khr_fp16: float16 autocast is supported")
    a = torch.randn(4, 4, device=DEV)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("opencl", dtype=torch.float16):
            assert (a @ a).dtype == torch.float32
    assert any("opencl Autocast only supports dtypes of" in str(w.message) for w in caught)


def test_autocast_disabled_and_nested():
    a = torch.randn(4, 4, device=DEV)
    with torch.autocast("opencl"):
        with torch.autocast("opencl", enabled=False):
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == torch.bfloat16


def test_grad_scaler():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("opencl", init_scale=1024.0)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    with torch.autocast("opencl"):
        loss = model(torch.randn(3, 4, device=DEV)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 1024.0
    assert any(not torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters()))
    # An inf gradient skips the step and halves the scale.
    after = [p.detach().cpu().clone() for p in model.parameters()]
    opt.zero_grad()
    with torch.autocast("opencl"):
        loss = model(torch.full((3, 4), float("inf"), device=DEV)).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 512.0
    assert all(torch.equal(a, p.detach().cpu()) for a, p in zip(after, model.parameters()))
