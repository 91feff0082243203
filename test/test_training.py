"""End-to-end training on the OpenCL device, checked against the same training on CPU.

The tests run on "opencl" and skip when torch_opencl cannot be imported or no OpenCL
device is available. Set TORCH_OPENCL_TEST_DEVICE=cpu to exercise the test logic itself
on CPU (the CPU-vs-CPU comparisons then pass trivially; the memory test skips).
"""

import copy
import gc
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

DEVICE_TYPE = os.environ.get("TORCH_OPENCL_TEST_DEVICE", "opencl")
REPO_ROOT = Path(__file__).resolve().parent.parent
DIGITS_EXAMPLE = REPO_ROOT / "examples" / "train_digits.py"

TOLERANCE = dict(rtol=1e-4, atol=1e-4)
COMPARE_STEPS = 20


def _unavailable_reason():
    """Why DEVICE_TYPE cannot be tested here, or None if it can."""
    if DEVICE_TYPE != "opencl":
        return None
    try:
        import torch_opencl  # noqa: F401
    except ImportError as exc:
        return f"torch_opencl cannot be imported: {exc}"
    if not torch.opencl.is_available():
        return "torch.opencl.is_available() is False"
    return None


@pytest.fixture(params=[DEVICE_TYPE])
def device(request):
    reason = _unavailable_reason()
    if reason:
        pytest.skip(reason)
    return torch.device(request.param)


def synchronize(device):
    if device.type == "opencl":
        torch.opencl.synchronize()


def make_mlp(seed=0):
    # Always created on CPU so that every device starts from identical weights.
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(32, 64),
        nn.ReLU(),
        nn.Linear(64, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def fixed_data(num_samples=128):
    generator = torch.Generator().manual_seed(1234)
    inputs = torch.randn(num_samples, 32, generator=generator)
    targets = torch.randint(0, 10, (num_samples,), generator=generator)
    return inputs, targets


def train_steps(model, optimizer, inputs, targets, steps):
    """Full-batch training; returns the loss of every step as a CPU tensor."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).cpu()


OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
}


@pytest.mark.parametrize("optimizer_name", OPTIMIZERS)
def test_mlp_training_matches_cpu(device, optimizer_name):
    make_optimizer = OPTIMIZERS[optimizer_name]
    inputs, targets = fixed_data()

    cpu_model = make_mlp()
    device_model = copy.deepcopy(cpu_model).to(device)
    cpu_losses = train_steps(cpu_model, make_optimizer(cpu_model.parameters()), inputs, targets, COMPARE_STEPS)
    device_losses = train_steps(device_model, make_optimizer(device_model.parameters()),
                                inputs.to(device), targets.to(device), COMPARE_STEPS)

    for step, (device_loss, cpu_loss) in enumerate(zip(device_losses, cpu_losses)):
        torch.testing.assert_close(device_loss, cpu_loss, **TOLERANCE,
                                   msg=lambda m, step=step: f"loss at step {step}: {m}")
    # A loss that does not fall would make matching losses meaningless.
    assert cpu_losses[-1] < cpu_losses[0]

    device_params = dict(device_model.named_parameters())
    for name, cpu_param in cpu_model.named_parameters():
        torch.testing.assert_close(device_params[name].detach().cpu(), cpu_param.detach(), **TOLERANCE,
                                   msg=lambda m, name=name: f"parameter {name} after training: {m}")


def test_training_memory_is_steady(device):
    if device.type != "opencl":
        pytest.skip("memory counters are only checked on opencl")
    warmup_steps, total_steps = 20, 300
    max_reserved_growth = 1 << 20  # 1 MiB

    inputs, targets = (t.to(device) for t in fixed_data(num_samples=64))
    model = make_mlp().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        # A function, so that every temporary of the step is released when it returns.
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()

    def memory_counters():
        # Collect cycles first so that only memory still referenced is counted.
        gc.collect()
        synchronize(device)
        return torch.opencl.memory_allocated(), torch.opencl.memory_reserved()

    for _ in range(warmup_steps):
        step()
    warm_allocated, warm_reserved = memory_counters()
    for _ in range(total_steps - warmup_steps):
        step()
    final_allocated, final_reserved = memory_counters()

    assert final_allocated == warm_allocated, (
        f"memory_allocated grew by {final_allocated - warm_allocated} bytes "
        f"over {total_steps - warmup_steps} steps")
    assert final_reserved - warm_reserved <= max_reserved_growth, (
        f"memory_reserved grew by {final_reserved - warm_reserved} bytes")


def test_digits_example_learns(device):
    # One full epoch (23 batches): the CNN goes from chance (10%) to about 90% test accuracy on CPU.
    result = subprocess.run(
        [sys.executable, str(DIGITS_EXAMPLE), "--device", str(device), "--epochs", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    match = re.search(r"epoch 1: train loss ([0-9.]+)\s+test accuracy ([0-9.]+)%", result.stdout)
    assert match, result.stdout
    loss, accuracy = float(match.group(1)), float(match.group(2))
    assert loss < 2.0, f"mean training loss {loss} (chance is ln 10 = 2.30)"
    assert accuracy >= 60.0, f"test accuracy {accuracy}% after one epoch (chance is 10%)"
    if device.type == "opencl":
        assert "Fallback report" in result.stdout, result.stdout
