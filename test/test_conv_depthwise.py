"""Depthwise convolutions (groups == input channels) in their direct forms (kernels_cl/conv_depthwise.cl):
forward and the three gradients against CPU PyTorch, run natively, in whichever kernel class the pass forces
(scripts/test.sh runs this file in both; float64 is test_convolution.py's test_conv2d_float64_depthwise);
the MobileNet/EfficientNet block that motivates them trains as on CPU."""
import copy
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from _device_helpers import launched_kernels, native_only

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_depthwise import MBConv  # noqa: E402  (the benchmark's block, trained here against CPU)

DEV = "opencl"


def rnd(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def check(conv, x, w, b, channels_last=False, **kw):
    """conv's output and its input, weight and bias gradients on opencl against CPU; returns the kernels run."""
    tol = 1e-4 if x.dtype == torch.float32 else 1e-10
    leaves_cpu = [t.clone().requires_grad_() if t is not None else None for t in (x, w, b)]
    want = conv(*leaves_cpu, **kw)
    grad = rnd(*want.shape, dtype=x.dtype, seed=7)
    want.backward(grad)
    xd = x.to(DEV)
    if channels_last:
        xd = xd.contiguous(memory_format=torch.channels_last)
    leaves = [t.to(DEV).requires_grad_() if t is not None else None for t in (xd, w, b)]
    leaves[0] = xd.detach().requires_grad_()
    with native_only(), launched_kernels() as names:
        got = conv(*leaves, **kw)
        got.backward(grad.to(DEV))
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=tol, atol=tol)
    for d, c in zip(leaves, leaves_cpu):
        if c is not None:
            torch.testing.assert_close(d.grad.cpu(), c.grad, rtol=tol, atol=tol)
    return names


CASES = [
    # (N, C, H, W), multiplier (output channels per input channel), KH x KW, kwargs
    ((2, 8, 12, 11), 1, (3, 3), dict(padding=1)),
    ((2, 8, 12, 11), 1, (3, 3), dict(stride=2, padding=1)),
    ((2, 6, 13, 9), 1, (5, 5), dict(padding=2)),
    ((2, 6, 13, 9), 1, (5, 5), dict(stride=2, padding=2)),
    ((1, 4, 10, 10), 2, (3, 3), dict(padding=2, dilation=2)),  # channel multiplier 2, dilated
    ((3, 5, 7, 8), 3, (3, 1), dict(stride=(2, 1), padding=(1, 0))),  # patches past the edges, unequal strides
]


@pytest.mark.parametrize("xs,mult,k,kw", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_depthwise_conv2d_against_cpu(xs, mult, k, kw, bias):
    C = xs[1]
    names = check(F.conv2d, rnd(*xs), rnd(C * mult, 1, *k, seed=1), rnd(C * mult, seed=2) if bias else None,
                  groups=C, **kw)
    assert any(n.startswith("depthwise_forward") for n in names), names
    assert any(n.startswith("depthwise_weight_grad") for n in names), names
    assert not any(n.startswith("im2col") for n in names), names


def test_depthwise_conv1d_and_channels_last_input():
    check(F.conv1d, rnd(3, 6, 17), rnd(6, 1, 5, seed=1), rnd(6, seed=2), groups=6, padding=2, stride=2)
    check(F.conv2d, rnd(2, 8, 9, 9), rnd(8, 1, 3, 3, seed=1), None, channels_last=True, groups=8, padding=1)


def test_zero_batch_and_empty_output():
    with native_only():
        x = torch.zeros(0, 4, 5, 5, device=DEV, requires_grad=True)
        w = torch.ones(4, 1, 3, 3, device=DEV, requires_grad=True)
        y = F.conv2d(x, w, groups=4, padding=1)
        assert y.shape == (0, 4, 5, 5)
        y.sum().backward()
        assert torch.equal(w.grad.cpu(), torch.zeros(4, 1, 3, 3))


def test_efficientnet_blocks_train_as_on_cpu():
    """Losses and every gradient over two SGD steps. (Gradients are compared, not AdamW's steps: the first
    block's projection bias has a gradient of zero up to rounding, 5e-9, whose sign AdamW turns into a full
    step either way.)"""
    torch.manual_seed(0)
    ref = nn.Sequential(MBConv(8, 8, 3, 1), MBConv(8, 12, 5, 2), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(12, 5))
    model = copy.deepcopy(ref).to(DEV)
    x, target = rnd(4, 8, 16, 16, seed=3), torch.randint(0, 5, (4,))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (ref, model)]
    with native_only():
        for _ in range(2):
            losses = []
            for m, opt, dev in ((ref, opts[0], "cpu"), (model, opts[1], DEV)):
                opt.zero_grad()
                loss = F.cross_entropy(m(x.to(dev)), target.to(dev))
                loss.backward()
                opt.step()
                losses.append(loss.item())
            assert losses[1] == pytest.approx(losses[0], rel=1e-5)
            for (name, want), got in zip(ref.named_parameters(), model.parameters()):
                torch.testing.assert_close(got.grad.cpu(), want.grad, rtol=1e-4, atol=1e-6, msg=name)
