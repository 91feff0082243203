"""Broadcast pointwise ops against CPU PyTorch, and the kernel each class takes for them: the CPU class walks
runs of the innermost dim where every operand steps by one element or not at all there (pointwise_lines);
the GPU class, and shapes outside the form, keep the strided kernel. Rows and columns of a broadcast, one to
three inputs in each combination of steps, lines longer than a run, in-place ops, type promotion, integer and
half types, more dims than the strided kernel's tiles take, NaN."""
import pytest
import torch

import torch_opencl  # noqa: F401
from _device_helpers import assert_same_as_cpu, kernel_class, launched_kernels, native_only

DEV = "opencl"
LINES = kernel_class() == "cpu"


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def run_and_name(fn, *inputs):
    """fn's opencl result (natively) and the names of the kernels it launched."""
    with native_only(), launched_kernels() as names:
        got = fn(*[x.to(DEV) for x in inputs])
        torch.opencl.synchronize()
    return got, names


CASES = {
    # name: (fn, input shapes, whether the lines form applies)
    "row": (torch.add, [(64, 300), (300,)], True),
    "column": (torch.mul, [(64, 300), (64, 1)], True),
    "column first": (torch.sub, [(64, 1), (64, 300)], True),
    "outer product": (torch.mul, [(64, 1), (1, 300)], True),
    "bias of NCHW": (torch.add, [(4, 8, 7, 9), (8, 1, 1)], True),
    "line longer than a run": (torch.maximum, [(3, 10000), (10000,)], True),
    "three inputs, row and column": (lambda x, r, c: torch.addcmul(x, r, c, value=0.5), [(32, 40), (40,), (32, 1)], True),
    "where with broadcast mask": (lambda m, x, y: torch.where(m > 0, x, y), [(32, 1), (32, 40), (40,)], True),
    "seven dims": (torch.add, [(2, 3, 2, 3, 2, 3, 20), (3, 1, 1, 20)], True),
    "short lines": (torch.add, [(300, 8), (8,)], False),
    "transposed input": (lambda x, y: x + y.t(), [(40, 50), (50, 40)], False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_broadcast_matches_cpu_and_takes_the_expected_kernel(name):
    fn, shapes, applies = CASES[name]
    inputs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    got, names = run_and_name(fn, *inputs)
    assert_same_as_cpu(got, fn(*inputs))
    assert ("pointwise_lines" in names) == (LINES and applies), names


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bfloat16, torch.bool])
def test_broadcast_in_other_dtypes(dtype):
    x, row, col = rand(33, 70, dtype=dtype), rand(70, dtype=dtype, seed=1), rand(33, 1, dtype=dtype, seed=2)
    fn = (lambda a, b, c: (a | b) & c) if dtype == torch.bool else (lambda a, b, c: a * b + c)
    got, names = run_and_name(fn, x, row, col)
    assert_same_as_cpu(got, fn(x, row, col))
    assert ("pointwise_lines" in names) == LINES


def test_promotion_scalar_and_nan():
    x = rand(20, 64)
    x[3, 5] = float("nan")
    row = torch.arange(64, dtype=torch.int64)
    fn = lambda a, b: (a + b) * 2.5 - torch.tensor(1.0)  # noqa: E731  int64 row promoted; a host scalar
    got, _ = run_and_name(fn, x, row)
    assert_same_as_cpu(got, fn(x, row))


def test_in_place_with_broadcast_operand():
    x, col = rand(50, 80), rand(50, 1, seed=1)
    want = x.clone().div_(col)
    xd = x.to(DEV)
    with native_only(), launched_kernels() as names:
        ret = xd.div_(col.to(DEV))
    assert ret is xd
    assert_same_as_cpu(xd, want)
    assert ("pointwise_lines" in names) == LINES


def test_output_view_with_steps():
    base = rand(40, 100)
    row = rand(100, seed=1)
    want = base.clone()
    want[::2] += row
    got = base.to(DEV)
    with native_only():
        got[::2] += row.to(DEV)
    assert_same_as_cpu(got, want)


def test_broadcast_backward():
    x, w = rand(16, 48).requires_grad_(), rand(48, seed=1).requires_grad_()
    xd, wd = x.detach().to(DEV).requires_grad_(), w.detach().to(DEV).requires_grad_()
    (x * w + w).sin().sum().backward()
    with native_only():
        (xd * wd + wd).sin().sum().backward()
    assert_same_as_cpu(xd.grad, x.grad)
    assert_same_as_cpu(wd.grad, w.grad)
