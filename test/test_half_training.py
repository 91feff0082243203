"""float16 as CUDA computes it, on every device (issue 44).

Stored in 16 bits (vload_half / vstore_half_rte, which need no cl_khr_fp16: PoCL has none, Intel's runtime
has it), computed in float: an elementwise result is computed in float and rounded to float16 once; a
reduction, a GEMM or a convolution accumulates in float32 and rounds once. Checked three ways:
- each operator's float16 result is the device's own float32 result on the same values, rounded once;
- float16 layers, forward and backward, against CPU's float32 on the same values;
- the training workloads of bench/bench_training.py under torch.autocast(dtype=torch.float16) with a
  GradScaler, against the same training under CPU's float16 autocast.
scripts/test.sh runs this file in both kernel classes on PoCL, and scripts/test_intel.sh --ci on Intel's runtime.
"""
import contextlib
import copy
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_opencl  # noqa: F401

from _device_helpers import native_only

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_training import WORKLOADS  # noqa: E402

DEV = torch.device("opencl")
HALF_EPS = 2.0 ** -10  # float16's spacing at 1: a value is rounded to within half of it, relatively


def halves(*shape, scale=1.0, seed=0):
    """Normal values that float16 holds exactly (so float32 and float16 start from the same numbers)."""
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale).half()


def ulps_apart(got, want):
    """How many float16 units in the last place of `want` separate the two float16 tensors, elementwise."""
    got, want = got.float(), want.float()
    exponent = torch.frexp(want.abs().clamp_min(2.0 ** -14)).exponent  # float16's subnormals share 2^-24
    return (got - want).abs() / torch.ldexp(torch.ones_like(want), exponent - 11)


# --- 1. Computed in float, rounded once ------------------------------------------------------------------

X, Y, V = halves(48, 96, seed=1), halves(96, 40, seed=2), halves(2048, scale=3, seed=3)
IMAGES, KERNELS = halves(2, 8, 8, 8, seed=4), halves(16, 8, 3, 3, scale=0.2, seed=5)
IMAGE_GRADS, NORMS = halves(2, 16, 8, 8, seed=8), X[:, :1].abs().contiguous()
QKV = halves(3, 2, 4, 32, 16, seed=6)
TARGETS = torch.randint(0, 40, (48,), generator=torch.Generator().manual_seed(7))

# One value per element, the same formula in either dtype: the float16 result is the float32 one rounded.
ELEMENTWISE = {
    "gelu": lambda f: F.gelu(f(V)),
    "gelu_tanh": lambda f: F.gelu(f(V), approximate="tanh"),
    "gelu_backward": lambda f: torch.ops.aten.gelu_backward(f(V), f(V.flip(0))),
    "relu_backward": lambda f: torch.ops.aten.threshold_backward(f(V), f(V.flip(0)), 0.0),
    "exp": lambda f: torch.exp(f(V)),
    "sigmoid": lambda f: torch.sigmoid(f(V)),
    "addcmul": lambda f: torch.addcmul(f(V), f(V), f(V.flip(0)), value=0.3),
    "lerp": lambda f: torch.lerp(f(V), f(V.flip(0)), 0.3),
    "scaled_add": lambda f: f(V).add(f(V.flip(0)), alpha=0.1),
}
# Accumulations, in float32 in either dtype: the float32 sums may be ordered otherwise, so within one unit.
ACCUMULATED = {
    "mm": lambda f: f(X) @ f(Y),
    "addmm": lambda f: torch.addmm(f(Y[0]), f(X), f(Y), beta=0.5, alpha=2.0),
    "mm_t": lambda f: f(X).t() @ f(X),
    "bmm": lambda f: torch.bmm(f(X).view(3, 16, 96), f(Y).expand(3, 96, 40)),
    "sum_rows": lambda f: f(X).sum(1),
    "sum_cols": lambda f: f(X).sum(0),
    "sum_all": lambda f: f(V).sum(),
    "mean": lambda f: f(X).mean(0),
    "var": lambda f: f(X).var(1),
    "norm": lambda f: torch.linalg.vector_norm(f(V)),
    "softmax": lambda f: F.softmax(f(X), 1),
    "log_softmax": lambda f: F.log_softmax(f(X), 1),
    "layer_norm": lambda f: F.layer_norm(f(X), (96,), f(X[0]), f(X[1])),
    "cross_entropy": lambda f: F.cross_entropy(f(X[:, :40]), TARGETS.to(DEV)),
    "cumsum": lambda f: torch.cumsum(f(V), 0),
    "conv2d": lambda f: F.conv2d(f(IMAGES), f(KERNELS), f(KERNELS[:, 0, 0, 0]), padding=1),
    "conv2d_backward": lambda f: torch.ops.aten.convolution_backward(
        f(IMAGE_GRADS), f(IMAGES), f(KERNELS), [16], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]),
    "attention": lambda f: F.scaled_dot_product_attention(*f(QKV).unbind(0), is_causal=True),
    # Composed of reductions and pointwise ops (aten/native/weight_norm.cpp), with float32 norms.
    "weight_norm": lambda f: torch._weight_norm_interface(f(X), f(NORMS), 0)[0],
    "weight_norm_backward": lambda f: torch.ops.aten._weight_norm_interface_backward(
        f(X.flip(0)), f(X), f(NORMS), torch.linalg.vector_norm(X.float(), dim=1, keepdim=True).to(DEV), 0),
    # Composed of index_select, index_add_ and products (aten/native/axis_resample.h), axis by axis.
    "upsample_bilinear": lambda f: F.interpolate(f(IMAGES), size=(13, 19), mode="bilinear"),
    "upsample_bilinear_backward": lambda f: torch.ops.aten.upsample_bilinear2d_backward(
        f(IMAGE_GRADS), [8, 8], [2, 16, 5, 6], False, None, None),
    "upsample_nearest_backward": lambda f: torch.ops.aten.upsample_nearest2d_backward(
        f(IMAGE_GRADS), [8, 8], [2, 16, 3, 3], None, None),
    "reflection_pad_backward": lambda f: torch.ops.aten.reflection_pad2d_backward(
        f(IMAGE_GRADS), f(IMAGES)[:, :, :4, :4].repeat(1, 2, 1, 1), [2, 2, 2, 2]),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_float16_is_its_float32_result_rounded_once(name):
    def on_device(dtype):
        return lambda t: t.to(DEV, dtype)

    with native_only():
        got = ELEMENTWISE[name](on_device(torch.float16)).cpu()
        want = ELEMENTWISE[name](on_device(torch.float32)).cpu()
    assert got.dtype == torch.float16
    # Bit for bit: rounding twice (through a float16 intermediate) or toward zero would differ somewhere.
    assert torch.equal(got, want.half()), (ulps_apart(got, want.half()).max(), name)


@pytest.mark.parametrize("name", ACCUMULATED)
def test_accumulated_float16_is_its_float32_result_rounded_once(name):
    def on_device(dtype):
        return lambda t: t.to(DEV, dtype)

    with native_only():
        got = ACCUMULATED[name](on_device(torch.float16))
        want = ACCUMULATED[name](on_device(torch.float32))
    got, want = (got, want) if isinstance(got, (tuple, list)) else ((got,), (want,))
    for g, w in zip(got, want):
        g, w = g.cpu(), w.cpu()
        assert g.dtype == torch.float16
        # Accumulated in float16, a sum of 96 terms would be several units off; in float32 both round the
        # same float32 value give or take its last bits.
        apart = ulps_apart(g, w.half())
        assert apart.max() <= 1, (apart.max(), name)


def test_weight_norm_of_float16_has_float32_norms_as_on_cpu():
    want = torch._weight_norm_interface(X, NORMS, 0)
    with native_only():
        got = torch._weight_norm_interface(X.to(DEV), NORMS.to(DEV), 0)
    assert [t.dtype for t in got] == [t.dtype for t in want] == [torch.float16, torch.float32]
    torch.testing.assert_close(got[1].cpu(), want[1], rtol=1e-5, atol=0)


# --- 2. float16 layers against CPU's float32 -------------------------------------------------------------

class Attention(nn.Module):
    """Causal self-attention over 4 heads of 8, as bench_training's transformer has it."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(32, 96)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


LAYERS = {
    "linear": (lambda: nn.Linear(96, 40), (48, 96)),
    "conv2d": (lambda: nn.Conv2d(8, 16, 3, padding=1), (2, 8, 8, 8)),
    "layer_norm": (lambda: nn.LayerNorm(96), (48, 96)),
    "gelu": (lambda: nn.GELU(), (48, 96)),
    "max_pool": (lambda: nn.MaxPool2d(2), (2, 8, 8, 8)),
    "log_softmax": (lambda: nn.LogSoftmax(1), (48, 96)),
    "attention": (Attention, (2, 16, 32)),
}


@pytest.mark.parametrize("name", LAYERS)
def test_float16_layer_matches_cpu_float32(name):
    """A float16 layer's output and gradients (input's and parameters'), from float16 inputs and output
    gradient, against CPU's float32 layer on the same values."""
    make, shape = LAYERS[name]
    torch.manual_seed(0)
    layer = make().half()  # parameters that float16 holds, shared by both runs
    x, grad = halves(*shape, seed=10), None
    results = {}
    for device, dtype in ((DEV, torch.float16), (torch.device("cpu"), torch.float32)):
        m = copy.deepcopy(layer).to(device, dtype)
        xi = x.to(device, dtype).requires_grad_()
        with native_only() if device == DEV else contextlib.nullcontext():
            out = m(xi)
            grad = halves(*out.shape, seed=11) if grad is None else grad
            out.backward(grad.to(device, dtype))
        results[device.type] = [out, xi.grad] + [p.grad for p in m.parameters()]
    for got, want in zip(results["opencl"], results["cpu"]):
        assert got.dtype == torch.float16 and got.device.type == "opencl"
        # torch.testing's float16 rtol (1e-3, about one unit in the last place); entries that cancel to near 0
        # (a gradient's sums) are held to the same bound relative to the tensor's largest entry.
        torch.testing.assert_close(got.cpu().float(), want, rtol=HALF_EPS, atol=HALF_EPS * want.abs().max().item())


# --- 3. Autocast training against CPU --------------------------------------------------------------------

STEPS = 4
# A loss is a mean over the batch, whose roundings mostly cancel (measured: within 8e-5): within
# torch.testing's float16 rtol (1e-3).
LOSS_RTOL = HALF_EPS
# A gradient passes the roundings of every layer on its way back, on either device (measured: within 1.2e-3
# of the tensor's largest entry): a few float16 units, relative to the tensor's largest entry for the
# entries that cancel to near 0. A sum accumulated in float16 would be tens of units off.
GRAD_RTOL = 4 * HALF_EPS


def autocast_training(name, device):
    """STEPS steps of a bench_training workload on `device` under float16 autocast with a GradScaler, in the
    recipe of PyTorch's AMP examples (unscale, clip, step, update). Returns the loss and the scale of each
    step, the first step's gradients, the parameters before and after, and the learning rate."""
    torch.manual_seed(0)
    model, (x, y), make_optimizer, loss_of = WORKLOADS[name]()
    # Dropout off: the two devices' generators draw different masks.
    model = model.eval().to(device)
    x, y = x.to(device), y.to(device)
    optimizer = make_optimizer(model)
    scaler = torch.amp.GradScaler(device.type)
    before = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
    losses, scales, grads = [], [], None
    for _ in range(STEPS):
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.float16):
            loss = loss_of(model, x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if grads is None:  # the first step's, from the same parameters on both devices
            grads = {n: p.grad.cpu() for n, p in model.named_parameters()}
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.detach().float().cpu())
        scales.append(scaler.get_scale())
    after = {n: p.detach().cpu() for n, p in model.named_parameters()}
    return torch.stack(losses), scales, grads, before, after, optimizer.param_groups[0]["lr"]


@pytest.mark.parametrize("name", WORKLOADS)
def test_float16_autocast_training_matches_cpu(name, monkeypatch):
    if not torch.opencl.is_fp16_supported():
        # torch.autocast refuses float16 where a device lacks cl_khr_fp16 (test_autocast.py), yet runs the same
        # kernels as where it has it (float16 is computed in float either way): its check is told yes here so
        # that PoCL, in both kernel classes, trains the float16 graph too. The thread's default dtype is
        # applied first, from the real answer.
        torch.opencl.get_amp_supported_dtype()
        monkeypatch.setattr(torch_opencl.amp, "is_fp16_supported", lambda: True)
    with native_only():
        losses, scales, grads, _, params, lr = autocast_training(name, DEV)
    cpu_losses, cpu_scales, cpu_grads, start, cpu_params, _ = autocast_training(name, torch.device("cpu"))
    assert scales == cpu_scales  # the same steps skipped (for an inf) or not, the same scale after each
    assert cpu_losses[-1] < cpu_losses[0]  # training, not standing still
    torch.testing.assert_close(losses, cpu_losses, rtol=LOSS_RTOL, atol=0)
    for n, want in cpu_grads.items():
        torch.testing.assert_close(grads[n], want, rtol=GRAD_RTOL, atol=GRAD_RTOL * want.abs().max().item(),
                                   msg=lambda m, n=n: f"first step's gradient of {n}: {m}")
    # Adam moves a parameter by about lr times the sign of its gradient, whatever the gradient's size: where
    # rounding decides that sign (a gradient near 0, or k's bias in attention, whose exact gradient is 0 as
    # softmax ignores a shift of every score), any two runs move apart by up to 2 lr a step. Elsewhere the
    # updates agree: over the model, the parameters differ by a small part of how far training moved them
    # (measured: under 1%).
    apart = sum((params[n] - w).abs().sum() for n, w in cpu_params.items())
    moved = sum((w - start[n]).abs().sum() for n, w in cpu_params.items())
    assert apart <= 0.05 * moved, (apart, moved)
    for n, want in cpu_params.items():
        torch.testing.assert_close(params[n], want, rtol=0, atol=2 * lr * STEPS, msg=lambda m, n=n: f"{n}: {m}")
