"""Every unary elementwise OpInfo that runs natively, over a wide grid of magnitudes (1e-30 .. 1e30, both
signs, a dense [-10, 10], zeros, infinities, NaN), against CPU PyTorch: float32 within 1.3e-5 relative (or
1e-6 absolute), float64 within 1e-9 (or 1e-12). Sample inputs (test_conformance.py) stay near 1; this
found elu's exp(x) - 1, PoCL's tanh stopping short of 1 and double erfinv's cancellation near +-1."""
import math

import pytest
import torch
from torch.testing._internal.common_methods_invocations import unary_ufuncs

import torch_opencl  # noqa: F401

DEV = "opencl"
TOLERANCE = {torch.float32: (1.3e-5, 1e-6), torch.float64: (1e-9, 1e-12)}
# Where CPU's answer is not one to copy: a float beyond the integer type's range converts to an undefined
# value in C (CPU and the device wrap differently).
UNDEFINED = {("byte", torch.float64), ("_refs._conversions.byte", torch.float64)}


def grid(dtype):
    magnitudes = torch.logspace(-30, 30, 601, dtype=torch.float64)
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=torch.float64)
    return torch.cat([magnitudes, -magnitudes, torch.linspace(-10, 10, 2001, dtype=torch.float64), special]).to(dtype)


def takes_one_tensor(info, dtype):
    """Whether op(x) alone returns one tensor on CPU (some OpInfos need more arguments; frexp returns two)."""
    try:
        return isinstance(info.op(torch.ones(2, dtype=dtype)), torch.Tensor)
    except Exception:  # noqa: BLE001
        return False


CASES = [(info, dtype) for info in unary_ufuncs for dtype in (torch.float32, torch.float64)
         if dtype in info.supported_dtypes("cpu") and (info.name, dtype) not in UNDEFINED
         and takes_one_tensor(info, dtype)]


pytestmark = pytest.mark.usefixtures("silent_fallback")


@pytest.mark.parametrize("info,dtype", CASES, ids=[f"{i.name}-{str(d)[6:]}" for i, d in CASES])
def test_unary_op_matches_cpu_over_a_wide_grid(info, dtype):
    x = grid(dtype)
    lo, hi = info.domain
    if lo is not None:
        x = x[x >= lo]
    if hi is not None:
        x = x[x <= hi]
    expected = info.op(x)
    got = info.op(x.to(DEV)).cpu()  # natively, or in part or whole through the CPU fallback
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.is_complex() or not expected.is_floating_point():
        torch.testing.assert_close(got, expected, equal_nan=True, rtol=0, atol=0)
        return
    rtol, atol = TOLERANCE[dtype] if expected.dtype in TOLERANCE else (1e-2, 1e-3)
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=True)
