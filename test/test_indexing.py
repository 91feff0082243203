"""index_select (embedding's forward), embedding_dense_backward and tril/triu run natively on
opencl, against CPU: dtypes, dims, non-contiguous inputs, out= and in-place forms, bad indices."""

import copy

import pytest
import torch
import torch.nn as nn

from _device_helpers import native_only, raises_index_error

torch_opencl = pytest.importorskip("torch_opencl")
# cat's kernel: a work-item per element in the GPU class, per run of the innermost dim in the CPU class
# (runtime/kernel_forms.h's copy_lines; test_copy_lines.py checks both forms).
CAT = "cat_parts" if torch_opencl._C._device_properties(0)["kernel_class"] == "gpu" else "cat_lines"
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.bfloat16]


def data(*shape, dtype=torch.float32, seed=0):
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select_matches_cpu(dtype, index_dtype):
    x = data(4, 5, 6, dtype=dtype)
    gen = torch.Generator().manual_seed(1)
    with native_only():
        for dim in [0, 1, 2, -1]:
            idx = torch.randint(0, x.shape[dim], (7,), dtype=index_dtype, generator=gen)
            torch.testing.assert_close(torch.index_select(x.to(DEV), dim, idx.to(DEV)).cpu(),
                                       torch.index_select(x, dim, idx))
        idx = torch.randint(0, 5, (3,), dtype=index_dtype, generator=gen)
        xt = x.transpose(0, 2)
        torch.testing.assert_close(torch.index_select(xt.to(DEV), 1, idx.to(DEV)).cpu(), torch.index_select(xt, 1, idx))


def test_index_select_edge_cases_and_out():
    x = data(4, 3)
    with native_only():
        empty = torch.index_select(x.to(DEV), 0, torch.empty(0, dtype=torch.long, device=DEV))
        assert empty.shape == (0, 3)
        scalar = torch.index_select(torch.tensor(5.0).to(DEV), 0, torch.tensor([0], device=DEV))
        torch.testing.assert_close(scalar.cpu(), torch.index_select(torch.tensor(5.0), 0, torch.tensor([0])))
        out = torch.empty(0, device=DEV)
        ret = torch.index_select(x.to(DEV), 1, torch.tensor([2, 0], device=DEV), out=out)
    assert ret is out
    torch.testing.assert_close(out.cpu(), x[:, [2, 0]])


@pytest.mark.parametrize("bad", [4, -1])
def test_index_select_out_of_range_raises_like_cpu(bad):
    x, idx = data(4, 3), torch.tensor([0, bad])
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.index_select(x, 0, idx)
    with native_only(), raises_index_error("index out of range in self"):
        torch.index_select(x.to(DEV), 0, idx.to(DEV))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        torch.index_select(x.to(DEV), 0, torch.zeros(1, 1, dtype=torch.long, device=DEV))


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_embedding_forward_backward_matches_cpu(padding_idx, scale_grad_by_freq, dtype):
    torch.manual_seed(0)
    cpu = nn.Embedding(10, 4, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq).to(dtype)
    dev = copy.deepcopy(cpu).to(DEV)
    idx = torch.randint(0, 10, (3, 8), generator=torch.Generator().manual_seed(2))
    y = cpu(idx)
    g = torch.randn(y.shape, dtype=dtype)
    y.backward(g)
    with native_only():
        yd = dev(idx.to(DEV))
        yd.backward(g.to(DEV))
    torch.testing.assert_close(yd.detach().cpu(), y.detach())
    torch.testing.assert_close(dev.weight.grad.cpu(), cpu.weight.grad)


def test_embedding_bad_index_raises():
    emb = nn.Embedding(5, 2).to(DEV)
    with raises_index_error("index out of range in self"):
        emb(torch.tensor([1, 5], device=DEV))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_triu_match_cpu(dtype, diagonal):
    x = data(2, 4, 5, dtype=dtype)
    with native_only():
        for fn in (torch.tril, torch.triu):
            torch.testing.assert_close(fn(x.to(DEV), diagonal).cpu(), fn(x, diagonal))
            torch.testing.assert_close(fn(x.to(DEV).transpose(1, 2), diagonal).cpu(), fn(x.transpose(1, 2), diagonal))
        y = x.to(DEV)
        y.tril_(diagonal)
        torch.testing.assert_close(y.cpu(), x.tril(diagonal))
        yt = x.to(DEV).transpose(1, 2)
        yt.triu_(diagonal)  # in place on a non-contiguous tensor
        torch.testing.assert_close(yt.cpu(), x.transpose(1, 2).triu(diagonal))
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch.triu(x.to(DEV), diagonal, out=out)
        torch.testing.assert_close(out.cpu(), x.triu(diagonal))


def test_tril_gradient_and_errors():
    x = data(4, 4).requires_grad_()
    xd = x.detach().to(DEV).requires_grad_()
    g = data(4, 4, seed=3)
    with native_only():
        torch.tril(xd).backward(g.to(DEV))
    torch.tril(x).backward(g)
    torch.testing.assert_close(xd.grad.cpu(), x.grad)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.tril(torch.zeros(3, device=DEV))


def test_cat_and_stack_match_cpu():
    a, b, c = data(3, 4), data(2, 4, dtype=torch.float64, seed=1), data(4, 5, seed=2).t()
    x = data(2, 3, 4, 4, seed=3).to(memory_format=torch.channels_last)
    cases = [([a, b], 0), ([a, c], 0), ([a, torch.empty(0)], 0), ([a, a], 1), ([a, a], -1), ([x, x], 1),
             ([data(0, 4), a], 0), ([torch.tensor([1, 2]), torch.tensor([3])], 0)]
    with native_only():
        for tensors, dim in cases:
            torch.testing.assert_close(torch.cat([t.to(DEV) for t in tensors], dim).cpu(), torch.cat(tensors, dim))
        for dim in (0, 1, 2):
            torch.testing.assert_close(torch.stack([a.to(DEV), (a * 2).to(DEV)], dim).cpu(), torch.stack([a, a * 2], dim))
        out = torch.empty(0, device=DEV)
        ret = torch.cat([a.to(DEV), a.to(DEV)], 1, out=out)
    assert ret is out
    torch.testing.assert_close(out.cpu(), torch.cat([a, a], 1))


def cat_launches(tensors, dim, **kwargs):
    """torch.cat on opencl of `tensors` (CPU tensors, moved first) and the kernels it launched."""
    moved = [t.to(DEV) for t in tensors]
    C = torch.opencl._C
    C._record_kernel_names(True)
    try:
        with native_only():
            got = torch.cat(moved, dim, **kwargs)
    finally:
        C._record_kernel_names(False)
    return got, C._recorded_kernel_names()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int16, torch.float64, torch.complex64])
def test_cat_copies_inputs_of_any_layout_in_one_launch(dtype):
    x = data(2, 5, 3, 8, dtype=dtype, seed=4)
    cases = [
        ([data(3, 4, dtype=dtype), data(5, 4, dtype=dtype, seed=1)], 0),
        ([data(3, 4, dtype=dtype), data(3, 2, dtype=dtype, seed=1), data(3, 7, dtype=dtype, seed=2)], 1),
        ([x.transpose(1, 2), x.transpose(1, 2)[:, :, :2]], 2),  # a split backward's strided grads
        ([data(2, 3, dtype=dtype).t(), data(3, 4, dtype=dtype, seed=1)], 1),
        ([x.to(memory_format=torch.channels_last), x[:, :2].to(memory_format=torch.channels_last)], 1),
        ([data(2, 3, 4, 5, 6, dtype=dtype), data(2, 3, 8, 5, 6, dtype=dtype, seed=1)[:, :, ::2]], 2),
    ]
    for tensors, dim in cases:
        got, kernels = cat_launches(tensors, dim)
        expected = torch.cat(tensors, dim)
        assert got.stride() == expected.stride()
        assert torch.equal(got.cpu(), expected)
        assert kernels == [CAT], (dim, kernels)
    # Dims that do not merge into four: the strided copy per input, same values.
    tensors = [data(2, 2, 2, 2, 2, 2, dtype=dtype), data(2, 2, 2, 2, 2, 2, dtype=dtype, seed=1).transpose(0, 5)]
    got, kernels = cat_launches(tensors, 3)
    assert torch.equal(got.cpu(), torch.cat(tensors, 3)) and CAT not in kernels


def test_cat_of_many_inputs_launches_once_per_eight():
    parts = [data(2, 1 + i % 3, seed=i) for i in range(20)]
    got, kernels = cat_launches(parts, 1)
    assert torch.equal(got.cpu(), torch.cat(parts, 1))
    assert kernels == [CAT] * 3
    stacked = torch.stack([p.to(DEV) for p in parts[::3]], 1)  # stack is cat of unsqueezed views
    assert torch.equal(stacked.cpu(), torch.stack(parts[::3], 1))


def test_cat_converts_other_dtypes_and_skips_empty_inputs_like_cpu():
    a, b = data(2, 3), data(2, 3, dtype=torch.float64, seed=1)
    got, _ = cat_launches([a, torch.empty(0), b, data(0, 3), a], 0)
    expected = torch.cat([a, torch.empty(0), b, data(0, 3), a], 0)
    assert got.dtype == expected.dtype == torch.float64
    assert torch.equal(got.cpu(), expected)
    out, cpu_out = torch.empty(3, 4, device=DEV).t(), torch.empty(3, 4).t()  # restrided as on CPU
    got, kernels = cat_launches([a, a], 0, out=out)
    torch.cat([a, a], 0, out=cpu_out)
    assert got is out and out.stride() == cpu_out.stride()
    assert torch.equal(out.cpu(), cpu_out)
    assert kernels == [CAT, "copy_strided"]  # into a contiguous proxy, then into out's layout


def test_cat_gradient_and_errors_like_cpu():
    xs = [data(2, 3, seed=s).requires_grad_() for s in range(3)]
    xd = [t.detach().to(DEV).requires_grad_() for t in xs]
    g = data(2, 9, seed=7)
    torch.cat(xs, 1).backward(g)
    with native_only():
        torch.cat(xd, 1).backward(g.to(DEV))
    for p, q in zip(xs, xd):
        torch.testing.assert_close(q.grad.cpu(), p.grad)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([torch.zeros(3, 4, device=DEV), torch.zeros(3, 5, device=DEV)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.cat([torch.zeros(3, 4, device=DEV)], 2)
