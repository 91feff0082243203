"""Contiguous fills and device-to-device copies (runtime/memcpy.cpp). Where the driver's own are slow
(PoCL's CPU device: runtime/kernel_forms.h's kernel_fill_min_bytes and kernel_copy_min_bytes), those of
at least that many bytes run as kernels (kernels_cl/bulk_memory.cl); smaller ones, and every one on other
devices, go to clEnqueueFillBuffer / clEnqueueCopyBuffer. Sizes here reach both sides of the thresholds,
tails past the kernels' 16-vectors, and offsets that are not a multiple of 4 bytes (the byte kernels)."""
import pytest
import torch

import torch_opencl
from _device_helpers import assert_same_as_cpu, launched_kernels, native_only

DEV = "opencl"
PROPS = torch_opencl._C._device_properties(0)
FILL_MIN = PROPS["kernel_fill_min_bytes"]
COPY_MIN = PROPS["kernel_copy_min_bytes"]
# Past both thresholds where there are any (and past PoCL's 512 KiB and 4 MiB), with a tail of 13 elements.
BIG = max(FILL_MIN, COPY_MIN, 4 << 20) // 8 * 2 + 13
DTYPES = [torch.uint8, torch.int16, torch.int32, torch.float32, torch.int64, torch.float64, torch.bool,
          torch.complex64, torch.complex128]
FILL_VALUES = {torch.uint8: 201, torch.int16: -3001, torch.int32: -123456, torch.float32: -1.5,
               torch.int64: -(2**40) - 7, torch.float64: 3.25, torch.bool: True, torch.complex64: 1.5 - 2j,
               torch.complex128: -0.25 + 4j}


def random_of(n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) > 0.5
    if dtype.is_complex or dtype.is_floating_point:
        return torch.randn(n, generator=g, dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -(2**40)), min(info.max, 2**40), (n,), generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1000, BIG])
def test_fill_and_zero(dtype, n):
    value = FILL_VALUES[dtype]
    with native_only():
        assert_same_as_cpu(torch.full((n,), value, dtype=dtype, device=DEV), torch.full((n,), value, dtype=dtype))
        assert_same_as_cpu(torch.zeros(n, dtype=dtype, device=DEV), torch.zeros(n, dtype=dtype))
        x = random_of(n + 9, dtype, 1)
        want = x.clone()
        want[5:5 + n].fill_(value)
        want[:3].zero_()
        got = x.to(DEV)
        got[5:5 + n].fill_(value)  # a slice at an offset of 5 elements: the byte/short kernels' alignment
        got[:3].zero_()
        assert_same_as_cpu(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1000, BIG])
def test_copy_and_clone(dtype, n):
    x = random_of(n + 11, dtype, 2)
    with native_only():
        d = x.to(DEV)
        assert_same_as_cpu(d.clone(), x, rtol=0, atol=0)
        out = torch.zeros(n + 20, dtype=dtype, device=DEV)
        out[7:7 + n].copy_(d[3:3 + n])  # offsets 3 and 7: the byte kernel for one-byte types
        want = torch.zeros(n + 20, dtype=dtype)
        want[7:7 + n] = x[3:3 + n]
        assert_same_as_cpu(out, want, rtol=0, atol=0)


def test_large_fills_and_copies_take_the_kernels_where_the_driver_is_slow():
    small, big = torch.empty(1000, device=DEV), torch.empty(BIG, device=DEV)
    bytes_ = torch.empty(BIG * 4 + 3, dtype=torch.uint8, device=DEV)
    with launched_kernels() as names:
        small.zero_()
        small.clone()
        torch.opencl.synchronize()
    assert not {"fill_u32", "copy_u32"} & set(names)
    with launched_kernels() as names:
        big.fill_(2.0)
        big.clone()
        bytes_[1:].clone()
        torch.opencl.synchronize()
    if FILL_MIN and COPY_MIN:
        assert names[:3] == ["fill_u32", "copy_u32", "copy_u8"]
    else:
        assert not names  # the driver's fill and copies are no kernels of ours
    assert torch.equal(big.cpu(), torch.full((BIG,), 2.0))
