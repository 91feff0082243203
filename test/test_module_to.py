"""Module.to("opencl") and `.data =` as on CUDA: Parameters keep their identity (nn.Module._apply swaps
their data because torch._has_compatible_shallow_copy_type says a CPU and an opencl tensor are compatible),
so tied weights stay one tensor and an optimizer built before .to() steps the model."""
import copy

import pytest
import torch
from torch import nn

from _device_helpers import native_only

DEV = "opencl"


class TiedLM(nn.Module):
    """The tied-embedding language model shape of GPT-2, nanoGPT and word_language_model --tied."""

    def __init__(self, vocab=17, width=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.hidden = nn.Linear(width, width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        return self.lm_head(torch.tanh(self.hidden(self.wte(idx))))


def test_shallow_copy_compatibility_matches_cuda_rule():
    cpu = torch.ones(3)
    dev = torch.ones(3, device=DEV)
    assert torch._has_compatible_shallow_copy_type(cpu, dev)
    assert torch._has_compatible_shallow_copy_type(dev, cpu)
    assert torch._has_compatible_shallow_copy_type(dev, dev)
    # A sparse tensor's data is not a dense one's, on any device.
    assert not torch._has_compatible_shallow_copy_type(cpu.to_sparse(), dev)


def test_module_to_keeps_parameter_objects():
    model = TiedLM()
    before = {name: id(p) for name, p in model.named_parameters()}
    model.to(DEV)
    after = {name: id(p) for name, p in model.named_parameters()}
    assert before == after
    assert all(p.device.type == DEV for p in model.parameters())
    # Back to the CPU as well.
    model.to("cpu")
    assert {name: id(p) for name, p in model.named_parameters()} == before


def test_tied_weights_stay_tied_and_train_as_on_cpu():
    torch.manual_seed(0)
    ref = TiedLM()
    model = copy.deepcopy(ref).to(DEV)
    assert model.lm_head.weight is model.wte.weight
    assert len(list(model.parameters())) == len(list(ref.parameters())) == 3
    idx = torch.randint(0, 17, (4, 6))
    target = torch.randint(0, 17, (4, 6))
    for m, dev in ((ref, "cpu"), (model, DEV)):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(idx.to(dev)).flatten(0, 1), target.to(dev).flatten())
            loss.backward()
            opt.step()
    for (name, want), got in zip(ref.named_parameters(), model.parameters()):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5, msg=name)
    assert model.lm_head.weight is model.wte.weight


def test_optimizer_built_before_to_steps_the_model():
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model.to(DEV)
    start = model.weight.detach().cpu().clone()
    with native_only():
        model(torch.randn(2, 5, device=DEV)).sum().backward()
        opt.step()
    assert opt.param_groups[0]["params"][0] is model.weight
    assert not torch.equal(model.weight.detach().cpu(), start)


def test_gradients_move_with_their_parameters():
    model = nn.Linear(4, 2)
    model(torch.randn(3, 4)).sum().backward()
    grad = model.weight.grad.clone()
    model.to(DEV)
    assert model.weight.grad.device.type == DEV
    torch.testing.assert_close(model.weight.grad.cpu(), grad)


def test_data_assignment_across_devices():
    p = nn.Parameter(torch.zeros(2, 3))
    p.data = torch.arange(6.0, device=DEV).view(2, 3)
    assert isinstance(p, nn.Parameter) and p.device.type == DEV
    torch.testing.assert_close(p.detach().cpu(), torch.arange(6.0).view(2, 3))
    p.data = torch.ones(2, 3)
    assert p.device.type == "cpu"


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_module_to_with_dtype_keeps_parameters(dtype):
    model = nn.Linear(3, 3)
    weight = model.weight
    model.to(DEV, dtype)
    assert model.weight is weight and weight.dtype == dtype and weight.device.type == DEV
