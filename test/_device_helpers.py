"""Helpers shared by the test files."""
import contextlib

import torch


@contextlib.contextmanager
def native_only():
    """Runs the block with the CPU fallback refusing, so every operator in it must be native."""
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        yield
    finally:
        torch.opencl.set_fallback_mode(previous)


def tolerance_for(dtype):
    """Relative and absolute tolerance of a comparison with CPU: exact for integers and bool."""
    return {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(dtype, 0)


def assert_same_as_cpu(got, want, rtol=None, atol=None):
    """An opencl result (or tuple of them) equals the CPU one in dtype, shape and value (NaN where NaN)."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_as_cpu(g, w, rtol, atol)
        return
    assert got.device.type == "opencl"
    got = got.cpu()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    t = tolerance_for(want.dtype)
    torch.testing.assert_close(got, want, rtol=t if rtol is None else rtol, atol=t if atol is None else atol,
                               equal_nan=True)


def compare_with_cpu(fn, *inputs, rtol=None, atol=None):
    """fn on CPU inputs against fn on their opencl copies, the latter run natively (no fallback)."""
    want = fn(*inputs)
    with native_only():
        got = fn(*[x.to("opencl") for x in inputs])
    assert_same_as_cpu(got, want, rtol, atol)


def kernel_class():
    """The kernel class of device 0 ("cpu" or "gpu", runtime/kernel_forms.h)."""
    from torch_opencl import _C
    return _C._device_properties(0)["kernel_class"]


@contextlib.contextmanager
def launched_kernels():
    """Collects into the yielded list the names of the kernels the block launches, in order."""
    from torch_opencl import _C
    names = []
    _C._record_kernel_names(True)
    try:
        yield names
    finally:
        _C._record_kernel_names(False)
        names.extend(_C._recorded_kernel_names())


def index_checks_deferred(device=0):
    """Whether the device records a bad index for the next wait instead of raising at the call
    (runtime/deferred_errors.h; the GPU kernel class)."""
    from torch_opencl import _C
    return _C._device_properties(device)["deferred_index_checks"]


@contextlib.contextmanager
def raises_index_error(match):
    """The block's opencl ops raise IndexError(match): at the call, or, on a device that defers index
    checks, at the synchronize that ends the block. Afterwards the device has nothing left to raise."""
    import pytest
    with pytest.raises(IndexError, match=match):
        yield
        torch.opencl.synchronize()
    torch.opencl.synchronize()


def device_floats(device="opencl"):
    """float32, and float64 where the device computes it (cl_khr_fp64)."""
    try:
        torch.zeros(1, dtype=torch.float64, device=device) + 1
        return [torch.float32, torch.float64]
    except RuntimeError:
        return [torch.float32]
