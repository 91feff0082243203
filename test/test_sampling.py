"""torch.multinomial, torch.randperm, torch.normal with tensor means/stds and torch._assert_async on the
device (they ran on the CPU fallback). Random draws cannot equal CPU's: the tests check what the
distributions promise (frequencies within about six standard deviations, permutations, zero-probability
categories never drawn), reproducibility from a seeded generator, shapes, dtypes and out= forms, and
CPU's errors for bad input. Every call runs with the fallback refusing."""
import itertools
import math

import pytest
import torch

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"


def frequencies(samples, categories):
    return torch.bincount(samples.cpu().reshape(-1), minlength=categories).double() / samples.numel()


def assert_frequencies(samples, p):
    """Observed frequencies within 6 standard deviations of p (binomial), and exactly 0 where p is 0."""
    n = samples.numel()
    freq = frequencies(samples, p.numel())
    p = p.double() / p.double().sum()
    bound = 6 * torch.sqrt(p * (1 - p) / n) + 1e-12
    assert torch.all((freq - p).abs() <= bound), (freq, p)
    assert torch.all(freq[p == 0] == 0), (freq, p)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_multinomial_with_replacement_follows_the_probabilities(dtype):
    torch.manual_seed(0)
    rows = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 6.0], [1.0, 1.0, 1.0, 1.0]])
    with native_only():
        s = torch.multinomial(rows.to(DEV, dtype), 40000, replacement=True)
    assert s.dtype == torch.int64 and s.shape == (4, 40000) and s.device.type == "opencl"
    for r in range(4):
        assert_frequencies(s[r], rows[r])
    with native_only():  # 1-D input, one row; many categories (the binary search's depth)
        wide = torch.rand(3000) * (torch.arange(3000) % 3 != 0)
        s1 = torch.multinomial(wide.to(DEV, dtype), 20000, replacement=True)
    assert s1.shape == (20000,)
    assert torch.all(wide[s1.cpu()] > 0)


def test_multinomial_without_replacement_and_single_draws():
    torch.manual_seed(0)
    p = torch.tensor([[0.5, 0.0, 0.2, 0.3, 0.0, 1.0]] * 8)
    with native_only():
        s = torch.multinomial(p.to(DEV), 4)
        firsts = torch.cat([torch.multinomial(p[0].to(DEV), 1) for _ in range(400)])
    assert s.shape == (8, 4)
    for row in s.cpu():
        assert len(set(row.tolist())) == 4 and set(row.tolist()) == {0, 2, 3, 5}  # every nonzero, each once
    assert_frequencies(firsts, p[0])  # loosely: 400 draws


def test_multinomial_generator_out_and_forms():
    p = torch.tensor([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], device=DEV)
    g = torch.Generator(device=DEV)
    with native_only():
        g.manual_seed(7)
        a = torch.multinomial(p, 50, replacement=True, generator=g)
        b = torch.multinomial(p, 50, replacement=True, generator=g)
        g.manual_seed(7)
        a2 = torch.multinomial(p, 50, replacement=True, generator=g)
        out = torch.empty(0, dtype=torch.long, device=DEV)
        torch.multinomial(p, 6, replacement=True, out=out)
        noncontig = torch.empty(6, 2, dtype=torch.long, device=DEV).t()
        torch.multinomial(p, 6, replacement=True, out=noncontig)
    assert torch.equal(a.cpu(), a2.cpu()) and not torch.equal(a.cpu(), b.cpu())
    assert out.shape == (2, 6) and int(out.max()) <= 2
    assert noncontig.shape == (2, 6) and int(noncontig.min()) >= 0 and int(noncontig.max()) <= 2


@pytest.mark.parametrize("bad, replacement", [([[0.1, -0.1, 1.0]], True), ([[math.nan, 1.0, 1.0]], True),
                                              ([[math.inf, 1.0, 1.0]], True), ([[0.0, 0.0, 0.0]], True),
                                              ([[0.1, -0.1, 1.0]], False), ([[0.0, 0.0, 0.0]], False)])
def test_multinomial_bad_probabilities_raise_as_on_cpu(bad, replacement):
    t = torch.tensor(bad)
    with pytest.raises(RuntimeError) as want:
        torch.multinomial(t, 2, replacement)
    with native_only(), pytest.raises(RuntimeError) as got:
        torch.multinomial(t.to(DEV), 2, replacement)
    assert str(got.value) == str(want.value)
    assert torch.multinomial(torch.tensor([1.0, 1.0], device=DEV), 1).item() in (0, 1)  # the device works on


def test_multinomial_bad_arguments_raise_as_on_cpu():
    p = torch.ones(2, 3)
    for call in (lambda t: torch.multinomial(t, 4), lambda t: torch.multinomial(t, 0, True),
                 lambda t: torch.multinomial(t[None], 1), lambda t: torch.multinomial(t.long(), 1)):
        with pytest.raises(RuntimeError) as want:
            call(p)
        with native_only(), pytest.raises(RuntimeError) as got:
            call(p.to(DEV))
        assert str(got.value) == str(want.value)


def test_randperm_is_a_uniform_permutation():
    torch.manual_seed(0)
    with native_only():
        for n, dtype in ((0, torch.int64), (1, torch.int64), (10, torch.int32), (70000, torch.int64),
                         (1000, torch.float32)):
            p = torch.randperm(n, device=DEV, dtype=dtype)
            assert p.dtype == dtype and p.shape == (n,) and p.device.type == "opencl"
            assert torch.equal(p.cpu().long().sort().values, torch.arange(n))
        counts = {perm: 0 for perm in itertools.permutations(range(3))}
        for _ in range(1200):
            counts[tuple(torch.randperm(3, device=DEV).tolist())] += 1
    # Each of the six permutations 200 times expected; sd 12.9.
    assert all(abs(c - 200) <= 80 for c in counts.values()), counts


def test_randperm_generator_out_and_errors():
    g = torch.Generator(device=DEV)
    with native_only():
        g.manual_seed(3)
        a = torch.randperm(50, generator=g, device=DEV)
        g.manual_seed(3)
        b = torch.randperm(50, generator=g, device=DEV)
        out = torch.empty(5, dtype=torch.int16, device=DEV)
        torch.randperm(12, out=out)
    assert torch.equal(a.cpu(), b.cpu())
    assert out.shape == (12,) and torch.equal(out.cpu().sort().values, torch.arange(12, dtype=torch.int16))
    for call in (lambda d: torch.randperm(-1, device=d), lambda d: torch.randperm(300, dtype=torch.int8, device=d),
                 lambda d: torch.randperm(4000, dtype=torch.half, device=d)):
        with pytest.raises(RuntimeError) as want:
            call("cpu")
        with native_only(), pytest.raises(RuntimeError) as got:
            call(DEV)
        assert str(got.value) == str(want.value)


def test_normal_with_tensor_means_and_stds():
    torch.manual_seed(0)
    mean = torch.tensor([[-3.0], [0.0], [10.0]])
    std = torch.tensor([0.5, 1.0, 2.0, 0.0])
    with native_only():
        a = torch.normal(mean.to(DEV).expand(3, 20000), 2.0)
        b = torch.normal(1.5, std.to(DEV).repeat(5000))
        c = torch.normal(mean.expand(3, 4).to(DEV).repeat(1, 5000), std.to(DEV).repeat(3, 5000))
        out = torch.empty(3, 1, device=DEV, dtype=torch.float64)
        torch.normal(mean.double().to(DEV), 1.0, out=out)
    assert a.shape == (3, 20000) and a.dtype == torch.float32
    torch.testing.assert_close(a.cpu().mean(1), mean[:, 0], atol=0.1, rtol=0)
    torch.testing.assert_close(a.cpu().std(1), torch.full((3,), 2.0), atol=0.05, rtol=0)
    bs = b.cpu().reshape(5000, 4)
    torch.testing.assert_close(bs.std(0), std, atol=0.05, rtol=0)
    assert torch.all(bs[:, 3] == 1.5)  # std 0: the mean itself
    cs = c.cpu().reshape(3, 5000, 4)
    torch.testing.assert_close(cs.mean(1), mean.expand(3, 4), atol=0.1, rtol=0)
    assert out.shape == (3, 1) and out.dtype == torch.float64
    with pytest.raises(RuntimeError) as want:
        torch.normal(torch.zeros(3), torch.tensor([1.0, -1.0, 1.0]))
    with native_only(), pytest.raises(RuntimeError) as got:
        torch.normal(torch.zeros(3, device=DEV), torch.tensor([1.0, -1.0, 1.0], device=DEV))
    assert str(got.value) == str(want.value)


def test_assert_async():
    with native_only():
        torch._assert_async(torch.tensor(1, device=DEV))
        torch._assert_async(torch.tensor(0.5, device=DEV), "fine")
        for value, msg in ((0, None), (0.0, "custom message"), (False, "")):
            want_cpu = pytest.raises(RuntimeError)
            with want_cpu as want:
                torch._assert_async(torch.tensor(value)) if msg is None else torch._assert_async(torch.tensor(value), msg)
            with pytest.raises(RuntimeError) as got:
                t = torch.tensor(value, device=DEV)
                torch._assert_async(t) if msg is None else torch._assert_async(t, msg)
            assert str(got.value) == str(want.value)
