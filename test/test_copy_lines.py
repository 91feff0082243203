"""Copies that rearrange, in both kernel classes (runtime/kernel_forms.h's copy_lines): cat, flip, roll,
repeat, index_select, and strided copies whose source steps by one or zero along the innermost dim
(slices, expansions; copy_lines, other strides copy_strided). The CPU class copies runs along the innermost dim (at most copy_run = 4096
elements each, so rows of 5000 take two runs); scripts/test.sh runs this file again with
TORCH_OPENCL_KERNEL_CLASS=gpu, where a work-item copies one element. Shapes reach each branch: runs
that cross cat's parts, more parts than one launch takes (8), strided and transposed inputs, flips and
rolls that wrap inside a run, repeats of the innermost dim, rows longer than a run, several dtypes."""
import pytest
import torch

import torch_opencl
from _device_helpers import assert_same_as_cpu, launched_kernels, native_only

DEV = "opencl"
GPU = torch_opencl._C._device_properties(0)["kernel_class"] == "gpu"
DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.float16]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype == torch.int64:
        return torch.randint(-1000, 1000, shape, generator=g)
    return torch.randn(shape, generator=g).to(dtype)


def check(fn, *xs):
    want = fn(*xs)
    with native_only():
        got = fn(*(x.to(DEV) for x in xs))
    assert_same_as_cpu(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dtype, dim):
    a, b = make((3, 5000), dtype, 1), make((3, 5000), dtype, 2)
    check(lambda a, b: torch.cat([a, b], dim), a, b)


@pytest.mark.parametrize("shape,dim", [((2, 3, 7), 2), ((2, 3, 7), 1), ((4, 1, 6), 0), ((5000,), 0), ((6, 2, 4100), 2)])
def test_cat_parts_of_unequal_sizes(shape, dim):
    # 11 parts (two launches, the second starting past the first's parts) of sizes 1..11 along `dim`.
    parts = []
    for n in range(1, 12):
        s = list(shape)
        s[dim] = n
        parts.append(make(tuple(s), torch.float32, n))
    check(lambda *ps: torch.cat(ps, dim), *parts)


def test_cat_strided_inputs_and_output():
    x, y = make((40, 30), torch.float32, 3), make((40, 20), torch.float32, 4)
    check(lambda x, y: torch.cat([x.t(), y.t()], 0), x, y)          # transposed parts
    check(lambda x, y: torch.cat([x[:, ::2], y[:, 1::2]], 1), x, y)  # stepped columns
    check(lambda x, y: torch.cat([x.t(), y.t()], 0).t(), x, y)
    out = torch.empty(50, 40, device=DEV).t()  # a transposed out=
    with native_only():
        torch.cat([x.to(DEV), y.to(DEV)], 1, out=out)
    assert torch.equal(out.cpu(), torch.cat([x, y], 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_roll_repeat(dtype):
    x = make((3, 5000), dtype, 5)
    check(lambda t: t.flip(1), x)
    check(lambda t: t.flip(0), x)
    check(lambda t: t.flip(0, 1), x)
    check(lambda t: t.roll(1234, 1), x)   # wraps inside a run
    check(lambda t: t.roll(-7, 1), x)
    check(lambda t: t.roll((1, 4999), (0, 1)), x)
    check(lambda t: t[:, :70].repeat(2, 3), x)   # the innermost dim repeated: its source wraps twice
    check(lambda t: t[:, 0].repeat(5, 1), x)
    check(lambda t: t[:, :1].repeat(1, 50), x)   # pieces of one element
    check(lambda t: t[:, :3].repeat(1, 40).roll(5, 1), x)


def test_flip_roll_of_views():
    x = make((30, 40, 5), torch.float32, 6)
    check(lambda t: t.transpose(0, 2).flip(2), x)
    check(lambda t: t[:, ::3].roll(2, 1), x)
    check(lambda t: t.permute(2, 0, 1).repeat(1, 2, 2), x)
    check(lambda t: t.roll(7), x)  # flattened roll


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_rows(dtype):
    x = make((50, 5000), dtype, 7)
    idx = torch.tensor([3, 0, 49, 3, 17])
    check(lambda t, i: t.index_select(0, i), x, idx)
    check(lambda t, i: t.index_select(1, i), x, idx)  # inner 1: index_select_columns (CPU), per element (GPU)
    long_index = torch.randint(0, 5000, (4500,), generator=torch.Generator().manual_seed(1))
    check(lambda t, i: t.index_select(1, i), x, long_index)  # rows of 4500 selected: two runs each
    y = make((4, 6, 9), dtype, 8)
    check(lambda t, i: t.index_select(1, i), y, torch.tensor([5, 0, 5]))
    check(lambda t, i: t.index_select(0, i), y, torch.tensor([2, 2], dtype=torch.int32))


def test_embedding_forward_rows():
    w = make((100, 384), torch.float32, 9)
    idx = torch.randint(0, 100, (8, 33), generator=torch.Generator().manual_seed(0))
    check(lambda w, i: torch.nn.functional.embedding(i, w), w, idx)


def test_scalar_operands_take_the_contiguous_kernel():
    # A Python scalar is a kernel argument: its zero stride must not send the op to the strided kernel.
    x = make((64, 100), torch.float32, 10)
    check(lambda t: t * 2.5, x)
    check(lambda t: 3 - t, x)
    check(lambda t: torch.where(t > 0, t, 0.5), x)
    with launched_kernels() as names:
        (x.to(DEV) * 2.5).cpu()
    assert "pointwise_contiguous" in names and "pointwise_strided" not in names


def test_kernels_follow_the_class():
    x = make((3, 5000), torch.float32, 11).to(DEV)
    with launched_kernels() as names:
        torch.cat([x, x], 1)
        x.flip(1)
        x.index_select(0, torch.tensor([1, 0], device=DEV))
        x.index_select(1, torch.tensor([1, 0, 4999], device=DEV))
        torch.opencl.synchronize()
    if GPU:
        assert {"cat_parts", "gather_nd", "index_select"} <= set(names)
    else:
        assert {"cat_lines", "gather_lines", "index_select_lines", "index_select_columns"} <= set(names)


# A strided copy (dst <- src): (source, whether the CPU class copies it in runs: the source steps by one or
# zero along the innermost dim of the copy, whose lines are at least 16 long).
STRIDED_COPIES = {
    "slice of rows": (lambda x: x[:, 3:260], True),
    "row expanded": (lambda x: x[0].expand(40, 300), True),
    "column expanded": (lambda x: x[:, :1].expand(40, 300), True),
    "one element expanded": (lambda x: x[2:3, 7:8].expand(40, 300), True),
    "expanded in a middle dim": (lambda x: x[:6].unsqueeze(1).expand(6, 5, 300), True),
    "line longer than a run": (lambda x: x.reshape(2, 6000)[:, 1:5001].expand(3, 2, 5000), True),
    "permuted outer dims": (lambda x: x.reshape(4, 10, 300).permute(1, 0, 2), True),
    "seven dims": (lambda x: x.reshape(2, 2, 2, 5, 300)[:, :, :, 1:4, 10:].unsqueeze(2).unsqueeze(0)
                   .expand(2, 2, 2, 3, 2, 3, 290), True),
    "step two": (lambda x: x[:, ::2], False),
    "transposed": (lambda x: x[:, :40].t(), False),
    "short lines": (lambda x: x[:, 5:13], False),
}


@pytest.mark.parametrize("name", list(STRIDED_COPIES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_copy(name, dtype):
    view, runs = STRIDED_COPIES[name]
    x = make((40, 300), dtype, 12)
    x_dev = x.to(DEV)
    with native_only(), launched_kernels() as names:
        got = view(x_dev).contiguous()
        torch.opencl.synchronize()
    assert_same_as_cpu(got, view(x).contiguous(), rtol=0, atol=0)
    assert ("copy_lines" in names) == (runs and not GPU), names


@pytest.mark.parametrize("src_dtype,dst_dtype", [(torch.float32, torch.float16), (torch.int64, torch.float32),
                                                 (torch.float32, torch.int32), (torch.float64, torch.bool),
                                                 (torch.bool, torch.float32)])
def test_strided_copy_converts(src_dtype, dst_dtype):
    # The lines form converts as the strided kernel does (LOAD_SRC/STORE_DST): float to int truncates,
    # anything nonzero is True, half rounds to nearest even.
    x = make((40, 300), src_dtype, 13) * (100 if src_dtype.is_floating_point else 1)
    for view in (lambda t: t[:, 3:260], lambda t: t[:1].expand(40, 300)):
        want = torch.empty(view(x).shape, dtype=dst_dtype).copy_(view(x))
        got = torch.empty(want.shape, dtype=dst_dtype, device=DEV)
        with native_only():
            got.copy_(view(x.to(DEV)))
        assert_same_as_cpu(got, want, rtol=0, atol=0)


def test_strided_copy_into_views():
    # dst a slice of a larger tensor (its outer stride is not its line's length) at an offset, src a slice
    # at another offset, and an in-place broadcast fill of a slice from a row.
    x = make((40, 300), torch.float32, 14)
    big, big_dev = torch.zeros(50, 320), torch.zeros(50, 320, device=DEV)
    with native_only():
        big_dev[5:45, 10:267].copy_(x.to(DEV)[:, 43:])
        big_dev[:, 300:].copy_(x.to(DEV)[7, :20])
    big[5:45, 10:267].copy_(x[:, 43:])
    big[:, 300:].copy_(x[7, :20])
    assert_same_as_cpu(big_dev, big, rtol=0, atol=0)


@pytest.mark.parametrize("shape,dim", [((3, 700), 1), ((50, 7), 1), ((6, 5, 300), 0), ((1,), 0), ((4, 1, 9), 2)])
def test_gather_scatter_in_runs_across_lines(shape, dim):
    # scatter_gather.cl walks a work-item's positions (256 in the CPU class, 16 in the GPU class) in pieces
    # along the innermost dim: lines longer, shorter and not a multiple of a run, one element, size-1 dims.
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=g)
    index = torch.randint(0, shape[dim], shape, generator=g)
    check(lambda t, i: t.gather(dim, i), x, index)
    with native_only():  # atomic adds, in any order: within float rounding, not to the bit
        got = torch.zeros_like(x).to(DEV).scatter_add(dim, index.to(DEV), x.to(DEV))
    assert_same_as_cpu(got, torch.zeros_like(x).scatter_add(dim, index, x), rtol=1e-5, atol=1e-5)
    check(lambda t, i: t.scatter(dim, i, 2.5), x, index)


def test_gather_index_expanded_is_checked_once_with_cpus_error():
    # An expanded index is bounds-checked over the elements it holds (not once per repeat), with CPU's message.
    x = torch.randn(64, 100)
    index = torch.randint(0, 100, (100,))[None].expand(64, -1)
    check(lambda t, i: t.gather(1, i), x, index)
    bad = index.clone()
    bad[0, 37] = 100
    with pytest.raises(RuntimeError, match="index 100 is out of bounds for dimension 1 with size 100"):
        x.gather(1, bad[:1].expand(64, -1))
    with pytest.raises(RuntimeError, match="index 100 is out of bounds for dimension 1 with size 100"):
        x.to(DEV).gather(1, bad[:1].to(DEV).expand(64, -1))
    assert torch.equal(x.to(DEV).gather(1, index.to(DEV)).cpu(), x.gather(1, index))  # the device still works
