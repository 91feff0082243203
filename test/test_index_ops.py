"""index_add, index_copy, index_fill_, take and put_: native, equal to CPU, with CPU's errors."""
import pytest
import torch

import torch_opencl  # noqa: F401
from _device_helpers import assert_same_as_cpu, compare_with_cpu, native_only

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32]


def _tensor(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 10).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_with_duplicates_alpha_and_forms(dtype, dim):
    self = _tensor((5, 6, 4), dtype)
    size = self.shape[dim]
    index = torch.tensor([0, size - 1, 1, 0, 0])  # duplicates accumulate
    src_shape = list(self.shape)
    src_shape[dim] = index.numel()
    source = _tensor(src_shape, dtype, seed=1)
    alpha = 2 if not dtype.is_floating_point else 0.5
    compare_with_cpu(lambda s, i, x: s.index_add(dim, i, x), self, index, source, rtol=1e-5, atol=1e-5)
    compare_with_cpu(lambda s, i, x: s.clone().index_add_(dim, i, x, alpha=alpha), self, index, source,
                     rtol=1e-5, atol=1e-5)
    compare_with_cpu(lambda s, i, x: torch.index_add(s, dim, i.int(), x, out=torch.empty_like(s)), self, index,
                     source, rtol=1e-5, atol=1e-5)


def test_index_add_on_a_non_contiguous_view_and_0d():
    base = torch.randn(6, 8)
    index = torch.tensor([2, 0, 2])
    source = torch.randn(3, 6)

    def on_view(b, i, s):
        b = b.clone()
        b.t().index_add_(0, i, s)  # writes through the transposed view
        return b

    compare_with_cpu(on_view, base, index, source)
    compare_with_cpu(lambda s, i, x: s.index_add(0, i, x), torch.tensor(1.5), torch.tensor([0]), torch.tensor(2.0))


def test_index_add_gradient_matches_cpu():
    self, source = torch.randn(5, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    index = torch.tensor([4, 0, 4, 2])
    grads = []
    for device in ("cpu", "opencl"):
        s = self.to(device, copy=True).requires_grad_()
        x = source.to(device, copy=True).requires_grad_()
        w = torch.arange(15.0, dtype=torch.float64).reshape(5, 3).to(device)
        with native_only() if device == "opencl" else torch.enable_grad():
            (s.index_add(0, index.to(device), x, alpha=3.0) * w).sum().backward()
        grads.append((s.grad, x.grad))
    assert_same_as_cpu(grads[1], grads[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_copy_and_index_fill(dtype):
    self = _tensor((4, 7), dtype)
    index = torch.tensor([6, 0, 3])
    source = _tensor((4, 3), dtype, seed=2)
    compare_with_cpu(lambda s, i, x: s.index_copy(1, i, x), self, index, source)
    compare_with_cpu(lambda s, i, x: s.clone().index_copy_(1, i, x), self, index, source)
    compare_with_cpu(lambda s, i: s.clone().index_fill_(1, i, 3), self, torch.tensor([-1, 2, 2]))
    compare_with_cpu(lambda s, i: s.index_fill(0, i, -2), self, torch.tensor([3, 0]))
    compare_with_cpu(lambda s, i, v: s.clone().index_fill_(1, i, v), self, index, torch.tensor(7).to(dtype))
    compare_with_cpu(lambda s, i: s.clone().index_fill_(0, i, 1), torch.tensor(5).to(dtype), torch.tensor(0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_take_and_put(dtype):
    self = _tensor((4, 5), dtype)
    index = torch.tensor([[0, -1, 7], [19, 3, 3]])
    compare_with_cpu(torch.take, self, index)
    compare_with_cpu(lambda s, i: torch.take(s.t(), i), self, index)  # non-contiguous input: row-major order
    source = _tensor((2, 3), dtype, seed=3)
    uniq = torch.tensor([[0, -1, 7], [19, 3, 4]])
    compare_with_cpu(lambda s, i, x: s.clone().put_(i, x), self, uniq, source)
    compare_with_cpu(lambda s, i, x: s.clone().put_(i, x, accumulate=True), self, index, source,
                     rtol=1e-5, atol=1e-5)

    def put_into_transposed(s, i, x):
        s = s.clone()
        s.t().put_(i, x, accumulate=True)
        return s

    compare_with_cpu(put_into_transposed, self, index, source, rtol=1e-5, atol=1e-5)


def _same_error(fn, *cpu_args):
    with pytest.raises(Exception) as want:
        fn(*cpu_args)
    with pytest.raises(type(want.value)) as got:
        fn(*[a.to("opencl") if isinstance(a, torch.Tensor) else a for a in cpu_args])
    return str(want.value).splitlines()[0], str(got.value).splitlines()[0]


@pytest.mark.parametrize("case", ["add_negative", "add_past_end", "copy_negative", "fill_past_end", "take_past_end",
                                  "put_past_end", "take_int_index"])
def test_bad_indices_raise_cpus_errors_and_the_device_keeps_working(case):
    x = torch.arange(6.0)
    fns = {
        "add_negative": (lambda s, i: s.clone().index_add_(0, i, torch.ones(1, device=s.device)), torch.tensor([-1])),
        "add_past_end": (lambda s, i: s.clone().index_add_(0, i, torch.ones(1, device=s.device)), torch.tensor([6])),
        "copy_negative": (lambda s, i: s.clone().index_copy_(0, i, torch.ones(1, device=s.device)), torch.tensor([-1])),
        "fill_past_end": (lambda s, i: s.clone().index_fill_(0, i, 1.0), torch.tensor([6])),
        "take_past_end": (lambda s, i: s.take(i), torch.tensor([6])),
        "put_past_end": (lambda s, i: s.clone().put_(i, torch.ones(1, device=s.device)), torch.tensor([-7])),
        "take_int_index": (lambda s, i: s.take(i), torch.tensor([1], dtype=torch.int32)),
    }
    fn, index = fns[case]
    want, got = _same_error(fn, x, index)
    assert got == want
    compare_with_cpu(lambda s: s.index_add(0, torch.tensor([1, 1], device=s.device), s[:2]), x)
