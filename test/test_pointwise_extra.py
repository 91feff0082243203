"""The pointwise extras against CPU: abs, where, masked_fill, isnan/isinf/isfinite,
nan_to_num, logical ops, clamp with tensor bounds, pow with a scalar base, sgn,
signbit, copysign, heaviside, xlogy, remainder with a scalar dividend, hardtanh,
hardswish, relu (with gradients). All run with the fallback refusing."""
import pytest
import torch
from torch.nn import functional as F

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
try:
    torch.zeros(1, dtype=torch.float64, device=DEV) + 1
    HAS_FP64 = True
except RuntimeError:
    HAS_FP64 = False
FLOATS = [torch.float32] + ([torch.float64] if HAS_FP64 else [])


@pytest.fixture(autouse=True)
def native_only():
    torch.opencl.set_fallback_mode("error")
    yield
    torch.opencl.set_fallback_mode("warn")


def _special(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=dtype) * 3
        flat = x.view(-1)
        if flat.numel() >= 6:
            flat[:6] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 3.0], dtype=dtype)
        return x
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def _same(cpu_result, dev_result):
    torch.testing.assert_close(dev_result.cpu(), cpu_result, equal_nan=True, rtol=1e-5, atol=1e-6)


def _check(fn, *inputs):
    """fn over CPU inputs vs fn over the same inputs on the device (contiguous and transposed views)."""
    _same(fn(*inputs), fn(*[t.to(DEV) if isinstance(t, torch.Tensor) else t for t in inputs]))
    if all(not isinstance(t, torch.Tensor) or t.dim() == 2 for t in inputs):
        cpu_t = [t.t() if isinstance(t, torch.Tensor) else t for t in inputs]
        dev_t = [t.to(DEV).t() if isinstance(t, torch.Tensor) else t for t in inputs]
        _same(fn(*cpu_t), fn(*dev_t))


UNARY = {
    "abs": torch.abs,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "isfinite": torch.isfinite,
    "nan_to_num": torch.nan_to_num,
    "nan_to_num_args": lambda x: torch.nan_to_num(x, nan=1.5, posinf=7.0, neginf=-8.0),
    "logical_not": torch.logical_not,
    "sgn": torch.sgn,
    "signbit": torch.signbit,
    "relu": torch.relu,
    "hardtanh": F.hardtanh,
    "relu6": F.relu6,
    "hardswish": F.hardswish,
    "pow_scalar_base": lambda x: torch.pow(2.0, x),
    "pow_scalar_base_int": lambda x: torch.pow(3, x.abs().clamp(max=5)),
    "pow_one": lambda x: torch.pow(x, 1),  # exact forms (aten/native/pointwise_ops.cpp): NaN, inf, -0 kept
    "pow_zero": lambda x: torch.pow(x, 0),  # 1 for every base, NaN included
    "pow_one_float": lambda x: torch.pow(x, 1.0),
    "remainder_scalar_tensor": lambda x: torch.remainder(5.0, x),
}
FLOAT_ONLY = {"hardswish", "pow_scalar_base"}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_cpu(name, dtype):
    if name in FLOAT_ONLY and not dtype.is_floating_point:
        pytest.skip("floating point only")
    if name == "remainder_scalar_tensor" and not dtype.is_floating_point:
        _check(UNARY[name], _special((6, 5), dtype).clamp(min=1))
        return
    _check(UNARY[name], _special((6, 5), dtype))


def test_zero_size_and_zero_dim():
    for fn in (torch.abs, torch.isnan, torch.logical_not, torch.relu, torch.sgn):
        _same(fn(torch.empty(0, 3)), fn(torch.empty(0, 3, device=DEV)))
        _same(fn(torch.tensor(-2.5)), fn(torch.tensor(-2.5, device=DEV)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_logical_binary(dtype):
    a, b = _special((6, 5), dtype, 1), _special((5,), dtype, 2)
    for fn in (torch.logical_and, torch.logical_or, torch.logical_xor):
        _check(fn, a, b[None].expand(6, 5).contiguous())
        _same(fn(a, b), fn(a.to(DEV), b.to(DEV)))      # broadcasting
    out = torch.empty(6, 5, dtype=torch.float32, device=DEV)
    torch.logical_and(a.to(DEV), b.to(DEV), out=out)
    _same(torch.logical_and(a, b).float(), out)
    m = a.to(DEV).clone()
    if dtype == torch.bool:
        m.logical_not_()
        _same(a.logical_not(), m)


def test_where():
    cond = torch.randn(6, 5) > 0
    x, y = torch.randn(6, 5), torch.randn(5)
    _same(torch.where(cond, x, y), torch.where(cond.to(DEV), x.to(DEV), y.to(DEV)))
    _same(torch.where(cond, x, 0.0), torch.where(cond.to(DEV), x.to(DEV), 0.0))
    _same(torch.where(cond, 2, x), torch.where(cond.to(DEV), 2, x.to(DEV)))
    xi = torch.randint(0, 9, (6, 5))
    _same(torch.where(cond, xi, x), torch.where(cond.to(DEV), xi.to(DEV), x.to(DEV)))   # promotion
    _check(lambda c, a, b: torch.where(c, a, b), cond, x, x * 2)
    out = torch.empty(6, 5, device=DEV)
    torch.where(cond.to(DEV), x.to(DEV), y.to(DEV), out=out)
    _same(torch.where(cond, x, y), out)
    with pytest.raises(RuntimeError, match="boolean"):
        torch.where(torch.ones(3, device=DEV), torch.ones(3, device=DEV), torch.ones(3, device=DEV))
    # gradient through where
    xg = x.to(DEV).requires_grad_()
    torch.where(cond.to(DEV), xg, torch.zeros((), device=DEV)).backward(torch.ones(6, 5, device=DEV))
    _same(cond.float(), xg.grad)


@pytest.mark.parametrize("dtype", FLOATS + [torch.bool])
def test_masked_fill(dtype):
    x = _special((6, 5), dtype)
    mask = torch.randn(5) > 0
    value = True if dtype == torch.bool else 7
    _same(x.masked_fill(mask, value), x.to(DEV).masked_fill(mask.to(DEV), value))
    _same(x.masked_fill(mask, torch.tensor(value)), x.to(DEV).masked_fill(mask.to(DEV), torch.tensor(value)))
    # a 0-d device value stays on the device
    dv = torch.tensor(value, device=DEV)
    _same(x.masked_fill(mask, value), x.to(DEV).masked_fill(mask.to(DEV), dv))
    # in place on a non-contiguous view
    base_c, base_d = x.clone(), x.to(DEV)
    base_c.t().masked_fill_(mask[:5, None].expand(5, 6).contiguous(), value)
    base_d.t().masked_fill_(mask[:5, None].expand(5, 6).contiguous().to(DEV), value)
    _same(base_c, base_d)
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.to(DEV).masked_fill(torch.ones(6, 5, device=DEV), value)
    with pytest.raises(RuntimeError, match="0-dimensional"):
        x.to(DEV).masked_fill(mask.to(DEV), torch.ones(2, device=DEV))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
def test_clamp_tensor_bounds(dtype):
    x = _special((6, 5), dtype)
    lo = _special((5,), dtype, 3) - 1
    hi = lo + 3
    if dtype.is_floating_point:
        lo[0] = float("nan")
    for fn in (lambda a, l, h: torch.clamp(a, l, h), lambda a, l, h: torch.clamp(a, min=l),
               lambda a, l, h: torch.clamp(a, max=h), lambda a, l, h: torch.clamp_min(a, l),
               lambda a, l, h: torch.clamp_max(a, h)):
        _same(fn(x, lo, hi), fn(x.to(DEV), lo.to(DEV), hi.to(DEV)))
    d = x.to(DEV)
    d.clamp_(lo.to(DEV), hi.to(DEV))
    _same(x.clamp(lo, hi), d)
    out = torch.empty(0, dtype=dtype, device=DEV)
    torch.clamp(x.to(DEV), lo.to(DEV), hi.to(DEV), out=out)
    _same(x.clamp(lo, hi), out)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_float_ops(dtype):
    a, b = _special((6, 5), dtype, 4), _special((6, 5), dtype, 5)
    _check(torch.copysign, a, b)
    _check(torch.heaviside, a, b)
    _check(torch.xlogy, a.abs(), b.abs())
    _check(torch.xlogy, a, b)
    _same(torch.copysign(a, -1.0), torch.copysign(a.to(DEV), -1.0))
    ia = _special((6, 5), torch.int32)
    _same(torch.copysign(ia, b), torch.copysign(ia.to(DEV), b.to(DEV)))


@pytest.mark.parametrize("name", ["hardtanh", "hardswish", "relu", "mish", "relu6"])
def test_activation_gradients(name):
    fn = {"hardtanh": lambda x: F.hardtanh(x, -1.5, 2.0), "hardswish": F.hardswish, "relu": torch.relu,
          "mish": F.mish, "relu6": F.relu6}[name]
    x = torch.tensor([-4.0, -3.0, -2.0, -1.5, -0.5, 0.0, 0.5, 2.0, 3.0, 4.0, 6.0, 7.0])
    g = torch.linspace(-1, 1, x.numel())
    xc = x.clone().requires_grad_()
    fn(xc).backward(g)
    xd = x.to(DEV).requires_grad_()
    yd = fn(xd)
    yd.backward(g.to(DEV))
    _same(fn(x), yd.detach())
    _same(xc.grad, xd.grad)


def test_in_place_activations():
    x = torch.randn(6, 5)
    for fn_ in (torch.relu_, F.hardtanh_, lambda t: F.hardswish(t, inplace=True)):
        c, d = x.clone(), x.to(DEV)
        fn_(c)
        fn_(d)
        _same(c, d)
    with pytest.raises(RuntimeError, match="Bool"):
        torch.relu(torch.ones(3, dtype=torch.bool, device=DEV))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.float16, torch.bfloat16])
def test_isneginf_isposinf(dtype):
    x = _special((5, 7), dtype)
    _check(torch.isneginf, x)
    _check(torch.isposinf, x)
    out = torch.empty(5, 7, dtype=torch.bool, device=DEV)
    torch.isneginf(x.to(DEV), out=out)
    _same(torch.isneginf(x), out)


@pytest.mark.parametrize("args", [(10,), (2, 11), (0, 1, 0.1), (5, -3, -1.5), (-1e6, 1e6, 12345.678), (3, 3)],
                         ids=["n", "start_end", "float_step", "negative_step", "large", "empty"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32] + ([torch.float64] if HAS_FP64 else []))
def test_arange(args, dtype):
    if not dtype.is_floating_point and any(isinstance(a, float) and a != int(a) for a in args):
        pytest.skip("fractional bounds with an integer dtype")
    want = torch.arange(*args, dtype=dtype)
    got = torch.arange(*args, dtype=dtype, device=DEV)
    assert got.dtype == want.dtype and got.shape == want.shape
    # CPU's vectorised float32 path adds i * step in float: near zero it cancels to an error
    # of about one float32 ulp of the range's magnitude, which is the tolerance here.
    scale = want.abs().max().item() if want.numel() else 0.0
    torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=2e-7 * scale + 1e-12)


def test_arange_out_and_errors():
    out = torch.empty(3, 4, device=DEV)  # the right numel keeps its shape, as on CPU
    torch.arange(12, out=out)
    _same(torch.arange(12, out=torch.empty(3, 4)), out)
    out = torch.empty(2, device=DEV)
    torch.arange(0, 5, out=out)  # resized
    assert out.shape == (5,)
    for bad in [(0, 5, 0), (5, 0, 1), (0, float("inf"))]:
        with pytest.raises((RuntimeError, ValueError)) as cpu_err:
            torch.arange(*bad)
        with pytest.raises((RuntimeError, ValueError)) as dev_err:
            torch.arange(*bad, device=DEV)
        assert type(dev_err.value) is type(cpu_err.value) and str(dev_err.value) == str(cpu_err.value)
