"""torch.autocast("opencl"): PyTorch's lower-precision and fp32 operator lists,
registered for AutocastPrivateUse1, with the device's default dtype (amp.py: float16 where every device has
cl_khr_fp16, as Intel's OpenCL runtime does, and bfloat16 otherwise, as on PoCL)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

from _device_helpers import native_only

DEV = torch.device("opencl")


def device_default():
    """The lower-precision dtype the device's rule picks (amp.py), which an autocast region without a dtype uses."""
    return torch.float16 if torch.opencl.is_fp16_supported() else torch.bfloat16


def test_autocast_is_available_with_the_devices_default():
    assert torch.amp.is_autocast_available("opencl")
    torch.ones(1, device=DEV)
    assert torch.get_autocast_dtype("opencl") == device_default()
    supported = torch.opencl.get_amp_supported_dtype()
    assert torch.bfloat16 in supported
    assert (torch.float16 in supported) == torch.opencl.is_fp16_supported()
    assert torch.opencl.is_bf16_supported()


def test_default_follows_cl_khr_fp16_of_every_device():
    """float16 on Intel's OpenCL runtime, which has cl_khr_fp16; bfloat16 on PoCL's CPU device, which has not."""
    props = [torch_opencl._C._device_properties(i) for i in range(torch.opencl.device_count())]
    fp16 = all("cl_khr_fp16" in p["extensions"].split() for p in props)
    if any(p["platform"].startswith("Intel") for p in props):
        assert fp16  # so that CI's Intel slice runs float16 autocast for real
    assert torch.opencl.is_fp16_supported() == fp16
    torch.opencl.get_amp_supported_dtype()
    assert torch.get_autocast_dtype("opencl") == (torch.float16 if fp16 else torch.bfloat16)


def test_lower_precision_ops_give_the_default_dtype():
    dtype = device_default()
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
    with torch.autocast("cpu", dtype=dtype):
        mm_c = a @ b
        out_c = lin(a)
    for t in (mm, out, bmm, addmm):
        assert t.dtype == dtype and t.device.type == "opencl"
    assert mm_c.dtype == dtype
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
    assert logits.dtype == device_default() and loss.dtype == torch.float32
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


def test_float16_only_where_the_device_has_it():
    # Without cl_khr_fp16, float16 warns and disables the region (as CUDA's autocast does for a dtype it
    # lacks); with it, float16 is the region's dtype, and bfloat16 is accepted on every device.
    a = torch.randn(4, 4, device=DEV)
    fp16 = torch.opencl.is_fp16_supported()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("opencl", dtype=torch.float16):
            assert (a @ a).dtype == (torch.float16 if fp16 else torch.float32)
        with torch.autocast("opencl", dtype=torch.bfloat16):
            assert (a @ a).dtype == torch.bfloat16
    unsupported = [w for w in caught if "opencl Autocast only supports dtypes of" in str(w.message)]
    assert len(unsupported) == (0 if fp16 else 1), [str(w.message) for w in caught]


def test_autocast_disabled_and_nested():
    a = torch.randn(4, 4, device=DEV)
    with torch.autocast("opencl"):
        with torch.autocast("opencl", enabled=False):
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == device_default()


def test_grad_scaler_unscale_matches_cpu():
    """_amp_foreach_non_finite_check_and_unscale_ natively: the gradients times inv_scale (reduced precision
    ones through float), found_inf set by an inf or a NaN in any of them and never reset."""
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(5, 3, generator=g) * 1000, torch.randn(7, generator=g).to(torch.bfloat16) * 1000,
             torch.randn(4, 6, generator=g).t(), torch.randn(3, dtype=torch.float64, generator=g), torch.empty(0),
             torch.randn(2, 2, generator=g).to(torch.float16)]
    for poison, start in [(None, 0.0), (float("inf"), 0.0), (float("nan"), 0.0), (None, 1.0), (-float("inf"), 0.0)]:
        want = [t.clone() for t in grads]
        if poison is not None:
            want[2][1, 1] = poison
        got = [t.to(DEV) for t in want]
        want_found, want_inv = torch.full((1,), start), torch.full((1,), 1 / 512)
        torch._amp_foreach_non_finite_check_and_unscale_(want, want_found, want_inv)
        found = want_found.new_full((1,), start).to(DEV)
        with native_only():
            torch._amp_foreach_non_finite_check_and_unscale_(got, found, want_inv.to(DEV))
        assert torch.equal(found.cpu(), want_found)
        for a, b in zip(got, want):
            assert a.device.type == "opencl" and a.stride() == b.stride()
            torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0, equal_nan=True)


def test_grad_scaler_update_matches_cpu():
    """_amp_update_scale_ natively: backoff after an inf, growth after growth_interval clean steps (unless the
    grown scale is not finite), the growth tracker counting and resetting as on CPU."""
    for scale, tracker, found in [(1024.0, 0, 0.0), (1024.0, 2, 0.0), (1024.0, 2, 1.0), (3e38, 2, 0.0), (8.0, 1, 1.0)]:
        want = [torch.full((1,), scale), torch.full((1,), tracker, dtype=torch.int32)]
        got = [t.to(DEV) for t in want]
        torch._amp_update_scale_(*want, torch.full((1,), found), 2.0, 0.5, 3)
        with native_only():
            torch._amp_update_scale_(*got, torch.full((1,), found, device=DEV), 2.0, 0.5, 3)
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1]), (scale, tracker, found)
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
        torch._amp_update_scale_(torch.ones(1, device=DEV), torch.zeros(1, device=DEV), torch.zeros(1, device=DEV),
                                 2.0, 0.5, 3)
    with pytest.raises(RuntimeError, match="every scaled gradient must be on"):
        torch._amp_foreach_non_finite_check_and_unscale_([torch.ones(2)], torch.zeros(1, device=DEV),
                                                         torch.ones(1, device=DEV))


@native_only()
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


# --- The default dtype, chosen lazily per thread (aten/autocast.h) --------------------------------

def _run_fresh(code):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_default_is_chosen_lazily_without_enumerating_at_import():
    out = _run_fresh("""
import threading
import torch, torch_opencl
import torch_opencl.amp as amp
# Importing enumerates nothing (fork safety); the importing thread holds bfloat16 provisionally.
assert not torch.opencl.is_initialized()
assert torch.get_autocast_dtype("opencl") == torch.bfloat16
# The capability query decides: a device set with float16 gives float16 (faked here: no enumeration).
amp.is_fp16_supported = lambda: True
assert torch.opencl.get_amp_supported_dtype() == [torch.bfloat16, torch.float16]
assert torch.get_autocast_dtype("opencl") == torch.float16
assert not torch.opencl.is_initialized()
amp.is_fp16_supported = lambda: False
torch.opencl.get_amp_supported_dtype()
assert torch.get_autocast_dtype("opencl") == torch.float16  # once per thread

# The devices are first selected in a worker thread: it gets the real default right then.
seen = {}
def worker():
    seen["before"] = torch.get_autocast_dtype("opencl")
    torch.ones(1, device="opencl")
    seen["after"] = torch.get_autocast_dtype("opencl")
t = threading.Thread(target=worker); t.start(); t.join()
real = torch.float16 if torch.opencl.is_fp16_supported() else torch.bfloat16  # not the faked query
assert seen["before"] == torch.float16, seen  # PyTorch's own per-thread default
assert seen["after"] == real, (seen, real)
assert torch.get_autocast_dtype("opencl") == torch.float16  # the main thread keeps what it had
print("ok")
""")
    assert out.strip() == "ok"


def test_a_dtype_the_user_set_is_kept():
    out = _run_fresh("""
import torch, torch_opencl
import torch_opencl.amp as amp
torch.set_autocast_dtype("opencl", torch.float16)
amp.is_fp16_supported = lambda: False
torch.ones(1, device="opencl")
torch.opencl.get_amp_supported_dtype()
assert torch.get_autocast_dtype("opencl") == torch.float16
print("ok")
""")
    assert out.strip() == "ok"


def test_each_thread_gets_the_default_outside_autocast_regions():
    import threading

    fp16 = torch.opencl.is_fp16_supported()
    seen = {}

    def worker():
        seen["start"] = torch.get_autocast_dtype("opencl")
        torch.set_autocast_enabled("opencl", True)  # inside a region: left alone
        torch_opencl._C._autocast_apply_default(not fp16)
        seen["in_region"] = torch.get_autocast_dtype("opencl")
        torch.set_autocast_enabled("opencl", False)
        torch.opencl.get_amp_supported_dtype()
        seen["default"] = torch.get_autocast_dtype("opencl")
        a = torch.randn(4, 8, device=DEV)
        with torch.autocast("opencl"):
            seen["mm"] = (a @ a.T).dtype

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    expected = device_default()
    assert seen == {"start": torch.float16, "in_region": torch.float16, "default": expected, "mm": expected}
