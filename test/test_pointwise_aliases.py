"""Integer shifts, floor_divide, rsub, logit, round(decimals), torch.equal and unfold: native and equal to CPU."""
import pytest
import torch

import torch_opencl  # noqa: F401
from _device_helpers import assert_same_as_cpu, compare_with_cpu, native_only

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def _ints(dtype, n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, (n,), generator=g, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shifts_match_cpu_including_out_of_range_counts(dtype):
    a = _ints(dtype)
    bits = torch.iinfo(dtype).bits
    # counts below 0, inside, at and past the bit width
    counts = torch.tensor([-3, -1, 0, 1, 2, bits - 2, bits - 1, bits, bits + 1, 70] * 4, dtype=torch.int64)
    counts = counts.clamp(torch.iinfo(dtype).min, torch.iinfo(dtype).max).to(dtype)
    compare_with_cpu(lambda x, y: x << y, a, counts)
    compare_with_cpu(lambda x, y: x >> y, a, counts)
    compare_with_cpu(torch.bitwise_left_shift, a, counts)
    compare_with_cpu(torch.bitwise_right_shift, a, counts)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_shift_scalar_inplace_and_broadcast_forms(dtype):
    a = _ints(dtype).reshape(5, 8)
    compare_with_cpu(lambda x: x << 3, a)
    compare_with_cpu(lambda x: x >> 2, a)
    compare_with_cpu(lambda x, y: x << y, a, torch.arange(8, dtype=dtype))

    def inplace(x):
        x = x.clone()
        x <<= 2
        x >>= torch.ones(8, dtype=dtype, device=x.device)
        x[:, ::2].bitwise_left_shift_(1)
        return x

    compare_with_cpu(inplace, a)
    out = torch.empty(0, dtype=dtype)
    compare_with_cpu(lambda x: torch.bitwise_right_shift(x, 1, out=out.to(x.device)), a)


def test_shifts_refuse_floats_and_bool_like_cpu():
    f, b = torch.randn(3, device="opencl"), torch.ones(3, dtype=torch.bool, device="opencl")
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        f << 1
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        b << b
    compare_with_cpu(lambda x: x << 1, b.cpu())  # bool with an int count promotes to int64, as on CPU


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_floor_divide_is_div_floor(dtype):
    a = (torch.randn(6, 7, dtype=torch.float64) * 20).to(dtype)
    b = (torch.randn(7, dtype=torch.float64) * 5).to(dtype)
    b[b == 0] = 3
    compare_with_cpu(torch.floor_divide, a, b)
    compare_with_cpu(lambda x, y: x // y, a, b)
    compare_with_cpu(lambda x: x // 3, a)

    def inplace(x, y):
        x = x.clone()
        x //= y
        return x

    compare_with_cpu(inplace, a, b)


def test_rsub_tensor_with_alpha():
    a, b = torch.randn(4, 5), torch.randn(5)
    compare_with_cpu(lambda x, y: torch.rsub(x, y, alpha=2.5), a, b)
    compare_with_cpu(lambda x, y: torch.rsub(x, y), torch.arange(6), torch.arange(6) * 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps", [None, -1.0, 0.0, 1e-3, 0.25])
def test_logit_forward_and_gradient(dtype, eps):
    x = torch.tensor([-0.5, 0.0, 1e-4, 0.1, 0.5, 0.9, 1.0, 1.5, float("nan")], dtype=dtype)
    compare_with_cpu(lambda t: torch.logit(t, eps), x)
    compare_with_cpu(lambda t: t.clone().logit_(eps), x)
    grad = torch.linspace(-1, 2, x.numel(), dtype=dtype)
    compare_with_cpu(lambda g, t: torch.ops.aten.logit_backward(g, t, eps), grad, x)

    inner = torch.tensor([0.05, 0.3, 0.7, 0.95], dtype=dtype)
    leaf = inner.to("opencl").requires_grad_()
    with native_only():
        torch.logit(leaf, eps).sum().backward()
    ref = inner.clone().requires_grad_()
    torch.logit(ref, eps).sum().backward()
    assert_same_as_cpu(leaf.grad, ref.grad)


def test_logit_of_integers_is_float():
    compare_with_cpu(torch.logit, torch.tensor([0, 1, 2]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 3])
def test_round_decimals(dtype, decimals):
    x = torch.tensor([-1234.5678, -0.125, 0.0, 0.5, 2.5, 15.05, 123.456, 9876.5], dtype=dtype)
    compare_with_cpu(lambda t: torch.round(t, decimals=decimals), x)
    compare_with_cpu(lambda t: t.clone().round_(decimals=decimals), x)


def test_round_decimals_refuses_integers():
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.round(torch.arange(3, device="opencl"), decimals=1)


def test_equal():
    a = torch.randn(3, 4, device="opencl")
    with native_only():
        assert torch.equal(a, a.clone())
        assert not torch.equal(a, a + 1)
        assert not torch.equal(a, a[:2])  # different sizes
        assert torch.equal(a.t(), a.clone().t())
        assert torch.equal(torch.empty(0, device="opencl"), torch.empty(0, device="opencl"))
        i = torch.arange(5, device="opencl")
        assert torch.equal(i, i)
        assert torch.equal(i, i.double())  # values compare after promotion, as on CPU
    nan = torch.tensor([float("nan"), 1.0], device="opencl")
    assert not torch.equal(nan, nan)  # NaN never equals, even the same tensor, as on CPU
    with pytest.raises(RuntimeError, match="different devices"):
        torch.equal(a, a.cpu())


def test_unfold_is_a_view_and_its_gradient_matches_cpu():
    with native_only():
        x = torch.arange(10.0, device="opencl")
        u = x.unfold(0, 3, 2)
        u[1, 0] = 100.0
        assert x[2].item() == 100.0 and u._base is x
    for shape, dim, size, step in [((10,), 0, 3, 2), ((4, 9), 1, 4, 1), ((4, 9), 0, 2, 3), ((3, 5, 6), -1, 6, 1),
                                   ((), 0, 1, 1)]:
        base = torch.randn(shape, dtype=torch.float64)
        weights = torch.randn(base.unfold(dim, size, step).shape, dtype=torch.float64)
        ref = base.clone().requires_grad_()
        (ref.unfold(dim, size, step) * weights).sum().backward()
        dev = base.to("opencl").requires_grad_()
        with native_only():
            (dev.unfold(dim, size, step) * weights.to("opencl")).sum().backward()
        assert_same_as_cpu(dev.grad, ref.grad)
