"""Random numbers on opencl: Philox-4x32-10 behind uniform_, normal_, bernoulli_, random_,
exponential_ and native dropout. Statistics within tolerances, seeding and generator state,
distinct numbers for consecutive calls, dtypes, non-contiguous outputs, and native execution."""
import math

import pytest
import torch
from torch.nn import functional as F

from _philox import philox4x32_10

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
N = 200_000
HAS_FP64 = True
try:
    torch.zeros(1, dtype=torch.float64, device=DEV) + 1
except RuntimeError:
    HAS_FP64 = False
FLOAT_TYPES = [torch.float32, torch.float16, torch.bfloat16] + ([torch.float64] if HAS_FP64 else [])


@pytest.fixture(autouse=True)
def native_only():
    """Every test here runs with the fallback refusing: the ops must be native."""
    torch.opencl.set_fallback_mode("error")
    yield
    torch.opencl.set_fallback_mode("warn")


def _host(t):
    return t.cpu().double()


# Philox-4x32-10 in Python, to check the device's first block against the reference algorithm.
def _philox(counter, key):
    m0, m1, w0, w1, mask = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85, 0xFFFFFFFF
    c = list(counter)
    k0, k1 = key
    for _ in range(10):
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & mask, p1 & mask, ((p0 >> 32) ^ c[3] ^ k1) & mask, p0 & mask]
        k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
    return c


def test_philox_known_answer():
    # Random123's known-answer vector for philox4x32_10 with zero counter and key
    assert _philox([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    # The numpy form the compiled-kernel and attention tests rebuild their draws with (counter words 2-3 zero).
    key = 0xDEADBEEF_12345678
    assert philox4x32_10(key, [0, 2**32 + 5]).tolist() == [
        _philox([0, 0, 0, 0], [key & 0xFFFFFFFF, key >> 32]), _philox([5, 1, 0, 0], [key & 0xFFFFFFFF, key >> 32])]
    assert philox4x32_10(0, [0]).tolist() == [[0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]]
    seed = 0x1234_5678_9ABC
    g = torch.Generator(device=DEV).manual_seed(seed)
    got = torch.empty(8, dtype=torch.int64, device=DEV).random_(0, 2**32, generator=g).tolist()
    expected = _philox([0, 0, 0, 0], [seed & 0xFFFFFFFF, seed >> 32]) + _philox([1, 0, 0, 0], [seed & 0xFFFFFFFF, seed >> 32])
    assert got == expected


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_uniform_statistics(dtype):
    x = torch.empty(N, dtype=dtype, device=DEV).uniform_(-2, 3)
    h = _host(x)
    assert h.min() >= -2 and h.max() < 3 + (0.02 if dtype in (torch.float16, torch.bfloat16) else 0)
    assert abs(h.mean() - 0.5) < 0.02
    assert abs(h.std() - 5 / math.sqrt(12)) < 0.02
    # all parts of the range are hit (no stuck bits)
    hist = torch.histc(h.float(), bins=10, min=-2, max=3)
    assert hist.min() > N / 10 * 0.9


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_normal_statistics(dtype):
    x = torch.empty(N, dtype=dtype, device=DEV).normal_(1.5, 2.0)
    h = _host(x)
    assert abs(h.mean() - 1.5) < 0.03
    assert abs(h.std() - 2.0) < 0.03
    assert abs(((h - 1.5) / 2).pow(3).mean()) < 0.05       # symmetric
    assert abs(((h - 1.5) / 2).pow(4).mean() - 3) < 0.1     # normal kurtosis
    assert torch.isfinite(h).all()


def test_randn_rand_randint_factories():
    assert abs(_host(torch.randn(N, device=DEV)).std() - 1) < 0.02
    r = _host(torch.rand(N, device=DEV))
    assert 0 <= r.min() and r.max() < 1
    i = torch.randint(3, 9, (N,), device=DEV)
    assert i.dtype == torch.int64
    assert set(i.cpu().unique().tolist()) == set(range(3, 9))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.int64, torch.uint8, torch.bool])
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli_scalar(dtype, p):
    x = torch.empty(N, dtype=dtype, device=DEV).bernoulli_(p)
    h = _host(x)
    assert set(h.unique().tolist()) <= {0.0, 1.0}
    assert abs(h.mean() - p) < 0.01


def test_bernoulli_tensor_and_functional():
    p = torch.linspace(0, 1, 5).repeat(N // 5).to(DEV)
    x = torch.bernoulli(p)
    means = _host(x).view(-1, 5).mean(0)
    torch.testing.assert_close(means, torch.linspace(0, 1, 5, dtype=torch.float64), atol=0.01, rtol=0)
    # broadcast probabilities into bernoulli_ and a float64 probability tensor
    y = torch.empty(N // 10, 10, device=DEV).bernoulli_(torch.full((10,), 0.25, dtype=torch.float64, device=DEV)
                                                         if HAS_FP64 else torch.full((10,), 0.25, device=DEV))
    assert abs(_host(y).mean() - 0.25) < 0.01
    out = torch.empty(N, device=DEV)
    torch.bernoulli(p, out=out)
    assert abs(_host(out).mean() - 0.5) < 0.01


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\]"):
        torch.empty(3, device=DEV).bernoulli_(1.5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.float32])
def test_random_forms(dtype):
    a = torch.empty(N, dtype=dtype, device=DEV).random_(-3 if dtype != torch.uint8 else 2, 7)
    h = a.cpu()
    lo = -3 if dtype != torch.uint8 else 2
    assert set(h.unique().tolist()) == set(range(lo, 7))
    b = torch.empty(N, dtype=dtype, device=DEV).random_(5)
    assert set(b.cpu().unique().tolist()) == set(range(5))
    c = torch.empty(N, dtype=dtype, device=DEV).random_()
    hc = c.cpu().double()
    maxval = {torch.float32: 2**24, torch.int64: 2**63 - 1, torch.int32: 2**31 - 1, torch.int16: 2**15 - 1,
              torch.int8: 127, torch.uint8: 255}[dtype]
    assert hc.min() >= 0 and hc.max() <= maxval
    assert hc.mean() > maxval * 0.45


def test_random_wide_ranges():
    x = torch.empty(N, dtype=torch.int64, device=DEV).random_(-(2**40), 2**40)
    h = x.cpu()
    assert h.min() >= -(2**40) and h.max() < 2**40 and h.double().std() > 2**39
    full = torch.empty(N, dtype=torch.int64, device=DEV).random_(-(2**63), None)
    hf = full.cpu()
    assert (hf < 0).any() and (hf > 0).any()
    b = torch.empty(1000, dtype=torch.bool, device=DEV).random_()
    assert 300 < b.cpu().sum().item() < 700
    with pytest.raises(RuntimeError, match="from"):
        torch.empty(3, dtype=torch.int64, device=DEV).random_(5, 2)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_exponential(dtype):
    x = _host(torch.empty(N, dtype=dtype, device=DEV).exponential_(2.0))
    assert x.min() >= 0 and torch.isfinite(x).all()
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.std() - 0.5) < 0.015
    with pytest.raises(RuntimeError, match="lambda"):
        torch.empty(3, device=DEV).exponential_(-1)


def test_same_seed_same_numbers_consecutive_calls_differ():
    torch.manual_seed(123)
    a1, a2 = torch.rand(1000, device=DEV).cpu(), torch.rand(1000, device=DEV).cpu()
    torch.opencl.manual_seed(123)
    b1, b2 = torch.rand(1000, device=DEV).cpu(), torch.rand(1000, device=DEV).cpu()
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, a2)
    # a call of n elements does not overlap the next: no value repeats across calls
    assert len(set(a1.tolist()) & set(a2.tolist())) < 5
    torch.manual_seed(124)
    assert not torch.equal(torch.rand(1000, device=DEV).cpu(), a1)


def test_generator_state_round_trip():
    g = torch.Generator(device=DEV)
    g.manual_seed(7)
    torch.rand(10, device=DEV, generator=g)
    state = g.get_state()
    x = torch.randn(100, device=DEV, generator=g).cpu()
    y = torch.empty(100, device=DEV).bernoulli_(0.5, generator=g).cpu()
    g.set_state(state)
    assert torch.equal(torch.randn(100, device=DEV, generator=g).cpu(), x)
    assert torch.equal(torch.empty(100, device=DEV).bernoulli_(0.5, generator=g).cpu(), y)
    # the default generator's state through torch.opencl
    s = torch.opencl.get_rng_state()
    u = torch.rand(50, device=DEV).cpu()
    torch.opencl.set_rng_state(s)
    assert torch.equal(torch.rand(50, device=DEV).cpu(), u)
    # an explicit generator does not disturb the default one
    torch.manual_seed(1)
    d1 = torch.rand(5, device=DEV).cpu()
    torch.manual_seed(1)
    torch.rand(5, device=DEV, generator=torch.Generator(device=DEV).manual_seed(99))
    assert torch.equal(torch.rand(5, device=DEV).cpu(), d1)


def test_offset_advances_by_draws():
    g = torch.Generator(device=DEV).manual_seed(0)
    assert g.get_offset() == 0
    torch.rand(10, device=DEV, generator=g)          # 3 blocks of four 32-bit draws
    assert g.get_offset() == 12
    if HAS_FP64:
        torch.rand(10, device=DEV, generator=g, dtype=torch.float64)  # 64-bit uniforms: 5 blocks
        assert g.get_offset() == 32


@pytest.mark.parametrize("op", ["uniform", "normal", "bernoulli", "random", "exponential"])
def test_non_contiguous_outputs(op):
    base = torch.zeros(300, 400, device=DEV)
    view = base.t()[::2]                               # strided, half the rows of the transpose
    fill = {
        "uniform": lambda t: t.uniform_(1, 2),
        "normal": lambda t: t.normal_(5, 0.1),
        "bernoulli": lambda t: t.bernoulli_(1.0),
        "random": lambda t: t.random_(1, 3),
        "exponential": lambda t: t.exponential_(),
    }[op]
    fill(view)
    h = base.cpu()
    written = torch.zeros(400, 300, dtype=torch.bool)
    written[::2] = True
    written = written.t()
    assert (h[~written] == 0).all()
    assert (h[written] > 0).all()


def test_zero_size_and_zero_dim():
    torch.empty(0, device=DEV).uniform_()
    torch.empty(0, 3, device=DEV).normal_()
    x = torch.empty((), device=DEV).uniform_(2, 3)
    assert 2 <= x.item() < 3


def test_dropout_forward_backward_match_mask():
    torch.manual_seed(3)
    x = torch.randn(64, 128, device=DEV, requires_grad=True)
    y = F.dropout(x, p=0.4, training=True)
    grad = torch.randn(64, 128, device=DEV)
    y.backward(grad)
    hy, hx, hg = y.detach().cpu(), x.detach().cpu(), x.grad.cpu()
    kept = hy != 0
    assert abs(kept.double().mean() - 0.6) < 0.02
    torch.testing.assert_close(hy[kept], hx[kept] / 0.6)
    torch.testing.assert_close(hg, torch.where(kept, grad.cpu() / 0.6, torch.zeros(())))
    # the same seed gives the same mask
    torch.manual_seed(3)
    x2 = torch.randn(64, 128, device=DEV)
    assert torch.equal(F.dropout(x2, p=0.4).cpu() != 0, kept)


def test_native_dropout_op():
    x = torch.randn(1000, device=DEV)
    out, mask = torch.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool
    torch.testing.assert_close(out.cpu(), x.cpu() * mask.cpu() / 0.75)
    out, mask = torch.native_dropout(x, 0.25, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.cpu().all()
    out, mask = torch.native_dropout(x, 1.0, True)
    assert (out.cpu() == 0).all() and not mask.cpu().any()
    g = torch.randn(1000, device=DEV)
    torch.testing.assert_close(torch.ops.aten.native_dropout_backward(g, mask, 2.0).cpu(), torch.zeros(1000))
    if torch.float16 in FLOAT_TYPES:
        xh = torch.randn(1000, device=DEV, dtype=torch.float16)
        oh, mh = torch.native_dropout(xh, 0.5, True)
        torch.testing.assert_close(oh.cpu(), (xh.cpu().float() * mh.cpu() * 2).half())


def test_dropout_module_in_training_step():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)).to(DEV)
    torch.opencl.set_fallback_mode("silent")   # Linear/mean may still use the fallback on this branch
    out = model(torch.randn(16, 4, device=DEV)).sum()
    out.backward()
    assert model[0].weight.grad is not None
