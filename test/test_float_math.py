"""Float log, log2, log10, log1p, expm1, pow, sin, cos, tan, atan, asin and acos (kernels_cl/float_math.cl on PoCL's CPU
device, the driver's elsewhere) against CPU PyTorch in ulps over every kind of float: 2^20 random bit
patterns (subnormals, huge values, NaN), dense ranges where the functions lose digits (near 1 for the
logarithms, near 0 for log1p and expm1, near multiples of pi/2 for sin, cos and tan, all of [-1, 1] for
asin and acos), powers of two and
the special values; NaN, infinities and the sign of zero exactly. Also the functions built on them
(softplus, logsigmoid, BCE, ELU; randn's Box-Muller is test_random.py's) and torch.compile's code, and
float erf (ours on every device) with GELU. Contiguous and strided inputs: in the CPU class the contiguous kernel
of some of them is the vector form (test_pointwise_vectors.py), whose float16 functions are the driver's."""
import math
import os
import subprocess
import sys

import pytest
import torch
from torch.nn import functional as F

import torch_opencl  # noqa: F401

DEV = "opencl"
FUNCTIONS = {"log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p, "expm1": torch.expm1,
             "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "atan": torch.atan, "asin": torch.asin,
             "acos": torch.acos}
OWN = torch_opencl._C._device_properties(0)["own_float_math"]
# Bounds in ulps: ours measured within 1.5 (pow, sin, cos and tan within 0.5; Cephes' atan and asin 2.2 and
# 2.3); the driver's, the OpenCL C spec's.
ULPS = ({**{name: 2 for name in FUNCTIONS}, "atan": 2.5, "asin": 2.5} if OWN else
        {"log": 3, "log2": 3, "log10": 3, "log1p": 2, "expm1": 3, "sin": 4, "cos": 4, "tan": 5, "atan": 5,
         "asin": 4, "acos": 4})
POW_ULPS = 1 if OWN else 16


@pytest.fixture(autouse=True)
def native_only():
    torch.opencl.set_fallback_mode("error")
    yield
    torch.opencl.set_fallback_mode("warn")


def inputs() -> torch.Tensor:
    g = torch.Generator().manual_seed(20261125)
    bits = torch.randint(-(2**31), 2**31 - 1, (1 << 20,), generator=g, dtype=torch.int64).to(torch.int32)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 10.0, 100.0, 1000.0, math.inf, -math.inf, math.nan,
                            1e-45, -1e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 3.4028235e38, -3.4028235e38,
                            1e-8, -1e-8, 1e-30, -0.999999, -1 + 2**-24, -1 - 2**-23, 88.72, 88.73, -87.3, -103.9,
                            -104.0, 2**-24, -(2**-25)])
    return torch.cat([
        bits.view(torch.float32),
        special,
        torch.linspace(0.5, 2.0, 65537),                # log near 1
        torch.linspace(-0.75, 0.75, 65537),             # log1p and expm1 near 0
        torch.linspace(-1.0, 1.0, 131073),              # asin and acos
        torch.logspace(-30, 30, 4097, base=10.0) * torch.tensor([1.0, -1.0]).repeat(2049)[:4097],
        torch.exp2(torch.arange(-149, 128, dtype=torch.float32)),  # every power of two
        (torch.arange(1, 65537, dtype=torch.float64) * (math.pi / 2)).float(),  # nearest floats to k pi/2
        torch.randn(65536, generator=g) * 40,
    ])


def assert_within_ulps(got: torch.Tensor, x, fn, name: str, bound=None) -> None:
    """got = fn(*x) on the device: the special values as CPU's, the rest within `bound` ulps of the exact value."""
    x = x if isinstance(x, tuple) else (x,)
    bound = ULPS[name] if bound is None else bound
    want = fn(*x)  # CPU float: the special values' answers
    exact = fn(*[t.double() for t in x])  # the value to measure ulps from
    nan = torch.isnan(want)
    where = lambda mask: [tuple(t[mask][:5].tolist()) for t in x]  # noqa: E731
    assert torch.equal(torch.isnan(got), nan), f"{name}: NaN where CPU gives none (or none where it does) " \
        f"at {where(torch.isnan(got) != nan)}"
    inf = torch.isinf(want)
    assert torch.equal(got[inf], want[inf]), f"{name}: infinities differ at {where(inf & (got != want))}"
    # Exact zeros (CPU's vectorised log1p flushes subnormal results to zero: those are measured in ulps).
    zero = exact == 0
    assert torch.equal(torch.signbit(got[zero]), torch.signbit(want[zero])), f"{name}: the sign of a zero differs"
    # Exact values beyond float's range, rounded to an infinity by CPU too, are checked above.
    finite = ~nan & ~inf & exact.abs().le(torch.finfo(torch.float32).max)
    # An ulp of the float nearest the exact value (the smallest normal's for subnormal results).
    ulp = torch.finfo(torch.float32).eps * exact[finite].abs().clamp_min(torch.finfo(torch.float32).tiny)
    errors = (got[finite].double() - exact[finite]).abs() / ulp
    worst = int(errors.argmax())
    args = ", ".join(repr(t[finite][worst].item()) for t in x)
    assert errors[worst] <= bound, (f"{name}({args}) = {got[finite][worst].item()!r} on opencl, "
                                    f"{exact[finite][worst].item()!r} exactly: {errors[worst].item():.2f} ulps "
                                    f"(at most {bound})")


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_float_function_within_ulps_of_exact(name):
    x = inputs()
    fn = FUNCTIONS[name]
    assert_within_ulps(fn(x.to(DEV)).cpu(), x, fn, name)
    # A strided input takes the per-element kernels: where the contiguous one is the vector form
    # (kernel_forms' pointwise_vectors: the logarithms and expm1 as the driver's float16 functions), this is
    # where the scalar functions above run.
    strided = torch.stack([x, x], 1).to(DEV)[:, 0]
    assert not strided.is_contiguous()
    assert_within_ulps(fn(strided).cpu(), x, fn, name)


def test_erf_within_ulps_of_exact():
    """Float erf is ours on every device (pointwise_functions.cl's erf_of: the drivers' erf is a scalar call
    on PoCL), eager and compiled: within 2 ulps (measured 1.2), GELU's forward and backward built on it."""
    x = inputs()
    assert_within_ulps(torch.erf(x.to(DEV)).cpu(), x, torch.erf, "erf", 2)
    near = torch.linspace(-5, 5, 1 << 18)
    compiled = torch.compile(torch.erf, dynamic=False)(near.to(DEV)).cpu()
    assert_within_ulps(compiled, near, torch.erf, "compiled erf", 2)
    # GELU against the exact (double) values: its 1 + erf cancels for large negative x, so the bound is
    # absolute (measured 4.4e-7; CPU's own float GELU, whose erf is a 1.5e-7 approximation, is 1.2e-6 off).
    ones = torch.ones_like(near)
    torch.testing.assert_close(F.gelu(near.to(DEV)).cpu().double(), F.gelu(near.double()), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.ops.aten.gelu_backward(ones.to(DEV), near.to(DEV)).cpu().double(),
                               torch.ops.aten.gelu_backward(ones.double(), near.double()), rtol=1e-5, atol=1e-6)


def pow_inputs():
    g = torch.Generator().manual_seed(7)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1.5, -1.5, math.inf, -math.inf,
                            math.nan, 1e-40, -1e-40, 1e30, 0.999, 1.001, 2.0**24, 2.0**25 + 2, 7.0])
    base, exponent = torch.meshgrid(special, special, indexing="ij")
    n = 1 << 18
    a = torch.cat([base.flatten(), torch.rand(n, generator=g) * 10, torch.randn(n, generator=g) * 3,
                   torch.rand(n, generator=g) * 2])
    b = torch.cat([exponent.flatten(), torch.randn(n, generator=g) * 3,
                   torch.randint(-5, 6, (n,), generator=g).float(), torch.randn(n, generator=g) * 60])
    return a, b


def test_pow_within_ulps_of_exact():
    a, b = pow_inputs()
    assert_within_ulps(torch.pow(a.to(DEV), b.to(DEV)).cpu(), (a, b), torch.pow, "pow", POW_ULPS)


@pytest.mark.parametrize("exponent", [1.5, -0.75, 2.5, 1 / 3, -7.0, 0.1])
def test_pow_scalar_exponent_within_ulps(exponent):
    a = pow_inputs()[0]
    # A float tensor's power is taken to the exponent rounded to float (on CPU too): the exact value's as well.
    exponent = torch.tensor(exponent, dtype=torch.float32).item()
    fn = lambda t: torch.pow(t, exponent)  # noqa: E731
    assert_within_ulps(fn(a.to(DEV)).cpu(), a, fn, f"pow(x, {exponent})", POW_ULPS)


def test_powers_of_two_have_exact_log2():
    x = torch.exp2(torch.arange(-149, 128, dtype=torch.float32))
    assert torch.equal(torch.log2(x.to(DEV)).cpu(), torch.arange(-149, 128, dtype=torch.float32))


def test_functions_built_on_log_and_expm1():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4096, generator=g) * 20
    x[:4] = torch.tensor([0.0, -0.0, math.inf, -math.inf])
    target = torch.rand(4096, generator=g)
    p = torch.sigmoid(torch.randn(4096, generator=g) * 4)
    cases = [
        (F.softplus, (x,)), (F.logsigmoid, (x,)), (F.elu, (x,)), (F.selu, (x,)), (F.celu, (x,)), (F.mish, (x,)),
        (lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), (p, target)),
        (lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"), (x, target)),
        (torch.special.xlogy, (target, p)), (torch.logaddexp, (x, x.flip(0))),
    ]
    for fn, args in cases:
        want = fn(*args)
        got = fn(*[a.to(DEV) for a in args]).cpu()
        torch.testing.assert_close(got, want, rtol=1.3e-6, atol=1e-6, equal_nan=True)


def test_double_keeps_full_precision():
    if not torch_opencl._C._device_properties(0)["fp64"]:
        pytest.skip("the device has no fp64")
    x = torch.linspace(0.5, 2.0, 10001, dtype=torch.float64)  # asin and acos: NaN above 1, as CPU's
    for fn in FUNCTIONS.values():
        torch.testing.assert_close(fn(x.to(DEV)).cpu(), fn(x), rtol=1e-14, atol=1e-15, equal_nan=True)


def test_compiled_graph_takes_the_same_functions():
    x = torch.cat([torch.linspace(-0.9, 3.0, 4001), torch.tensor([0.0, -0.0, math.inf, math.nan, -1.0, -2.0])])
    every = lambda t: torch.stack([f(t) for f in FUNCTIONS.values()] + [t.pow(1.7), t.abs().pow(t)])  # noqa: E731
    torch.testing.assert_close(torch.compile(every)(x.to(DEV)).cpu(), every(x), rtol=1.3e-6, atol=1e-6, equal_nan=True)


def test_own_math_is_the_choice_on_pocl_cpu_devices_and_env_overrides_it():
    props = torch_opencl._C._device_properties(0)
    pocl_cpu = props["type"] == "cpu" and "Portable Computing Language" in props["platform"]
    expected = {"1": True, "0": False}.get(os.environ.get("TORCH_OPENCL_OWN_FLOAT_MATH", ""), pocl_cpu)
    assert props["own_float_math"] is expected
    # The other choice, in a process of its own: the same answers within the same bound.
    code = ("import torch, torch_opencl, sys; sys.path.insert(0, %r); import test_float_math as t; "
            "p = torch_opencl._C._device_properties(0)['own_float_math']; x = t.inputs(); "
            "[t.assert_within_ulps(f(x.to('opencl')).cpu(), x, f, n) for n, f in t.FUNCTIONS.items()]; "
            "a, b = t.pow_inputs(); t.assert_within_ulps(torch.pow(a.to('opencl'), b.to('opencl')).cpu(), (a, b), "
            "torch.pow, 'pow', t.POW_ULPS); print(p)"
            % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TORCH_OPENCL_OWN_FLOAT_MATH="0" if expected else "1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == str(not expected)


def test_bad_env_value_is_refused_with_the_choices():
    code = "import torch, torch_opencl; print((torch.ones(3, device='opencl') + 1).cpu())"
    env = dict(os.environ, TORCH_OPENCL_OWN_FLOAT_MATH="yes")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0
    assert "TORCH_OPENCL_OWN_FLOAT_MATH='yes'" in done.stderr and "use 1 (on), 0 (off)" in done.stderr
