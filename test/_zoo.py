"""The model zoo's harness (test_zoo_*.py): a model as its author wrote it, trained a few AdamW steps from the
same weights on the CPU and on opencl (every opencl operator native: the fallback refuses), compared step by
step, then run in eval mode and under inference_mode."""
import copy

import torch

from _device_helpers import native_only

DEV = "opencl"
# float32 after a few layers of GEMMs and reductions, relative to the tensor's own scale: a gradient entry
# that is a sum of cancelling terms can be tiny on the CPU and a rounding error off on the device.
RTOL = 1e-4
LR = 1e-2


def grad_tolerance(want, rtol, floor=1e-6):
    """The absolute tolerance: rtol of want's largest magnitude, or of `floor` for a tensor of rounding noise
    (the gradient of a key bias in attention is 0 exactly, a sum of cancelling terms in float32)."""
    return rtol * max(want.abs().max().item() if want.numel() else 0.0, floor)


def assert_close_to_cpu(got, want, what, rtol=RTOL, loose=None, loose_atol=0.0, floor=1e-6):
    """got (on opencl) equals want within rtol of want's largest magnitude; where the mask `loose` is true,
    within loose_atol instead."""
    assert got.device.type == DEV, f"{what} is on {got.device}"
    got = got.detach().cpu()
    want = want.detach()
    if loose is not None and loose.any():
        far = ((got - want).abs() > loose_atol) & loose
        assert not far.any(), f"{what}: {int(far.sum())} entries more than {loose_atol} off"
        got = torch.where(loose, want, got)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    if not want.is_floating_point():
        assert torch.equal(got, want), what
        return
    torch.testing.assert_close(got, want, rtol=rtol, atol=grad_tolerance(want, rtol, floor), equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def to_device(x):
    if isinstance(x, torch.Tensor):
        return x.to(DEV)
    if isinstance(x, dict):
        return {k: to_device(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(to_device(v) for v in x)
    return x


def tied_groups(model):
    """The sets of parameter names that share one tensor (remove_duplicate=False lists every name)."""
    by_id = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(p), []).append(name)
    return sorted(sorted(names) for names in by_id.values())


def move_keeping_parameters(ref):
    """A deepcopy of ref moved to opencl with Module.to, checked to keep its Parameter objects (and so its
    tied weights) as on CUDA. Returns it and an AdamW made before the move, which must train it."""
    model = copy.deepcopy(ref)
    ids = {name: id(p) for name, p in model.named_parameters(remove_duplicate=False)}
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    assert model.to(DEV) is model
    assert {name: id(p) for name, p in model.named_parameters(remove_duplicate=False)} == ids
    assert tied_groups(model) == tied_groups(ref)
    assert all(p.device.type == DEV for p in model.parameters())
    assert all(b.device.type == DEV for b in model.buffers())
    return model, optimizer


class StepChecker:
    """Compares an opencl copy of ref with ref, step by step: the gradients after each backward, the parameters
    and buffers after each optimizer step. Then the copy gets ref's values again, so that every step starts
    from the same weights (entries that float32 leaves undetermined, below, cannot drift apart and move what
    depends on them, such as the running mean of a BatchNorm after one whose bias has gradient 0)."""

    def __init__(self, ref, model, rtol=RTOL):
        self.ref, self.model, self.rtol = ref, model, rtol
        # Entries whose CPU gradient was within the tolerance of 0 (a key bias of attention, the bias of a
        # BatchNorm that feeds another through a linear map: their exact gradient is 0): there AdamW's step,
        # gradient / sqrt(its square's average), has a direction that float32 does not determine, and only
        # its size (about LR at most) is checked.
        self.undetermined = {name: torch.zeros_like(p, dtype=torch.bool) for name, p in ref.named_parameters()}

    def compare_gradients(self, what):
        params = dict(self.model.named_parameters())
        # A gradient's noise floor: float32 rounding of the model's largest gradient entries.
        floor = 1e-2 * max(p.grad.abs().max().item() for p in self.ref.parameters() if p.grad is not None)
        for name, p in self.ref.named_parameters():
            got = params[name].grad
            assert (p.grad is None) == (got is None), f"{name}.grad at {what}"
            if p.grad is not None:
                assert_close_to_cpu(got, p.grad, f"{name}.grad at {what}", self.rtol, floor=floor)
                self.undetermined[name] |= p.grad.abs() <= grad_tolerance(p.grad, self.rtol, floor)

    def compare_step(self, what):
        """After the optimizers stepped: parameters and buffers agree; then the copy takes ref's values."""
        for name, p in self.ref.named_parameters():
            assert_close_to_cpu(self.model.get_parameter(name), p, f"{name} after {what}", self.rtol,
                                loose=self.undetermined[name], loose_atol=3 * LR)
        for name, b in self.ref.named_buffers():
            # A running mean of a signal whose mean is 0 (after another BatchNorm) is rounding noise, in units
            # of the signal's spread (about 1).
            assert_close_to_cpu(self.model.get_buffer(name), b, f"buffer {name} after {what}", self.rtol, floor=1e-2)
        with torch.no_grad():
            for name, p in self.ref.named_parameters():
                self.model.get_parameter(name).copy_(p)
            for name, b in self.ref.named_buffers():
                self.model.get_buffer(name).copy_(b)


def train_and_compare(ref, batches, loss_fn, steps=3, rtol=RTOL, clip=None):
    """`steps` AdamW steps of ref on the CPU and of its opencl copy on the same batches (the gradient norm
    clipped to `clip` if given), compared by a StepChecker. Returns the opencl model."""
    model, optimizer = move_keeping_parameters(ref)
    ref_optimizer = torch.optim.AdamW(ref.parameters(), lr=LR, weight_decay=0.01)
    ref.train()
    model.train()
    checker = StepChecker(ref, model, rtol)
    for step in range(steps):
        batch = batches[step % len(batches)]
        ref_optimizer.zero_grad()
        want = loss_fn(ref, batch)
        want.backward()
        optimizer.zero_grad()
        with native_only():
            got = loss_fn(model, to_device(batch))
            got.backward()
            torch.opencl.synchronize()
        assert_close_to_cpu(got, want, f"loss at step {step}", rtol)
        checker.compare_gradients(f"step {step}")
        if clip is not None:
            want_norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
        ref_optimizer.step()
        with native_only():
            if clip is not None:
                got_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            torch.opencl.synchronize()
        if clip is not None:
            assert_close_to_cpu(got_norm, want_norm, f"gradient norm at step {step}", rtol)
        checker.compare_step(f"step {step}")
    return model


def eval_and_compare(ref, model, inputs, forward, rtol=RTOL):
    """forward(model, inputs) in eval mode, with autograd and under inference_mode, against the CPU."""
    ref.eval()
    model.eval()
    with torch.no_grad():
        want = forward(ref, inputs)
    with native_only():
        got = forward(model, to_device(inputs))
        with torch.inference_mode():
            got_inference = forward(model, to_device(inputs))
    assert_close_to_cpu(got, want, "eval forward", rtol)
    assert_close_to_cpu(got_inference, want, "inference_mode forward", rtol)
    assert got_inference.is_inference()
