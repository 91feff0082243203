"""The boxed CPU fallback: in-place, out=, TensorList, Tensor?[], write-back, views,
generators, devices, modes and counters. Results are compared with CPU PyTorch."""
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torch_opencl  # noqa: F401

DEV = "opencl"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


pytestmark = pytest.mark.usefixtures("silent_fallback")


@pytest.fixture
def restore_mode():
    previous = torch.opencl.fallback_mode()
    yield
    torch.opencl.set_fallback_mode(previous)


def cpu_data(n=12, seed=0, shape=None):
    g = torch.Generator().manual_seed(seed)
    if shape is not None:
        return torch.randn(shape, generator=g, dtype=torch.float32)
    return torch.randn(n, generator=g, dtype=torch.float32)


def same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# --- In-place, out=, TensorList, Tensor?[] ---------------------------------------------


# The operators in these tests have no opencl kernel (igamma, geqrf, mvlgamma, modified_bessel_i0/i1,
# fractional_max_pool2d, modified_bessel_k0): each test asserts the fallback served it, so native kernels cannot hide
# its paths. (hypot, lgamma, erfcx, cdist, kthvalue, histc and grid_sampler_3d served here until they went native.)
def positive(t):
    return t.abs() + 0.5
def _served_by_fallback(name):
    return torch.opencl.fallback_stats().get(name, 0) > 0


@pytest.fixture(autouse=True)
def _fresh_fallback_counts():
    torch.opencl.reset_fallback_stats()


def test_inplace_op_mutates_and_returns_self():
    a, b = positive(cpu_data(seed=1)), positive(cpu_data(seed=2))
    x = a.to(DEV)
    ret = x.igamma_(b.to(DEV))
    assert _served_by_fallback("aten::igamma.out")  # in-place structured ops arrive as out=self
    assert ret is x
    assert x.device.type == DEV
    torch.testing.assert_close(x.cpu(), a.clone().igamma_(b))


def test_out_argument_is_written_and_returned():
    a, b = positive(cpu_data(seed=1)), positive(cpu_data(seed=2))
    o = torch.empty(12, device=DEV)
    ret = torch.igamma(a.to(DEV), b.to(DEV), out=o)
    assert _served_by_fallback("aten::igamma.out")
    assert ret is o
    torch.testing.assert_close(o.cpu(), torch.igamma(a, b))


def test_out_argument_is_resized():
    a, b = cpu_data(shape=(3, 4), seed=1).abs(), cpu_data(shape=(3, 4), seed=2).abs()
    o = torch.empty(0, device=DEV)
    torch.igamma(a.to(DEV), b.to(DEV), out=o)
    assert _served_by_fallback("aten::igamma.out")
    assert o.shape == (3, 4)
    torch.testing.assert_close(o.cpu(), torch.igamma(a, b))


def test_multiple_out_arguments():
    a = cpu_data(shape=(3, 4))
    reflectors, tau = torch.empty(0, device=DEV), torch.empty(0, device=DEV)
    ret = torch.geqrf(a.to(DEV), out=(reflectors, tau))
    assert _served_by_fallback("aten::geqrf.a")
    assert ret[0] is reflectors and ret[1] is tau
    ref = torch.geqrf(a)
    torch.testing.assert_close(reflectors.cpu(), ref[0])
    torch.testing.assert_close(tau.cpu(), ref[1])


# The list-taking operators below have no opencl kernel either.
def test_tensorlist_inputs():
    x = cpu_data(shape=(10, 2), seed=1).abs() % 1
    bins = [torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0.0, 0.25, 0.5, 1.0])]
    got = torch.histogramdd(x.to(DEV), bins=[b.to(DEV) for b in bins])
    want = torch.histogramdd(x, bins=bins)
    assert _served_by_fallback("aten::_histogramdd_from_bin_tensors")
    assert got.hist.device.type == DEV
    torch.testing.assert_close(got.hist.cpu(), want.hist)


def test_tensorlist_mutation_is_written_back():
    # Fused Adagrad (no opencl kernel) mutates three lists: the parameters, the sums and the steps.
    torch.opencl.reset_fallback_stats()
    params = [cpu_data(3, seed=1), cpu_data(5, seed=2)]
    grads = [cpu_data(3, seed=3), cpu_data(5, seed=4)]
    sums = [torch.zeros(3), torch.zeros(5)]
    steps = [torch.zeros(()), torch.zeros(())]
    on_dev = [[t.to(DEV) for t in ts] for ts in (params, grads, sums, steps)]
    settings = dict(lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False)
    torch._fused_adagrad_(*on_dev, **settings)
    assert _served_by_fallback("aten::_fused_adagrad_")
    torch._fused_adagrad_(params, grads, sums, steps, **settings)
    for got, want in zip(on_dev, (params, grads, sums, steps)):
        torch.testing.assert_close([t.cpu() for t in got], want)


def test_tensorlist_outputs():
    torch.opencl.reset_fallback_stats()
    x = cpu_data(shape=(10, 2), seed=3)
    res = torch.ops.aten._histogramdd_bin_edges(x.to(DEV), [2, 3])
    assert _served_by_fallback("aten::_histogramdd_bin_edges")
    assert [r.device.type for r in res] == [DEV, DEV]
    torch.testing.assert_close([r.cpu() for r in res], list(torch.ops.aten._histogramdd_bin_edges(x, [2, 3])))


def test_index_put_with_tensor_indices():
    base = cpu_data(10)
    idx = torch.tensor([1, 3, 7])
    vals = torch.tensor([10.0, 20.0, 30.0])
    x = base.to(DEV)
    x[idx.to(DEV)] = vals.to(DEV)
    ref = base.clone()
    ref[idx] = vals
    torch.testing.assert_close(x.cpu(), ref)


def test_index_put_accumulate():
    x = torch.zeros(5, device=DEV)
    idx = torch.tensor([0, 0, 2], device=DEV)
    x.index_put_((idx,), torch.ones(3, device=DEV), accumulate=True)
    torch.testing.assert_close(x.cpu(), torch.tensor([2.0, 0.0, 1.0, 0.0, 0.0]))


def test_boolean_mask_indexing():
    base = cpu_data(shape=(3, 4))
    x = base.to(DEV)
    torch.testing.assert_close(x[x > 0].cpu(), base[base > 0])
    x[x < 0] = 0.0
    torch.testing.assert_close(x.cpu(), base.clamp(min=0))


def test_cpu_index_tensors_are_accepted_for_indexing():
    # As on CUDA, indexing an opencl tensor with CPU index tensors works.
    base = cpu_data(8)
    x = base.to(DEV)
    idx = torch.tensor([5, 0, 2])
    torch.testing.assert_close(x[idx].cpu(), base[idx])
    torch.testing.assert_close(x[base > 0].cpu(), base[base > 0])
    x[idx] = torch.tensor([1.0, 2.0, 3.0], device=DEV)
    ref = base.clone()
    ref[idx] = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(x.cpu(), ref)


def test_multiple_returns():
    a = cpu_data(shape=(3, 4))
    before = torch.opencl.fallback_stats().get("aten::geqrf", 0)
    reflectors, tau = torch.geqrf(a.to(DEV))
    assert torch.opencl.fallback_stats().get("aten::geqrf", 0) == before + 1, "pick an op that falls back"
    ref = torch.geqrf(a)
    assert reflectors.device.type == DEV and tau.device.type == DEV
    torch.testing.assert_close(reflectors.cpu(), ref[0])
    torch.testing.assert_close(tau.cpu(), ref[1])


# --- Write-back of mutated inputs --------------------------------------------------


def test_inplace_on_noncontiguous_view_shows_in_base():
    base = positive(cpu_data(shape=(4, 4)))
    x = base.to(DEV)
    col = x.t()[1]  # column 1 of x: stride 4
    assert not col.is_contiguous()
    col.mvlgamma_(1)
    assert _served_by_fallback("aten::mvlgamma.out")
    ref = base.clone()
    ref.t()[1].mvlgamma_(1)
    torch.testing.assert_close(x.cpu(), ref)


def test_inplace_on_offset_slice_leaves_rest_untouched():
    base = positive(cpu_data(10))
    x = base.to(DEV)
    x[2:8:2].mvlgamma_(1)
    assert _served_by_fallback("aten::mvlgamma.out")
    ref = base.clone()
    ref[2:8:2].mvlgamma_(1)
    torch.testing.assert_close(x.cpu(), ref)


def test_out_into_a_view_of_a_larger_tensor():
    a, b = positive(cpu_data(4, seed=1)), positive(cpu_data(4, seed=2))
    big = torch.zeros(3, 4, device=DEV)
    torch.igamma(a.to(DEV), b.to(DEV), out=big[1])
    assert _served_by_fallback("aten::igamma.out")
    ref = torch.zeros(3, 4)
    ref[1] = torch.igamma(a, b)
    torch.testing.assert_close(big.cpu(), ref)


def test_same_tensor_as_input_and_output():
    a = cpu_data(6)
    x = a.to(DEV)
    torch.mul(x, x, out=x)
    torch.testing.assert_close(x.cpu(), a * a)


# --- Views ----------------------------------------------------------------------------


# Every aten view operator now has a native kernel, so a test-only view operator with CPU and Meta
# kernels (no opencl one) exercises how the fallback makes real views.
_view_lib = torch.library.Library("tocl_fallback_test", "DEF")
_view_lib.define("unfold_view(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)")
for _key in ("CPU", "Meta"):
    _view_lib.impl("unfold_view", lambda self, dim, size, step: self.unfold(dim, size, step), _key)
unfold_view = torch.ops.tocl_fallback_test.unfold_view


def test_view_op_is_a_real_view():
    base = torch.arange(6.0)
    x = base.to(DEV)
    torch.opencl.reset_fallback_stats()
    u = unfold_view(x, 0, 2, 1)
    assert torch.opencl.fallback_stats() == {"tocl_fallback_test::unfold_view": 1}
    torch.testing.assert_close(u.cpu(), base.unfold(0, 2, 1))
    assert u.stride() == base.unfold(0, 2, 1).stride()
    assert same_storage(u, x)
    u[0, 1] = 100.0  # element 1 of x
    assert x[1].item() == 100.0
    x[4] = -1.0
    assert u[3, 1].item() == -1.0 and u[4, 0].item() == -1.0


def test_view_of_a_view_with_storage_offset():
    base = torch.arange(20.0).reshape(4, 5)
    x = base.to(DEV)
    v = unfold_view(x[1:, 1:], 1, 2, 2)
    ref = base[1:, 1:].unfold(1, 2, 2)
    assert v.shape == ref.shape and v.stride() == ref.stride()
    assert v.storage_offset() == ref.storage_offset()
    torch.testing.assert_close(v.cpu(), ref)
    assert same_storage(v, x)


def test_autograd_through_the_fallback():
    base = cpu_data(24)
    w = base.clone().to(DEV).requires_grad_()
    samples = torch.tensor([[[0.3, 0.7]]])
    torch.opencl.reset_fallback_stats()
    # fractional max pooling's forward and its backward on the fallback (its random samples given)
    pool = lambda w, s: torch.nn.functional.fractional_max_pool2d(w.view(1, 1, 4, 6), 2, output_size=(2, 3),
                                                                  _random_samples=s)
    (pool(w, samples.to(DEV)).sin() * 2).sum().backward()
    # (structured operators reach the fallback as their out= forms)
    assert torch.opencl.fallback_stats() == {"aten::fractional_max_pool2d.output": 1,
                                             "aten::fractional_max_pool2d_backward.grad_input": 1}
    wc = base.clone().requires_grad_()
    (pool(wc, samples).sin() * 2).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), wc.grad)


# --- Random numbers: generators ----------------------------------------------------------


def test_generator_argument_is_reproducible():
    g = torch.Generator(device=DEV).manual_seed(0)
    a = torch.randn(5, device=DEV, generator=g)
    b = torch.randn(5, device=DEV, generator=g)
    assert a.device.type == DEV
    assert not torch.equal(a.cpu(), b.cpu()), "repeated calls must draw different numbers"
    g.manual_seed(0)
    torch.testing.assert_close(torch.randn(5, device=DEV, generator=g).cpu(), a.cpu())
    g2 = torch.Generator(device=DEV).manual_seed(1)
    assert not torch.equal(torch.randn(5, device=DEV, generator=g2).cpu(), a.cpu())


def test_generator_offset_advances():
    g = torch.Generator(device=DEV).manual_seed(7)
    before = g.get_offset()
    torch.empty(8, device=DEV).uniform_(generator=g)
    assert g.get_offset() > before


def test_generator_state_replays():
    g = torch.Generator(device=DEV).manual_seed(3)
    torch.rand(4, device=DEV, generator=g)
    state = g.get_state()
    a = torch.rand(4, device=DEV, generator=g)
    g.set_state(state)
    torch.testing.assert_close(torch.rand(4, device=DEV, generator=g).cpu(), a.cpu())


def test_default_generator_follows_manual_seed():
    torch.manual_seed(123)
    a = torch.randn(6, device=DEV)
    b = torch.randn(6, device=DEV)
    torch.manual_seed(123)
    c = torch.randn(6, device=DEV)
    assert not torch.equal(a.cpu(), b.cpu())
    torch.testing.assert_close(c.cpu(), a.cpu())


@pytest.mark.parametrize(
    "draw",
    [
        lambda g: torch.randint(0, 1000, (16,), device=DEV, generator=g),
        lambda g: torch.bernoulli(torch.full((64,), 0.5, device=DEV), generator=g),
        lambda g: torch.multinomial(torch.ones(10, device=DEV), 5, generator=g),
        lambda g: torch.empty(16, device=DEV).exponential_(generator=g),
        lambda g: torch.randperm(10, device=DEV, generator=g),
    ],
    ids=["randint", "bernoulli", "multinomial", "exponential_", "randperm"],
)
def test_random_ops_with_generator(draw):
    g = torch.Generator(device=DEV).manual_seed(42)
    first = draw(g)
    assert first.device.type == DEV
    g.manual_seed(42)
    torch.testing.assert_close(draw(g).cpu(), first.cpu())


@pytest.mark.parametrize("draw", [
    lambda g: torch.randn(3, generator=g),
    lambda g: torch.rand(3, generator=g),
    lambda g: torch.randint(0, 5, (3,), generator=g),
    lambda g: torch.empty(3).bernoulli_(0.5, generator=g),
    lambda g: torch.empty(3).exponential_(generator=g),
    lambda g: torch.randperm(4, generator=g),
], ids=["randn", "rand", "randint", "bernoulli_", "exponential_", "randperm"])
def test_opencl_generator_with_cpu_tensors_is_an_error(draw):
    # A Generator takes part in dispatch, so these reach opencl kernels with CPU tensors.
    g = torch.Generator(device=DEV).manual_seed(0)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'opencl'"):
        draw(g)


def test_cpu_generator_with_opencl_tensors_is_an_error():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(RuntimeError, match="device type for generator but found 'cpu'"):
        torch.empty(3, device=DEV).normal_(generator=g)


def test_dropout():
    x = torch.ones(1000, device=DEV)
    y = torch.nn.functional.dropout(x, p=0.5, training=True)
    assert y.device.type == DEV
    yc = y.cpu()
    kept = yc != 0
    assert 300 < int(kept.sum()) < 700
    torch.testing.assert_close(yc[kept], torch.full((int(kept.sum()),), 2.0))
    torch.testing.assert_close(torch.nn.functional.dropout(x, p=0.5, training=False).cpu(), x.cpu())


def test_dropout_backward():
    x = torch.ones(100, device=DEV, requires_grad=True)
    y = torch.nn.functional.dropout(x, p=0.3)
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), y.detach().cpu())


# --- Device arguments, factories with no tensor argument -----------------------------


def test_randperm_on_opencl():
    p = torch.randperm(20, device=DEV)
    assert p.device.type == DEV and p.dtype == torch.int64
    assert sorted(p.cpu().tolist()) == list(range(20))


def test_arange_and_friends_on_opencl():
    for made, ref in [
        (torch.arange(2, 11, 3, device=DEV), torch.arange(2, 11, 3)),
        (torch.arange(5.0, device=DEV), torch.arange(5.0)),
        (torch.linspace(0, 1, 7, device=DEV), torch.linspace(0, 1, 7)),
        (torch.eye(3, device=DEV), torch.eye(3)),
        (torch.full((2, 3), 1.5, device=DEV), torch.full((2, 3), 1.5)),
        (torch.scalar_tensor(4.0, device=DEV), torch.scalar_tensor(4.0)),
    ]:
        assert made.device.type == DEV
        torch.testing.assert_close(made.cpu(), ref)


# --- Devices ------------------------------------------------------------------------


def test_two_devices_is_an_error():
    x = torch.ones(4, device=DEV)
    msg = "Expected all tensors to be on the same device, but found at least two devices, opencl:0 and cpu!"
    with pytest.raises(RuntimeError, match=msg):
        torch.atan2(x, torch.ones(4))
    with pytest.raises(RuntimeError, match=msg):
        torch.atan2(torch.ones(4), x)
    with pytest.raises(RuntimeError, match=msg):
        torch.cat([x, torch.ones(4)])
    with pytest.raises(RuntimeError, match=msg):
        torch.addcmul(x, x, torch.ones(4))


def test_failed_device_check_mutates_nothing_and_counts_nothing():
    x = torch.ones(4, device=DEV)
    torch.opencl.reset_fallback_stats()
    with pytest.raises(RuntimeError, match="two devices"):
        x.atan2_(torch.full((4,), 2.0))
    torch.testing.assert_close(x.cpu(), torch.ones(4))
    assert torch.opencl.fallback_stats() == {}


def test_cpu_scalar_tensors_mix_with_opencl():
    a = cpu_data(6)
    x = a.to(DEV)
    s = torch.tensor(2.5)
    for got, ref in [
        (torch.atan2(x, s), torch.atan2(a, s)),
        (torch.where(x > 0, x, torch.tensor(0.0)), torch.where(a > 0, a, torch.tensor(0.0))),
        (x.clone().masked_fill_(x > 0, torch.tensor(-1.0)), a.clone().masked_fill_(a > 0, torch.tensor(-1.0))),
    ]:
        assert got.device.type == DEV
        torch.testing.assert_close(got.cpu(), ref)


# --- Counters and modes --------------------------------------------------------------


def test_counters():
    x = torch.ones(3, device=DEV)
    torch.opencl.reset_fallback_stats()
    assert torch.opencl.fallback_stats() == {}
    torch.special.modified_bessel_i0(x)
    torch.special.modified_bessel_i0(x)
    stats = torch.opencl.fallback_stats()
    assert stats["aten::special_modified_bessel_i0.out"] == 2
    torch.opencl.reset_fallback_stats()
    assert "aten::special_modified_bessel_i0.out" not in torch.opencl.fallback_stats()


def test_counters_name_the_overload():
    torch.opencl.reset_fallback_stats()
    x = torch.ones(3, device=DEV)
    torch.geqrf(torch.eye(3, device=DEV))
    torch.special.modified_bessel_i0(x, out=torch.empty(3, device=DEV))
    stats = torch.opencl.fallback_stats()
    assert stats == {"aten::geqrf": 1, "aten::special_modified_bessel_i0.out": 1}, stats


def test_error_mode_in_process(restore_mode):
    x = torch.ones(3, device=DEV)
    torch.opencl.set_fallback_mode("error")
    assert torch.opencl.fallback_mode() == "error"
    with pytest.raises(RuntimeError, match=r"aten::special_modified_bessel_i0\.out.*TORCH_OPENCL_FALLBACK=error"):
        torch.special.modified_bessel_i0(x)
    torch.opencl.set_fallback_mode("silent")
    torch.testing.assert_close(torch.special.modified_bessel_i0(x).cpu(), torch.special.modified_bessel_i0(torch.ones(3)))


def test_warn_mode_in_process_warns_once_per_operator(restore_mode):
    x = torch.ones(3, device=DEV)
    torch.opencl.set_fallback_mode("warn")  # also forgets which operators have warned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.special.modified_bessel_i0(x)
        torch.special.modified_bessel_i0(x)
        torch.special.modified_bessel_k0(x)
    texts = [str(w.message) for w in caught]
    assert sum("aten::special_modified_bessel_i0.out" in t for t in texts) == 1, texts
    assert sum("aten::special_modified_bessel_k0.out" in t for t in texts) == 1, texts


def test_silent_mode_in_process(restore_mode):
    x = torch.ones(3, device=DEV)
    torch.opencl.set_fallback_mode("silent")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.special.modified_bessel_i0(x)
    assert not [w for w in caught if "opencl kernel" in str(w.message)]


def test_bad_mode_is_rejected(restore_mode):
    with pytest.raises(RuntimeError, match="not a fallback mode"):
        torch.opencl.set_fallback_mode("loud")


SCRIPT = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("always")
    import torch, torch_opencl
    x = torch.ones(3, device="opencl")
    print("MODE", torch.opencl.fallback_mode())
    try:
        torch.special.modified_bessel_i0(x)
        torch.special.modified_bessel_i0(x)
        print("RAN")
    except RuntimeError as e:
        print("ERROR", e)
    print("COUNT", torch.opencl.fallback_stats().get("aten::special_modified_bessel_i0.out", 0))
    """
)


def run_with_env(value):
    env = dict(os.environ)
    env.pop("TORCH_OPENCL_FALLBACK", None)
    if value is not None:
        env["TORCH_OPENCL_FALLBACK"] = value
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("value", [None, "warn"])
def test_env_warn(value):
    p = run_with_env(value)
    assert p.returncode == 0, p.stderr
    assert "MODE warn" in p.stdout and "RAN" in p.stdout and "COUNT 2" in p.stdout
    assert p.stderr.count("'aten::special_modified_bessel_i0.out' has no opencl kernel") == 1, p.stderr


def test_env_silent():
    p = run_with_env("silent")
    assert p.returncode == 0, p.stderr
    assert "MODE silent" in p.stdout and "RAN" in p.stdout and "COUNT 2" in p.stdout
    assert "has no opencl kernel" not in p.stderr, p.stderr


def test_env_error():
    p = run_with_env("error")
    assert p.returncode == 0, p.stderr
    assert "MODE error" in p.stdout
    assert "ERROR" in p.stdout and "aten::special_modified_bessel_i0.out" in p.stdout and "RAN" not in p.stdout
    assert "COUNT 0" in p.stdout
