"""The vector form of contiguous float32 pointwise ops (runtime/kernel_forms.h's pointwise_vectors, the CPU
class where the implementation vectorises a work-item's loop, as PoCL: pointwise.cl's pointwise_contiguous_v16,
16 elements a work-item as float16 vectors) against CPU
PyTorch: every op whose expression vectorizes, forward and backward, over a grid of magnitudes with
infinities, NaN and signed zeros, lengths that leave a partial last vector; which kernel runs where (the GPU
class, implementations that vectorise across work-items as Intel's CPU runtime, other dtypes and strided
operands keep the per-element kernels)."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_opencl
from _device_helpers import kernel_class, launched_kernels, native_only

DEV = "opencl"
VECTORS = torch_opencl._C._device_properties(0)["pointwise_vectors"]
assert not VECTORS or kernel_class() == "cpu"


def grid(n_dense):
    magnitudes = torch.logspace(-30, 30, 121, dtype=torch.float64)
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=torch.float64)
    return torch.cat([torch.linspace(-12, 12, n_dense, dtype=torch.float64), magnitudes, -magnitudes,
                      special]).float()


UNARY = {
    "exp": torch.exp,
    "expm1": torch.expm1,
    "log": torch.log,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
}
BACKWARD = {
    "gelu_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x),
    "gelu_tanh_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": lambda g, x: torch.ops.aten.silu_backward(g, x),
}


def close(got, want, atol=1e-6):
    # The wide grid's tolerance (test_unary_accuracy.py). CPU's gelu(inf) is NaN (its vectorised erf form);
    # every form here gives inf, as the formula does: compared where CPU's value is a number.
    keep = ~(torch.isnan(want) & torch.isinf(got))
    torch.testing.assert_close(got[keep], want[keep], rtol=1.3e-5, atol=atol, equal_nan=True)


@pytest.mark.parametrize("n_dense", [4001, 4016])  # 4001 + 247: a partial last vector; 4016 + 247 too
def test_vectorized_ops_match_cpu(n_dense):
    x = grid(n_dense)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    for name, fn in UNARY.items():
        with native_only(), launched_kernels() as names:
            got = fn(x.to(DEV)).cpu()
        close(got, fn(x))
        assert ("pointwise_contiguous_v16" in names) == VECTORS, (name, names)
    for name, fn in BACKWARD.items():
        with native_only(), launched_kernels() as names:
            got = fn(g.to(DEV), x.to(DEV)).cpu()
        # gelu_tanh_backward near x = -5: CPU's float tanh rounds to -1 there and gives 0; ours takes
        # 1 + tanh(u) as 2 / (1 + exp(-2u)) (pointwise_functions.cl), the true -1.4e-6 (times g, up to 3).
        close(got, fn(g, x), atol=5e-6)
        assert ("pointwise_contiguous_v16" in names) == VECTORS, (name, names)


def test_short_tensors_and_offsets():
    # Fewer elements than a vector, and views starting mid-storage (an offset that is no multiple of 16).
    base = torch.randn(100, generator=torch.Generator().manual_seed(1))
    for t in (base[:1], base[:15], base[3:40], base[17:]):
        torch.testing.assert_close(F.gelu(t.to(DEV)).cpu(), F.gelu(t), rtol=1.3e-5, atol=1e-6)
        out = torch.empty(t.numel() + 5, device=DEV)[5:]
        torch.exp(t.to(DEV), out=out)
        torch.testing.assert_close(out.cpu(), torch.exp(t), rtol=1.3e-5, atol=1e-6)


def test_other_dtypes_and_strided_operands_keep_the_per_element_kernels():
    x = torch.randn(64, 33, generator=torch.Generator().manual_seed(2)).to(DEV)
    # float64, a strided slice, a float32 op with a float64 operand (promoted): per element
    cases = [(torch.exp, (x.double(),)), (torch.sigmoid, (x[:, ::2],)),
             (torch.ops.aten.silu_backward, (x, x.double()))]
    for fn, ts in cases:
        with launched_kernels() as names:
            got = fn(*ts).cpu()
        torch.testing.assert_close(got, fn(*[t.cpu() for t in ts]), rtol=1.3e-5, atol=1e-6)
        assert "pointwise_contiguous_v16" not in names, names
    # A transposed (dense) input: the iterator walks memory in order, so the vector form serves it.
    with launched_kernels() as names:
        got = torch.exp(x.t()).cpu()
    torch.testing.assert_close(got, torch.exp(x.t().cpu()), rtol=1.3e-5, atol=1e-6)
    assert ("pointwise_contiguous_v16" in names) == VECTORS, names
    # An op whose expression is not marked keeps the per-element kernel in every class: sin and cos are not, as
    # PoCL's float16 sin and cos are wrong for tiny arguments (sin(1.2e-38) = 0.0156, cos(-3.4e-21) = 0.99988:
    # test_float_math.py found it).
    with launched_kernels() as names:
        torch.sin(x).cpu()
    assert "pointwise_contiguous_v16" not in names and "pointwise_contiguous" in names, names
