"""The strided kernels' index scheme (kernels_cl/tiled_index.cl, aten/kernel_support/tiled_geometry.cpp):
strided copies, strided fills and the elementwise engine over non-contiguous operands,
against CPU PyTorch.

Shapes are chosen so the iterator cannot coalesce them: ranks 1..12 (the limit), tiles
narrower than a dim and dims narrower than a tile, zero strides (expand), broadcasts in
every position, non-contiguous outputs and in-place forms. Every case runs with 32-bit index
math (the default for these sizes), and a representative subset again in a subprocess with
TORCH_OPENCL_DEBUG_INDEX64=1, which forces the 64-bit variant. PyTorch tensors cannot have negative strides, so
the kernels' signed strides are reached only through offsets (covered by the same cases).
"""
import os
import subprocess
import sys

import pytest
import torch

import torch_opencl  # noqa: F401

from _device_helpers import native_only

DEV = torch.device("opencl")
INDEX64 = os.environ.get("TORCH_OPENCL_DEBUG_INDEX64") == "1"


def rand(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def permutation(rank, seed):
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(rank, generator=g).tolist()
    if rank > 1 and perm == sorted(perm):
        perm = perm[::-1]
    return perm


def check(got, want):
    assert got.device.type == "opencl"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want), (got.cpu() - want).abs().max() if want.dtype.is_floating_point else None


# Sizes per rank: mixes of small dims (narrower than a tile) and larger ones (several tiles).
SHAPES = {
    1: (1000,),
    2: (300, 70),
    3: (5, 33, 17),
    4: (16, 64, 4, 16),
    5: (3, 4, 5, 6, 7),
    6: (2, 3, 4, 5, 3, 2),
    7: (2, 3, 2, 3, 2, 3, 5),
    8: (2, 2, 3, 2, 2, 3, 2, 5),
    9: (2, 2, 2, 3, 2, 2, 2, 3, 2),
    12: (2,) * 11 + (3,),
}


@pytest.mark.parametrize("rank", sorted(SHAPES))
def test_permuted_copy(rank):
    x = rand(SHAPES[rank], seed=rank)
    perm = permutation(rank, rank)
    with native_only():
        got = x.to(DEV).permute(perm).contiguous()
    check(got, x.permute(perm).contiguous())


@pytest.mark.parametrize("rank", [2, 4, 5, 9])
def test_copy_into_permuted_output_with_conversion(rank):
    x = rand(SHAPES[rank], torch.float32, seed=rank)
    perm = permutation(rank, rank + 1)
    want = torch.zeros(SHAPES[rank], dtype=torch.float64).permute(perm)
    want.copy_(x.permute(perm))
    with native_only():
        dst = torch.zeros(SHAPES[rank], dtype=torch.float64, device=DEV).permute(perm)
        dst.copy_(x.to(DEV).permute(perm))
    check(dst, want)


def test_transpose_copies_of_training_shapes():
    with native_only():
        for shape, dims in [((16, 64, 4, 16), (1, 2)), ((1024, 1024), (0, 1)), ((7, 1000), (0, 1)), ((3, 300, 5), (0, 2))]:
            x = rand(shape)
            check(x.to(DEV).transpose(*dims).contiguous(), x.transpose(*dims).contiguous())


def test_sliced_and_expanded_copies():
    x = rand((6, 40, 50))
    with native_only():
        d = x.to(DEV)
        check(d[:, ::3, 1::2].contiguous(), x[:, ::3, 1::2].contiguous())
        check(d[1:, :, ::7].contiguous(), x[1:, :, ::7].contiguous())
        check(d[:, :1, :].expand(6, 9, 50).contiguous(), x[:, :1, :].expand(6, 9, 50).contiguous())
        check(d[2].expand(3, 40, 50).transpose(0, 2).contiguous(), x[2].expand(3, 40, 50).transpose(0, 2).contiguous())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int8, torch.bool, torch.float16])
def test_strided_fill(dtype):
    want = torch.zeros((7, 30, 11), dtype=dtype)
    want[:, ::2, 3:].fill_(1)
    want.transpose(0, 2)[1::3].fill_(0)
    with native_only():
        got = torch.zeros((7, 30, 11), dtype=dtype, device=DEV)
        got[:, ::2, 3:].fill_(1)
        got.transpose(0, 2)[1::3].fill_(0)
    check(got, want)


def test_fill_and_copy_of_seven_unmergeable_dims():
    # Every dim sliced: no two neighbours merge, so the *_nd kernel variants run.
    want = torch.zeros((3, 4, 3, 4, 3, 4, 5))
    src = rand((2, 2, 2, 2, 2, 2, 3), seed=14)
    want_copy = want.clone()
    want[::2, ::2, ::2, ::2, ::2, ::2, ::2].fill_(7)
    want_copy[::2, ::2, ::2, ::2, ::2, ::2, ::2].copy_(src)
    with native_only():
        got = torch.zeros((3, 4, 3, 4, 3, 4, 5), device=DEV)
        got_copy = got.clone()
        got[::2, ::2, ::2, ::2, ::2, ::2, ::2].fill_(7)
        got_copy[::2, ::2, ::2, ::2, ::2, ::2, ::2].copy_(src.to(DEV))
    check(got, want)
    check(got_copy, want_copy)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 6, 8, 9, 12])
def test_binary_on_permuted_inputs(rank):
    pa, pb = permutation(rank, 3), permutation(rank, 4)
    a = rand(SHAPES[rank], seed=1)
    shape = a.permute(pa).shape
    # b laid out in another order, viewed in a's permuted shape
    inverse = [pb.index(i) for i in range(rank)]
    b = rand(tuple(shape[p] for p in pb), seed=2)
    want = a.permute(pa) + b.permute(inverse).mul(2)
    with native_only():
        got = a.to(DEV).permute(pa) + b.to(DEV).permute(inverse).mul(2)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,other", [
    ((64, 32, 28, 28), (32, 1, 1)),        # bias add of a conv layer
    ((5, 7, 9), (5, 1, 9)),                # broadcast in the middle
    ((5, 7, 9), (1, 7, 1)),
    ((3, 1, 4, 1, 5, 1), (1, 6, 1, 2, 1, 7)),  # both sides broadcast
    ((2, 3, 4, 5, 6), (4, 1, 6)),
    ((), (3, 4)),                           # 0-d with a tensor
])
def test_broadcast_binary(shape, other):
    a, b = rand(shape, seed=5), rand(other, seed=6)
    with native_only():
        got = torch.add(a.to(DEV), b.to(DEV), alpha=0.5)
    torch.testing.assert_close(got.cpu(), torch.add(a, b, alpha=0.5), rtol=1e-6, atol=1e-6)


def test_ternary_with_broadcast_and_permutation():
    a = rand((4, 5, 6, 7), seed=1)
    b = rand((7, 6, 5, 4), seed=2).permute(3, 2, 1, 0)
    c = rand((5, 1, 7), seed=3)
    with native_only():
        got = torch.addcmul(a.to(DEV), b.to(DEV), c.to(DEV), value=0.25)
    torch.testing.assert_close(got.cpu(), torch.addcmul(a, b, c, value=0.25), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_non_contiguous_output_and_in_place(dtype):
    a, b = rand((9, 40, 13), dtype, seed=7), rand((13, 40), dtype, seed=8)
    want_out = torch.zeros((13, 40, 9), dtype=dtype).permute(2, 1, 0)
    torch.mul(a, b.t(), out=want_out)
    want_inplace = a.clone()
    want_inplace.transpose(0, 2).sub_(b.unsqueeze(-1))
    with native_only():
        out = torch.zeros((13, 40, 9), dtype=dtype, device=DEV).permute(2, 1, 0)
        torch.mul(a.to(DEV), b.to(DEV).t(), out=out)
        inplace = a.to(DEV)
        inplace.transpose(0, 2).sub_(b.to(DEV).unsqueeze(-1))
    check(out, want_out)
    check(inplace, want_inplace)


# out= given a view into a larger tensor keeps the view's strides (as ATen's resize_out: only a
# resized out is restrided) and only the view's elements change. Expected values are the op's
# out-of-place result placed into the view, not CPU's out= (CPU's _softmax.out writes a strided out
# as if contiguous).
@pytest.mark.parametrize("op", ["cat", "softmax", "tril", "avg_pool2d", "mul"])
def test_out_view_into_larger_tensor_changes_only_its_elements(op):
    x = rand((4, 6), seed=11)
    img = rand((2, 3, 4, 4), seed=12)
    # op: (out= call, its out-of-place value on CPU, the view, the larger tensor's shape)
    calls = {
        "cat": (lambda t, out: torch.cat([t[:2, :3], t[2:, :3]], 0, out=out), lambda t: t[:, :3],
                (slice(None), slice(None, 3)), (4, 6)),
        "softmax": (lambda t, out: torch.ops.aten._softmax.out(t, 1, False, out=out), lambda t: torch.softmax(t, 1),
                    (slice(1, 5), slice(2, 8)), (6, 8)),
        "tril": (lambda t, out: torch.tril(t, out=out), torch.tril, (slice(None, 4), slice(1, 7)), (5, 7)),
        "avg_pool2d": (lambda t, out: torch.ops.aten.avg_pool2d.out(t, [2, 2], [2, 2], out=out),
                       lambda t: torch.nn.functional.avg_pool2d(t, 2),
                       (slice(None), slice(None), slice(1, 3), slice(2, 4)), (2, 3, 6, 6)),
        "mul": (lambda t, out: torch.mul(t, 2, out=out), lambda t: t * 2, (slice(1, 5), slice(2, 8)), (6, 8)),
    }
    run, reference, view, big_shape = calls[op]
    src = img if op == "avg_pool2d" else x
    with native_only():
        big = torch.full(big_shape, -7.0, device=DEV)
        out = big[view]
        strides = out.stride()
        ret = run(src.to(DEV), out)
    assert ret is out and out.stride() == strides
    expected = torch.full(big_shape, -7.0)
    expected[view] = reference(src)
    torch.testing.assert_close(big.cpu(), expected)


def test_in_place_on_expanded_input_and_strided_self():
    x = rand((8, 50), seed=9)
    row = rand((50,), seed=10)
    want = x.clone()
    want[:, ::3].mul_(row[::3].expand(8, -1))
    with native_only():
        got = x.to(DEV)
        got[:, ::3].mul_(row.to(DEV)[::3].expand(8, -1))
    check(got, want)


def test_unary_and_comparison_on_strided_views():
    x = rand((33, 65), seed=11)
    with native_only():
        d = x.to(DEV)
        torch.testing.assert_close(torch.exp(d.t()[::2]).cpu(), torch.exp(x.t()[::2]), rtol=1e-5, atol=0)
        check(torch.gt(d.t(), d[:1].t()), torch.gt(x.t(), x[:1].t()))
        check(torch.where(d.t() > 0, d.t(), 0.0), torch.where(x.t() > 0, x.t(), 0.0))


def test_arange_and_linspace_into_strided_out():
    # The strided kernel's linear index (lin) drives these.
    with native_only():
        base = torch.zeros(2000, device=DEV)
        torch.arange(1000, out=base[::2])
        lin = torch.zeros(600, dtype=torch.float64, device=DEV)
        torch.linspace(-1, 1, 200, out=lin[1::3])
    want = torch.zeros(2000)
    torch.arange(1000, out=want[::2])
    want_lin = torch.zeros(600, dtype=torch.float64)
    torch.linspace(-1, 1, 200, out=want_lin[1::3])
    check(base, want)
    check(lin, want_lin)


def test_empty_and_zero_d():
    with native_only():
        e = torch.zeros((0, 5), device=DEV).t().contiguous()
        assert e.shape == (5, 0)
        z = torch.tensor(3.0, device=DEV)
        check(z + torch.zeros((4, 3), device=DEV).t(), torch.full((3, 4), 3.0))
        out = torch.zeros((), device=DEV)
        torch.add(z, z, out=out)
        check(out, torch.tensor(6.0))


def test_gelu_backward_matches_cpu():
    g, x = rand((262144,), seed=12), rand((262144,), seed=13) * 3
    with native_only():
        got = torch.ops.aten.gelu_backward(g.to(DEV), x.to(DEV))
        got_t = torch.ops.aten.gelu_backward(g.to(DEV).view(512, 512).t(), x.to(DEV).view(512, 512).t())
    want = torch.ops.aten.gelu_backward(g, x)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_t.cpu(), torch.ops.aten.gelu_backward(g.view(512, 512).t(), x.view(512, 512).t()),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(INDEX64, reason="already the 64-bit run")
def test_everything_again_with_64_bit_index_math():
    env = dict(os.environ, TORCH_OPENCL_DEBUG_INDEX64="1")
    # A representative subset: each program compiles again in its 64-bit form (a second or more each).
    subset = "permuted_copy or binary_on_permuted or broadcast_binary or ternary or arange or expanded or seven"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-k", subset, __file__],
                         env=env, cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
