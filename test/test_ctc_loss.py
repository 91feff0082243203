"""F.ctc_loss on the device (aten/native/ctc_loss.cpp, kernels_cl/ctc_loss.cl; it ran on the CPU fallback):
losses and gradients against CPU PyTorch for padded and concatenated targets, int32 and int64 targets,
every reduction, zero_infinity, impossible alignments (inf), empty inputs and targets, a non-contiguous
log_probs, long targets (more states than a work-group has items) and the .Tensor length forms; CPU's errors
for bad arguments, and an error (not an out-of-bounds read, as on CPU) for a label that is not a class."""
import math

import pytest
import torch
from torch.nn import functional as F

from _device_helpers import device_floats, native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
FLOATS = device_floats()
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def compare(log_probs, targets, il, tl, dtype, **kwargs):
    lp = log_probs.detach().clone().requires_grad_()
    want = F.ctc_loss(lp, targets, il, tl, **kwargs)
    (want_grad,) = torch.autograd.grad(want.sum(), lp)
    lpd = log_probs.detach().to(DEV).requires_grad_()
    to_dev = (lambda v: v.to(DEV)) if isinstance(il, torch.Tensor) else (lambda v: v)
    with native_only():
        got = F.ctc_loss(lpd, targets.to(DEV), to_dev(il), to_dev(tl), **kwargs)
        (got_grad,) = torch.autograd.grad(got.sum(), lpd)
    torch.testing.assert_close(got.cpu(), want.detach(), equal_nan=True, **TOL[dtype])
    torch.testing.assert_close(got_grad.cpu(), want_grad, equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_ctc_loss_matches_cpu(dtype):
    g = torch.Generator().manual_seed(0)
    T, B, C = 12, 5, 6
    log_probs = torch.randn(T, B, C, generator=g, dtype=dtype).log_softmax(2)
    padded = torch.randint(1, C, (B, 5), generator=g)
    padded[0, 1] = padded[0, 2]  # a repeated label needs a blank between
    tl, il = [5, 3, 0, 4, 2], [12, 10, 7, 1, 0]  # batch 3 cannot align (inf); batch 4 has no frames
    concatenated = torch.cat([padded[b, :tl[b]] for b in range(B)])
    for targets in (padded, concatenated, padded.int()):
        for reduction in ("none", "sum", "mean"):
            for zero_infinity in (False, True):
                compare(log_probs, targets, il, tl, dtype, reduction=reduction, zero_infinity=zero_infinity)
    # int32 concatenated targets as a strided view on the device, given to aten::_ctc_loss itself (F.ctc_loss
    # hands it int64 contiguous ones): the kernels read an int64 copy, whose own offsets they must take.
    strided = torch.stack([concatenated, concatenated], 1).int().to(DEV)[:, 0]
    with native_only():
        got = torch.ops.aten._ctc_loss(log_probs.to(DEV), strided, il, tl)[0]
    want = torch.ops.aten._ctc_loss(log_probs, concatenated, il, tl)[0]
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **TOL[dtype])
    # Blank elsewhere than 0, lengths as tensors, a non-contiguous log_probs (batch first, transposed).
    blank_last = torch.randint(0, C - 1, (B, 5), generator=g)
    compare(log_probs, blank_last, torch.tensor(il), torch.tensor(tl), dtype, blank=C - 1, reduction="none",
            zero_infinity=True)
    batch_first = torch.randn(B, T, C, generator=g, dtype=dtype).log_softmax(2).transpose(0, 1)
    compare(batch_first, padded, [12] * B, tl, dtype, reduction="none", zero_infinity=True)


def test_ctc_loss_long_targets():
    """2 * 150 + 1 states: more than a work-group's items, so each work-item walks several. Over 400 steps
    float32 drifts (3.4e-4 in a gradient, on CPU as here): both are held to the float64 result."""
    g = torch.Generator().manual_seed(1)
    T, B, C = 400, 2, 20
    lp64 = torch.randn(T, B, C, generator=g, dtype=torch.float64).log_softmax(2).requires_grad_()
    targets = torch.randint(1, C, (B, 150), generator=g)
    lengths = ([400, 350], [150, 120])

    def loss_and_grad(lp, tg):
        loss = F.ctc_loss(lp, tg, *lengths, reduction="none")
        return loss.detach().cpu().double(), torch.autograd.grad(loss.sum(), lp)[0].cpu().double()

    ref_loss, ref_grad = loss_and_grad(lp64, targets)
    cpu_loss, cpu_grad = loss_and_grad(lp64.detach().float().requires_grad_(), targets)
    with native_only():
        dev_loss, dev_grad = loss_and_grad(lp64.detach().float().to(DEV).requires_grad_(), targets.to(DEV))
    assert (dev_loss - ref_loss).abs().max() <= 2 * (cpu_loss - ref_loss).abs().max() + 1e-5
    assert (dev_grad - ref_grad).abs().max() <= 2 * (cpu_grad - ref_grad).abs().max() + 1e-6
    with native_only():  # and in float64, CPU's to its own precision
        compare(lp64.detach(), targets, *lengths, torch.float64, reduction="none") if FLOATS[-1] == torch.float64 else None


def test_ctc_loss_trains_as_on_cpu():
    g = torch.Generator().manual_seed(2)
    T, B, C = 20, 3, 5
    start = torch.randn(T, B, C, generator=g)
    targets = torch.tensor([[1, 2, 3], [2, 2, 4], [4, 1, 1]])
    runs = []
    for device in ("cpu", DEV):
        logits = start.clone().to(device).requires_grad_()
        opt = torch.optim.SGD([logits], lr=2.0)
        losses = []
        with native_only():
            for _ in range(30):
                loss = F.ctc_loss(logits.log_softmax(2), targets.to(device), [T] * B, [3, 3, 3])
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        runs.append(losses)
    assert runs[0][-1] < 0.5 * runs[0][0] and all(math.isfinite(v) for v in runs[1]), runs
    torch.testing.assert_close(torch.tensor(runs[1]), torch.tensor(runs[0]), rtol=1e-4, atol=1e-5)


def test_ctc_loss_bad_arguments_raise_as_on_cpu():
    lp = torch.randn(6, 2, 5).log_softmax(2)
    tg = torch.tensor([[1, 2, 3], [3, 1, 1]])
    calls = [
        lambda lp, tg: F.ctc_loss(lp, tg, [7, 6], [2, 2]),  # an input longer than log_probs
        lambda lp, tg: F.ctc_loss(lp, tg, [6, 6], [2, 2], blank=5),
        lambda lp, tg: F.ctc_loss(lp, tg[0], [6, 6], [2, 2]),  # concatenated targets too short
        lambda lp, tg: F.ctc_loss(lp, tg, [6, 6], [2, -1]),
        lambda lp, tg: F.ctc_loss(lp, tg, [6, 6], [4, 2]),  # longer than the padded targets
    ]
    for call in calls:
        with pytest.raises(RuntimeError) as want:
            call(lp, tg)
        with native_only(), pytest.raises(RuntimeError) as got:
            call(lp.to(DEV), tg.to(DEV))
        assert str(got.value) == str(want.value)
    # A label that is not a class: CPU reads out of bounds; here it is an error, and the device goes on.
    with native_only(), pytest.raises(IndexError, match="target label 7 is not a class index in \\[0, 5\\)"):
        F.ctc_loss(lp.to(DEV), torch.tensor([[1, 2, 7], [3, 1, 1]], device=DEV), [6, 6], [3, 2])
        torch.opencl.synchronize()  # GPU-class devices report it at the next wait
    # Float targets are taken as CPU takes them; padding past a target's length may hold anything (here -1).
    compare(lp, tg.double(), [6, 6], [2, 2], torch.float32, reduction="none")
    compare(lp, torch.tensor([[1, 2, -1], [3, -1, -1]]), [6, 6], [2, 1], torch.float32, reduction="none")
