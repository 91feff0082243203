"""Special functions and the pointwise activations that came with them, natively against CPU PyTorch:
lgamma, digamma, polygamma, i0, special.i0e/i1/i1e/ndtri/log_ndtr/erfcx/entr/xlog1py, sinc, hypot,
nextafter, logit's gradient, hardshrink/softshrink and their gradient, glu and its gradient, prelu and
its gradient. float32 within 1e-5 relative (1e-6 absolute, for values that cancel to near 0), float64
within 1e-12; every call runs with the CPU fallback refusing (native_only).

Few distinct expressions per test (each expression and dtype is one program to compile on PoCL), many
values each: ordinary ones, 0 and -0, +-inf, NaN, poles, tiny and huge magnitudes."""
import math

import pytest
import torch
from torch.nn import functional as F

from _device_helpers import native_only

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
INF, NAN = math.inf, math.nan
# float32's 1e-6 absolute: near a zero of the function (lgamma at 1 and 2, digamma at 1.46, sinc at the
# integers) CPU's own float result is a cancellation of terms near 1, exact to about an ulp of those terms,
# not of the result.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-12)}


def same(got, want, **tol):
    assert got.device.type == "opencl"
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, **(tol or TOL.get(want.dtype, {})))


def values(dtype, lo=-12.0, hi=12.0):
    """Ordinary values on a grid that avoids landing exactly on integers, special values, and magnitudes
    from 1e-30 to 1e30 of both signs (float32 can hold all of them)."""
    grid = torch.linspace(lo, hi, 97, dtype=torch.float64)
    special = [0.0, -0.0, INF, -INF, NAN, 1.0, 2.0, 3.0, -1.0, -2.0, -7.0, 0.5, -0.5, -2.5, -0.25, 1.4616321,
               -2.4570247, 8.0, 8.5, -8.5, 10.0, 26.0, 26.7, -26.0, -26.7, -27.0, 6.1, -6.1, 50.0, 51.0, 88.0,
               90.0, 100.0, 700.0, 713.0, 5e7, 1e8, -1e8, 1e17, 2e17]
    mags = torch.logspace(-30, 30, 25, dtype=torch.float64)
    return torch.cat([grid, torch.tensor(special, dtype=torch.float64), mags, -mags]).to(dtype)


def unit_values(dtype):
    """Probabilities for ndtri: the interior, both tails down to 1e-30, the ends and beyond."""
    p = torch.cat([torch.linspace(0, 1, 41, dtype=torch.float64), torch.logspace(-30, -1, 30, dtype=torch.float64)])
    special = torch.tensor([0.0, -0.0, 1.0, -0.5, 1.5, INF, -INF, NAN, 0.13533528323661269189,
                            1 - 0.13533528323661269189, 0.5], dtype=torch.float64)
    return torch.cat([p, 1 - p, special]).to(dtype)


def no_long_zeta(x):
    """polygamma(n >= 2) of a negative non-integer x sums |x| terms on CPU (Cephes' zeta; ours folds them past
    65536, test_polygamma_of_large_negative_non_integers): keep CPU's reference to those few."""
    return x[~((x < -1000) & (x != x.trunc()))]


UNARY = {
    "lgamma": torch.lgamma,
    "digamma": torch.digamma,
    "polygamma_1": lambda x: torch.polygamma(1, x),
    "polygamma_2": lambda x: torch.polygamma(2, x),
    "polygamma_3": lambda x: torch.polygamma(3, x),
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "log_ndtr": torch.special.log_ndtr,
    "erfcx": torch.special.erfcx,
    "entr": torch.special.entr,
    "sinc": torch.sinc,
    "hardshrink": F.hardshrink,
    "softshrink": lambda x: F.softshrink(x, 2.0),
}


@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_functions_match_cpu(dtype):
    x = values(dtype)
    failures = []
    for name, fn in UNARY.items():
        arg = no_long_zeta(x) if name in ("polygamma_2", "polygamma_3") else x
        want = fn(arg)
        with native_only():
            got = fn(arg.to(DEV))
        try:
            same(got, want)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    p = unit_values(dtype)
    with native_only():
        got = torch.special.ndtri(p.to(DEV))
    same(got, torch.special.ndtri(p))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", FLOATS)
def test_poles_and_infinities(dtype):
    """What CPU's code gives at the poles, spelled out so a change on either side shows."""
    x = torch.tensor([0.0, -0.0, -1.0, -2.0, -50.0, INF, -INF, NAN], dtype=dtype)
    with native_only():
        xd = x.to(DEV)
        lg, dg = torch.lgamma(xd).cpu(), torch.digamma(xd).cpu()
        pg1, pg2 = torch.polygamma(1, xd).cpu(), torch.polygamma(2, xd).cpu()
    assert lg[:7].tolist() == [INF] * 7 and math.isnan(lg[7])
    assert dg[0] == -INF and dg[1] == INF and dg[2:5].isnan().all() and dg[5] == INF and dg[6:].isnan().all()
    # trigamma's reflection divides by sin(pi x)^2, which is 0 only at +-0 (sin(-pi) is 1.2e-16 in float64):
    # CPU's 1.3e15 at -1 is kept. polygamma(2, x) is -inf at every non-positive integer (zeta's pole).
    assert pg1[:2].tolist() == [INF] * 2 and pg2[:5].tolist() == [-INF] * 5
    for got, fn in ((lg, torch.lgamma), (dg, torch.digamma), (pg1, lambda t: torch.polygamma(1, t)),
                    (pg2, lambda t: torch.polygamma(2, t))):
        torch.testing.assert_close(got, fn(x), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_polygamma_orders(dtype):
    x = torch.cat([torch.linspace(-4.75, 6, 44, dtype=dtype), torch.tensor([1e-3, 0.1, 30.0, 1e4], dtype=dtype)])
    for n in (0, 1, 2, 4, 5, 9):
        want = torch.polygamma(n, x)
        with native_only():
            got = torch.polygamma(n, x.to(DEV))
        same(got, want)
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, x.to(DEV))


@pytest.mark.parametrize("dtype", FLOATS)
def test_polygamma_of_large_negative_non_integers(dtype):
    """CPU's zeta sums |x| terms for a negative non-integer x (hours at -3e12, which would hold a GPU as
    long); past 65536 terms ours folds the terms below zero into two zeta sums of positive arguments. Just
    past the limit CPU still finishes: both forms must agree there, and at -3.16e12 with the fold written
    with CPU's own special.zeta."""
    x = torch.tensor([-65535.3, -65536.25, -65537.75, -70000.25, -1e5 - 0.375, -2.5e5 + 0.125], dtype=dtype)
    for n in (2, 3, 4):
        want = torch.polygamma(n, x)
        with native_only():
            got = torch.polygamma(n, x.to(DEV))
        same(got, want, rtol=1e-4 if dtype == torch.float32 else 1e-9, atol=0)
    if dtype != torch.float64:
        return  # a float32 of that size is an integer (a pole)
    q = torch.tensor([-3.16e12 + 0.5, -1e15 - 0.25], dtype=dtype)
    m = -q.floor()
    g = q + m
    for n in (2, 3):
        s = float(n + 1)
        below = torch.special.zeta(s, 1 - g) - torch.special.zeta(s, 1 - g + m)
        zeta = (-below if n % 2 == 0 else below) + torch.special.zeta(s, g)
        want = (1 if n % 2 else -1) * math.factorial(n) * zeta
        with native_only():
            got = torch.polygamma(n, q.to(DEV))
        same(got, want, rtol=1e-9, atol=0)


def test_unary_forms():
    """Non-contiguous inputs, int inputs (promoted to float as CPU does), out= and in-place, in float32."""
    x = values(torch.float32, -6, 6)[:96].reshape(12, 8)
    xi = torch.arange(-6, 6).reshape(3, 4)
    fns = dict(UNARY, ndtri=torch.special.ndtri)
    with native_only():
        xd, xid = x.to(DEV), xi.to(DEV)
        for name, fn in fns.items():
            arg = x.sigmoid() if name == "ndtri" else x
            same(fn(arg.to(DEV).t()), fn(arg.t()))                        # transposed
            same(fn(arg.to(DEV)[::2, 1::3]), fn(arg[::2, 1::3]))           # sliced
            if name not in ("hardshrink", "softshrink"):                  # no integer forms on CPU either
                same(fn(xid), fn(xi))                                      # int64 -> float32
        for fn in (torch.lgamma, torch.digamma, torch.i0, torch.special.i0e, torch.special.i1,
                   torch.special.i1e, torch.special.ndtri, torch.special.log_ndtr, torch.special.erfcx,
                   torch.special.entr, torch.sinc):
            out = torch.empty(0, device=DEV)                               # resized, as on CPU
            fn(xd, out=out)
            same(out, fn(x))
            out64 = torch.empty(12, 8, dtype=torch.float64, device=DEV)    # a wider out: cast on store
            fn(xd, out=out64)
            # Computed in float32 (the inputs' dtype) and stored widened, on both sides.
            same(out64, fn(x, out=torch.empty(12, 8, dtype=torch.float64)), **TOL[torch.float32])
        out = torch.empty(0, device=DEV)
        torch.polygamma(2, xd, out=out)
        same(out, torch.polygamma(2, x))
        for method in ("lgamma_", "digamma_", "i0_", "sinc_"):
            y = x.clone()
            yd = y.to(DEV)
            getattr(yd.t(), method)()                                      # in place, through a view
            getattr(y.t(), method)()
            same(yd, y)
        y, yd = x.clone(), x.to(DEV)
        y.polygamma_(3)
        yd.polygamma_(3)
        same(yd, y)
        with pytest.raises(RuntimeError, match="can't be cast"):
            torch.lgamma(xd, out=torch.empty(12, 8, dtype=torch.int64, device=DEV))
        with pytest.raises(RuntimeError, match="can't be cast"):
            xid.lgamma_()


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_ops(dtype):
    """hypot, nextafter and xlog1py over every pair of special and ordinary values, broadcast."""
    s = torch.tensor([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, -1e-30, 1e30, 3e-39, 1e-300,
                      -3.75, 1.5e38], dtype=dtype)
    a, b = s.view(-1, 1), s.view(1, -1)
    g = torch.Generator().manual_seed(0)
    r1, r2 = torch.randn(7, 5, generator=g, dtype=dtype) * 4, torch.randn(5, generator=g, dtype=dtype) * 4
    r3 = torch.randn(7, 5, generator=g, dtype=dtype) * 4
    ops = {"hypot": torch.hypot, "nextafter": torch.nextafter, "xlog1py": torch.special.xlog1py}
    with native_only():
        for name, fn in ops.items():
            exact = dict(rtol=0, atol=0) if name == "nextafter" else {}
            same(fn(a.to(DEV), b.to(DEV)), fn(a, b), **exact)
            same(fn(r1.to(DEV), r2.to(DEV)), fn(r1, r2))                       # broadcast
            same(fn(r1.to(DEV).t(), r3.to(DEV).t()), fn(r1.t(), r3.t()))       # transposed
            out = torch.empty(0, dtype=dtype, device=DEV)
            fn(r1.to(DEV), r2.to(DEV), out=out)
            same(out, fn(r1, r2))
        # Exact: one ulp either way, subnormals included.
        same(torch.nextafter(torch.zeros(2, dtype=dtype, device=DEV), torch.tensor([1.0, -1.0], dtype=dtype,
                                                                                   device=DEV)),
             torch.nextafter(torch.zeros(2, dtype=dtype), torch.tensor([1.0, -1.0], dtype=dtype)), rtol=0, atol=0)
        for method in ("hypot_", "nextafter_"):
            y, yd = r1.clone(), r1.to(DEV)
            getattr(y, method)(r2)
            getattr(yd, method)(r2.to(DEV))
            same(yd, y)
        # xlog1py with a Python number on either side, and integer tensors (promoted to the default float).
        same(torch.special.xlog1py(r1.to(DEV), 2.5), torch.special.xlog1py(r1, 2.5))
        same(torch.special.xlog1py(3, r1.to(DEV)), torch.special.xlog1py(3, r1))
        ia, ib = torch.arange(-3, 4), torch.arange(0, 7)
        same(torch.special.xlog1py(ia.to(DEV), ib.to(DEV)), torch.special.xlog1py(ia, ib))
        same(torch.hypot(r1.to(DEV), torch.tensor(2.0, dtype=dtype, device=DEV)), torch.hypot(r1, torch.tensor(2.0, dtype=dtype)))
        for fn in (torch.hypot, torch.nextafter):
            with pytest.raises(NotImplementedError):
                fn(ia.to(DEV), ib.to(DEV))
        other = torch.float32 if dtype == torch.float64 else torch.float64   # promoted, as on CPU
        same(torch.nextafter(r1.to(DEV), r2.to(other).to(DEV)), torch.nextafter(r1, r2.to(other)), rtol=0, atol=0)


def test_nextafter_half_runs_on_the_fallback():
    """half and bfloat16 step by their own ulp on CPU; the engine computes them in float, so they go to the
    fallback (counted) rather than step by a float's ulp."""
    for dtype in (torch.float16, torch.bfloat16):
        a, b = torch.tensor([0.0, 1.0, -2.0], dtype=dtype), torch.tensor([1.0, 2.0, -3.0], dtype=dtype)
        torch.opencl.reset_fallback_stats()
        previous = torch.opencl.fallback_mode()
        torch.opencl.set_fallback_mode("silent")
        try:
            got = torch.nextafter(a.to(DEV), b.to(DEV))
        finally:
            torch.opencl.set_fallback_mode(previous)
        same(got, torch.nextafter(a, b), rtol=0, atol=0)
        assert torch.opencl.fallback_stats().get("aten::nextafter", 0) == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_logit_backward(dtype):
    x = torch.tensor([-0.5, 0.0, 1e-7, 0.05, 0.3, 0.5, 0.9, 1.0, 1.5, NAN, INF], dtype=dtype)
    g = torch.linspace(-2, 2, x.numel(), dtype=dtype)
    for eps in (None, 0.0, 0.1, -1.0):
        want = torch.ops.aten.logit_backward(g, x, eps)
        with native_only():
            got = torch.ops.aten.logit_backward(g.to(DEV), x.to(DEV), eps)
        same(got, want)


def _grads(fn, inputs, grad_seed=0):
    """fn's value and the gradients of sum(fn * w) w.r.t. inputs on CPU and (natively) on the device."""
    results = []
    for dev in ("cpu", DEV):
        xs = [t.detach().to(dev).requires_grad_(t.requires_grad) for t in inputs]
        ctx = native_only() if dev == DEV else torch.enable_grad()
        with ctx:
            y = fn(*xs)
            w = torch.randn(y.shape, generator=torch.Generator().manual_seed(grad_seed), dtype=y.dtype).to(dev)
            gs = torch.autograd.grad(y, [t for t in xs if t.requires_grad], w)
        results.append((y, gs))
    (y_cpu, g_cpu), (y_dev, g_dev) = results
    return y_cpu, g_cpu, y_dev, g_dev


@pytest.mark.parametrize("dtype", FLOATS)
def test_gradients_match_cpu(dtype):
    """torch.autograd.grad through each differentiable op, natively, against CPU's."""
    g = torch.Generator().manual_seed(1)
    x = (torch.rand(6, 5, generator=g, dtype=dtype) * 6 - 3).requires_grad_()
    pos = (torch.rand(6, 5, generator=g, dtype=dtype) * 5 + 0.1).requires_grad_()
    unit = (torch.rand(6, 5, generator=g, dtype=dtype) * 0.98 + 0.01).requires_grad_()
    y = (torch.randn(6, 5, generator=g, dtype=dtype)).requires_grad_()
    cases = {
        "lgamma": (torch.lgamma, [pos]),
        "digamma": (torch.digamma, [pos]),
        "polygamma": (lambda t: torch.polygamma(2, t), [pos]),
        "i0": (torch.i0, [x]),
        "i0e": (torch.special.i0e, [x]),
        "i1": (torch.special.i1, [x]),
        "i1e": (torch.special.i1e, [x]),
        "ndtri": (torch.special.ndtri, [unit]),
        "log_ndtr": (torch.special.log_ndtr, [x]),
        "erfcx": (torch.special.erfcx, [x]),
        "entr": (torch.special.entr, [pos]),
        "sinc": (torch.sinc, [x]),
        "xlog1py": (torch.special.xlog1py, [x, pos]),
        "hypot": (torch.hypot, [x, y]),
        "logit": (lambda t: torch.logit(t, eps=0.1), [unit]),
        "hardshrink": (lambda t: F.hardshrink(t, 1.0), [x]),
        "softshrink": (lambda t: F.softshrink(t, 1.0), [x]),
        "glu": (lambda t: F.glu(t, 0), [y]),
    }
    failures = []
    for name, (fn, inputs) in cases.items():
        try:
            y_cpu, g_cpu, y_dev, g_dev = _grads(fn, inputs)
            same(y_dev, y_cpu)
            for a, b in zip(g_dev, g_cpu):
                same(a, b)
        except (AssertionError, RuntimeError) as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", FLOATS)
def test_shrink(dtype):
    x = values(dtype, -3, 3)
    g = torch.linspace(-1, 1, x.numel(), dtype=dtype)
    with native_only():
        for lambd in (0.0, 0.5, 2.0, 1e30):
            same(F.hardshrink(x.to(DEV), lambd), F.hardshrink(x, lambd))
            same(F.softshrink(x.to(DEV), lambd), F.softshrink(x, lambd))
            for op in (torch.ops.aten.hardshrink_backward, torch.ops.aten.softshrink_backward):
                # At a NaN input CPU's scalar loop (a tensor's tail) and CUDA pass the gradient through, CPU's
                # vectorised loop gives 0: ours is the former, checked apart.
                got, want = op(g.to(DEV), x.to(DEV), lambd).cpu(), op(g, x, lambd)
                nan = x.isnan()
                same(got[~nan].to(DEV), want[~nan])
                assert torch.equal(got[nan], g[nan])
        xt = x[:96].reshape(12, 8)
        same(F.hardshrink(xt.to(DEV).t(), 0.5), F.hardshrink(xt.t(), 0.5))
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch.ops.aten.softshrink.out(x.to(DEV), 0.5, out=out)
        same(out, F.softshrink(x, 0.5))
        gi = torch.empty(0, dtype=dtype, device=DEV)
        torch.ops.aten.hardshrink_backward.grad_input(g.to(DEV), x.to(DEV), 0.5, grad_input=gi)
        same(gi, torch.ops.aten.hardshrink_backward(g, x, 0.5).where(~x.isnan(), g))  # NaN: as above
        with pytest.raises(RuntimeError, match="lambda must be in range"):
            F.softshrink(x.to(DEV), -0.5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_glu(dtype):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 6, 10, generator=g, dtype=dtype) * 4
    x.view(-1)[:4] = torch.tensor([INF, -INF, NAN, 0.0], dtype=dtype)
    with native_only():
        for dim in (0, 1, -1):
            same(F.glu(x.to(DEV), dim), F.glu(x, dim))
            y_cpu, g_cpu, y_dev, g_dev = _grads(lambda t: F.glu(t, dim), [x.clone().requires_grad_()])
            same(y_dev, y_cpu)
            same(g_dev[0], g_cpu[0])
        xt = x.transpose(0, 2)                                             # non-contiguous halves
        same(F.glu(xt.to(DEV), 0), F.glu(xt, 0))
        go = torch.randn(5, 6, 4, generator=g, dtype=dtype)
        same(torch.ops.aten.glu_backward(go.to(DEV), xt.to(DEV), 0), torch.ops.aten.glu_backward(go, xt, 0))
        out = torch.empty(0, dtype=dtype, device=DEV)
        torch.ops.aten.glu.out(x.to(DEV), 1, out=out)
        same(out, F.glu(x, 1))
        gi = torch.empty(3, dtype=dtype, device=DEV)
        go = torch.randn(4, 3, 10, generator=g, dtype=dtype)
        torch.ops.aten.glu_backward.grad_input(go.to(DEV), x.to(DEV), 1, grad_input=gi)
        same(gi, torch.ops.aten.glu_backward(go, x, 1))
        with pytest.raises(RuntimeError, match="Halving dimension must be even"):
            F.glu(torch.ones(3, 5, device=DEV, dtype=dtype), 1)
        with pytest.raises(RuntimeError, match="Halving dimension must be even"):
            torch.ops.aten.glu_backward(torch.ones(3, 2, device=DEV, dtype=dtype),
                                        torch.ones(3, 5, device=DEV, dtype=dtype), 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_prelu(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 4, 5, generator=g, dtype=dtype)
    x.view(-1)[:3] = 0.0                                                   # the kink: x > 0 is the branch
    for weight in (torch.tensor([0.25], dtype=dtype), torch.tensor([0.1, -0.5, 2.0], dtype=dtype)):
        for inp in (x, x.to(memory_format=torch.channels_last), x[:, :, 1:, ::2]):
            y_cpu, g_cpu, y_dev, g_dev = _grads(F.prelu, [inp.clone().requires_grad_(),
                                                          weight.clone().requires_grad_()])
            same(y_dev, y_cpu)
            same(g_dev[0], g_cpu[0])
            same(g_dev[1], g_cpu[1], rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-5)  # a sum
    x.view(-1)[:5] = torch.tensor([0.0, -0.0, INF, -INF, NAN], dtype=dtype)
    with native_only():
        w = torch.tensor([0.1, -0.5, 2.0], dtype=dtype).view(1, 3, 1, 1)
        go = torch.randn(2, 3, 4, 5, generator=g, dtype=dtype)
        want = torch.ops.aten._prelu_kernel_backward(go, x, w)
        got = torch.ops.aten._prelu_kernel_backward(go.to(DEV), x.to(DEV), w.to(DEV))
        for a, b in zip(got, want):
            same(a, b)
        same(torch.ops.aten._prelu_kernel(x.to(DEV), w.to(DEV)), torch.ops.aten._prelu_kernel(x, w))


def test_no_fallback_for_any_of_them():
    """fallback_stats names none of the operators after a pass over all of them (forward and backward)."""
    x = torch.rand(4, 6, device=DEV, requires_grad=True)
    torch.opencl.reset_fallback_stats()
    for fn in list(UNARY.values()) + [torch.special.ndtri, lambda t: torch.polygamma(0, t),
                                      lambda t: torch.hypot(t, t * 2), lambda t: torch.nextafter(t.detach(), t.detach() * 2),
                                      lambda t: torch.special.xlog1py(t, t), lambda t: F.glu(t, 1),
                                      lambda t: F.prelu(t.view(4, 6, 1), torch.full((6,), 0.2, device=DEV)),
                                      lambda t: torch.logit(t, 0.01)]:
        y = fn(x)
        if y.requires_grad:
            torch.autograd.grad(y.sum(), x)
    torch.opencl.synchronize()
    stats = torch.opencl.fallback_stats()
    ours = ("lgamma", "digamma", "polygamma", "i0", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx", "entr", "sinc",
            "hypot", "nextafter", "xlog1py", "shrink", "glu", "prelu", "logit")
    assert not [name for name in stats if any(op in name for op in ours)], stats
