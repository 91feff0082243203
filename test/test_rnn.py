"""nn.LSTM, nn.GRU and their cells on opencl (ATen's fused-cell path for accelerators) against CPU."""
import pytest
import torch
import torch.nn as nn

import torch_opencl  # noqa: F401
from _device_helpers import assert_same_as_cpu, native_only


def _run(module, inputs, device):
    """Output(s), and gradients of a weighted sum w.r.t. inputs and parameters, on `device`."""
    module = module.to(device)
    inputs = [t.detach().to(device, copy=True).requires_grad_() if t.is_floating_point() else t.to(device) for t in inputs]
    out = module(*inputs)
    flat = [t for t in (out if isinstance(out, tuple) else (out,)) for t in (t if isinstance(t, tuple) else (t,))]
    loss = sum((t * torch.linspace(-1, 1, t.numel(), dtype=t.dtype).reshape(t.shape).to(device)).sum() for t in flat)
    loss.backward()
    grads = [t.grad for t in inputs if t.requires_grad] + [p.grad for p in module.parameters()]
    return flat, grads


def _compare(make, inputs, rtol=1e-4, atol=1e-5):
    torch.manual_seed(0)
    ref_module = make()
    dev_module = make()
    dev_module.load_state_dict(ref_module.state_dict())
    want_out, want_grads = _run(ref_module, inputs, "cpu")
    with native_only():
        got_out, got_grads = _run(dev_module, inputs, "opencl")
    assert_same_as_cpu(got_out, want_out, rtol, atol)
    assert_same_as_cpu(got_grads, want_grads, rtol, atol)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [(1, False, False, True), (2, True, True, True),
                                                                   (1, False, True, False)])
def test_recurrent_layers_match_cpu(kind, layers, bidirectional, batch_first, bias):
    cls = getattr(nn, kind)
    x = torch.randn(3, 5, 4) if not batch_first else torch.randn(5, 3, 4)
    _compare(lambda: cls(4, 6, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias),
             [x])


def test_lstm_with_initial_state_and_cells():
    h0, c0 = torch.randn(1, 3, 6), torch.randn(1, 3, 6)
    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 6)

        def forward(self, x, h, c):
            return self.lstm(x, (h, c))

    _compare(WithState, [torch.randn(5, 3, 4), h0, c0])
    _compare(lambda: nn.LSTMCell(4, 6), [torch.randn(3, 4)])
    _compare(lambda: nn.GRUCell(4, 6), [torch.randn(3, 4), torch.randn(3, 6)])


def test_float64_gru():
    _compare(lambda: nn.GRU(3, 5).double(), [torch.randn(4, 2, 3, dtype=torch.float64)], rtol=1e-10, atol=1e-12)


def test_only_the_cell_state_gradient_flows():
    # backward with grad_hy undefined: the loss uses only c_n
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 6)
    x = torch.randn(5, 3, 4)
    want = torch.autograd.grad(lstm(x)[1][1].sum(), lstm.weight_ih_l0)[0]
    dev = lstm.to("opencl")
    with native_only():
        got = torch.autograd.grad(dev(x.to("opencl"))[1][1].sum(), dev.weight_ih_l0)[0]
    assert_same_as_cpu(got, want, 1e-4, 1e-5)


def test_fused_cell_rejects_mismatched_gates():
    g = torch.randn(3, 8, device="opencl")
    with pytest.raises(RuntimeError, match="expected gates of size"):
        torch.ops.aten._thnn_fused_lstm_cell(g, g, torch.randn(3, 3, device="opencl"))
