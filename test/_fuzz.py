"""The property-based fuzzer's cases: each is plain data (JSON), built on CPU and on the device
from the same storage, run on both and compared: the same value (dtype, shape, values, gradients)
or the same error (exception type), and the device still works after an error.

A case is {"family", "op", "inputs": [tensor spec], "args": {...}, "grad": bool}; a tensor spec
is {"dtype", "sizes", "strides", "offset", "storage", "seed", "lo", "hi", "specials"}: a storage
of `storage` elements drawn from `seed` (integers in [lo, hi), floats normal with a few NaN/inf
when `specials`), viewed with as_strided(sizes, strides, offset). So one spec covers 0- and
1-sized dims, transposes, stepped slices, expanded (stride 0) dims and offsets up to the end of
the storage.

test_fuzz.py draws cases with hypothesis (the strategies are here, one per operator family).
A failing case prints a one-line reproducer:

    cd test && ../.venv/bin/python _fuzz.py '<case as JSON>'

and a crash (the process dies with the case) leaves that case in LAST_CASE
($TMPDIR/torch_opencl_fuzz_last_case.json): `../.venv/bin/python _fuzz.py "$(cat that file)"`.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

from hypothesis import strategies as st

DEV = "opencl"

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]
MAX_ELEMENTS = 256  # per tensor: cases stay cheap, and sizes are kernel arguments (no new programs)


def device_dtypes() -> List[str]:
    """Every dtype the device holds (storage of any dtype; kernels hand what they lack to the CPU)."""
    return list(DTYPES)


# --- Tensors ---------------------------------------------------------------------------------


def _values(spec, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(spec["seed"])
    dtype = DTYPES[spec["dtype"]]
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype.is_floating_point:
        v = torch.randn(n, generator=g, dtype=torch.float64) * spec.get("scale", 2.0)
        if spec.get("specials") and n:
            picks = torch.randint(0, n, (max(1, n // 8),), generator=g)
            v[picks] = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0], dtype=torch.float64)[
                torch.randint(0, 5, picks.shape, generator=g)]
        return v.to(dtype)
    lo, hi = spec.get("lo", -8), spec.get("hi", 9)
    info = torch.iinfo(dtype)
    lo, hi = max(lo, info.min), min(hi, info.max)
    v = torch.randint(lo, hi, (n,), generator=g, dtype=torch.int64)
    if spec.get("specials") and n:  # the extremes of the dtype
        picks = torch.randint(0, n, (max(1, n // 8),), generator=g)
        v[picks] = torch.tensor([info.min, info.max, -1, 0], dtype=torch.int64)[torch.randint(0, 4, picks.shape, generator=g)]
        v = v.clamp(info.min, info.max)
    return v.to(dtype)


def make_tensor(spec, device: str, requires_grad: bool = False, contiguous: bool = False) -> torch.Tensor:
    base = _values(spec, spec["storage"]).to(device)
    t = base.as_strided(spec["sizes"], spec["strides"], spec["offset"])
    if contiguous:
        t = t.contiguous()
    if requires_grad:
        t = t.detach().requires_grad_()  # a leaf with the same layout
    return t


@st.composite
def shapes(draw, min_dims=0, max_dims=4, max_size=6, min_size=0):
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = [draw(st.sampled_from([s for s in (0, 1, 1, 2, 3, 4, 5, 6) if min_size <= s <= max_size] or [min_size]))
             for _ in range(ndim)]
    while math.prod(sizes) > MAX_ELEMENTS:
        sizes[sizes.index(max(sizes))] -= 1
    return sizes


@st.composite
def tensor_specs(draw, sizes, dtype, expand=True, lo=None, hi=None, specials=None):
    """A spec of logical `sizes` in a drawn layout: dims in a drawn memory order (transposes), a
    step per dim (stepped slices), stride 0 on some size-1-able dims (expanded), an offset that
    may put the view at the very end of its storage."""
    ndim = len(sizes)
    order = draw(st.permutations(range(ndim))) if ndim > 1 and draw(st.booleans()) else list(range(ndim))
    strides = [0] * ndim
    acc = 1
    for d in reversed(order):  # the last of `order` is innermost
        if expand and sizes[d] > 1 and draw(st.integers(0, 5)) == 0:
            strides[d] = 0
            continue
        step = draw(st.sampled_from([1, 1, 1, 2, 3]))
        strides[d] = acc * step
        acc *= max(sizes[d], 1) * step
    extent = sum((s - 1) * st_ for s, st_ in zip(sizes, strides)) + 1 if all(s > 0 for s in sizes) else 0
    where = draw(st.sampled_from(["start", "start", "middle", "end"]))
    slack = draw(st.integers(0, 3))
    if where == "start":
        offset, storage = 0, extent + slack
    elif where == "middle":
        offset, storage = slack + 1, extent + 2 * slack + 2
    else:  # the view ends where the storage ends (an empty view sits just past its end)
        offset, storage = slack, extent + slack
    spec = {"dtype": dtype, "sizes": list(sizes), "strides": strides, "offset": offset, "storage": storage,
            "seed": draw(st.integers(0, 2**16))}
    if lo is not None:
        spec["lo"], spec["hi"] = lo, hi
    spec["specials"] = draw(st.booleans()) if specials is None else specials
    return spec


# --- Running and comparing -------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-9), torch.float16: (1e-2, 1e-2),
       torch.bfloat16: (2e-2, 2e-2)}


def _tolerance(dtype, loose=False):
    rtol, atol = TOL.get(dtype, (0, 0))
    if loose and dtype in TOL:  # reductions, products and gradients accumulate rounding
        rtol, atol = rtol * 10, max(atol * 10, rtol * 10)
    return rtol, atol


def compare(cpu, dev, what="output", values=True, loose=False, strides=False):
    if isinstance(cpu, torch.Tensor):
        if not isinstance(dev, torch.Tensor):
            raise Mismatch(f"{what}: device gave {type(dev).__name__}, CPU a tensor")
        if dev.device.type != DEV and cpu.device.type == "cpu":
            raise Mismatch(f"{what}: on {dev.device}, expected {DEV}")
        if (dev.dtype, dev.shape) != (cpu.dtype, cpu.shape):
            raise Mismatch(f"{what}: {dev.dtype}{list(dev.shape)} vs CPU {cpu.dtype}{list(cpu.shape)}")
        if strides and dev.numel() > 1 and dev.stride() != cpu.stride():
            raise Mismatch(f"{what}: strides {dev.stride()} vs CPU {cpu.stride()}")
        if not values:
            return
        rtol, atol = _tolerance(cpu.dtype, loose)
        try:
            torch.testing.assert_close(dev.detach().cpu(), cpu.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                       check_stride=False)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            raise Mismatch(f"{what}: " + "; ".join(lines[:4])) from None
        return
    if isinstance(cpu, (tuple, list)):
        if not isinstance(dev, (tuple, list)) or len(dev) != len(cpu):
            raise Mismatch(f"{what}: structure differs")
        for i, (c, d) in enumerate(zip(cpu, dev)):
            compare(c, d, f"{what}[{i}]", values, loose, strides)
        return
    if values and cpu != dev and not (isinstance(cpu, float) and math.isnan(cpu) and math.isnan(dev)):
        raise Mismatch(f"{what}: {dev!r} vs CPU {cpu!r}")


def _tensors(x) -> List[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return []


def _run(case, device: str):
    """(outputs, input leaves) or the exception the call raised."""
    op = OPS[case["op"]]
    grad = case.get("grad", False)
    inputs = [make_tensor(s, device, grad and DTYPES[s["dtype"]].is_floating_point and not s.get("nograd"),
                          contiguous=op.cpu_contiguous and device == "cpu")
              for s in case["inputs"]]
    with torch.enable_grad() if grad else torch.no_grad():
        out = op.fn(inputs, case["args"])
    return out, inputs


def _device_still_works():
    x = torch.arange(4.0, device=DEV)
    assert (x * 2).sum().item() == 12.0, "the device gives wrong answers after an error"


# The case being run, written before it runs: after a crash (which takes pytest and its report
# along) this file holds the reproducer's argument.
LAST_CASE = os.path.join(tempfile.gettempdir(), "torch_opencl_fuzz_last_case.json")


def check_case(case) -> str:
    """Raises Mismatch (with the reproducer) when the device differs from CPU; returns what held."""
    with open(LAST_CASE, "w") as f:
        f.write(json.dumps(case) + "\n")
    try:
        return _check(case)
    except Mismatch as e:
        raise Mismatch(f"{e}\nreproduce: cd test && ../.venv/bin/python _fuzz.py '{json.dumps(case)}'") from None


def _check(case) -> str:
    op = OPS[case["op"]]
    try:
        torch.manual_seed(0)
        cpu_out, cpu_in = _run(case, "cpu")
        cpu_error = None
    except Exception as e:  # noqa: BLE001 - any CPU error is a behaviour to match
        cpu_error = e
    try:
        torch.manual_seed(0)
        dev_out, dev_in = _run(case, DEV)
        # Where index checks do not wait for the device (the GPU class), a bad index raises at the
        # next synchronization: that is this call's error.
        torch.opencl.synchronize()
        dev_error = None
    except Exception as e:  # noqa: BLE001
        dev_error = e
    if cpu_error is not None:
        if dev_error is None:
            raise Mismatch(f"CPU raised {type(cpu_error).__name__}: {_line(cpu_error)}; the device returned a value")
        # The same class, or one of the other's (NotImplementedError is a RuntimeError): what catches
        # the CPU's error catches the device's.
        if not (isinstance(dev_error, type(cpu_error)) or isinstance(cpu_error, type(dev_error))):
            raise Mismatch(f"CPU raised {type(cpu_error).__name__}: {_line(cpu_error)}; the device "
                           f"{type(dev_error).__name__}: {_line(dev_error)}")
        _device_still_works()
        return "same error"
    if dev_error is not None:
        raise Mismatch(f"the device raised {type(dev_error).__name__}: {_line(dev_error)}; CPU returned a value")
    compare(cpu_out, dev_out, values=not op.random, loose=op.loose, strides=op.strides)
    if op.check is not None:
        op.check(dev_out, case)
    if not case.get("grad"):
        return "same value"
    return _check_grad(case, cpu_out, cpu_in, dev_out, dev_in)


def _check_grad(case, cpu_out, cpu_in, dev_out, dev_in) -> str:
    pairs = [(c, d) for c, d in zip(_tensors(cpu_out), _tensors(dev_out))
             if c.requires_grad and c.is_floating_point() and c.numel() > 0]
    ins = [(c, d) for c, d in zip(cpu_in, dev_in) if c.requires_grad]
    if not pairs or not ins:
        return "same value"
    g = torch.Generator().manual_seed(1)
    cots = [torch.randn(c.shape, generator=g, dtype=torch.float64).to(c.dtype) for c, _ in pairs]
    results = []
    for side, outs, leaves, device in (("cpu", [c for c, _ in pairs], [c for c, _ in ins], "cpu"),
                                       (DEV, [d for _, d in pairs], [d for _, d in ins], DEV)):
        try:
            grads = torch.autograd.grad(outs, leaves, [c.to(device) for c in cots], allow_unused=True)
            results.append((grads, None))
        except Exception as e:  # noqa: BLE001
            results.append((None, e))
    (cg, ce), (dg, de) = results
    if ce is not None or de is not None:
        if ce is None or de is None or not (isinstance(de, type(ce)) or isinstance(ce, type(de))):
            raise Mismatch(f"backward: CPU {_line(ce) if ce else 'ran'}; device {_line(de) if de else 'ran'}")
        _device_still_works()
        return "same value, same backward error"
    tied = OPS[case["op"]].ties and any(c.detach().unique().numel() < c.numel() for c, _ in ins)
    for i, (c, d) in enumerate(zip(cg, dg)):
        if (c is None) != (d is None):
            raise Mismatch(f"grad[{i}]: CPU {c is None and 'None' or 'a tensor'}, device {d is None and 'None' or 'a tensor'}")
        if c is not None and tied:  # the same gradient values, maybe at other ones of the tied positions
            compare(c.flatten().sort().values, d.cpu().flatten().sort().values.to(DEV), f"grad[{i}] (ties)", loose=True)
        elif c is not None:
            try:
                compare(c, d, f"grad[{i}]", values=not OPS[case["op"]].random, loose=True)
            except Mismatch:
                # An ill-conditioned backward (group_norm with eps = 0 and two close elements per group) can
                # leave CPU's own float32 gradient far from the exact one: the device passes if it matches
                # the same gradient computed in float64.
                exact = _grad_in_float64(case, cpu_in, cots)
                if exact is None or exact[i] is None:
                    raise
                try:
                    compare(exact[i].to(c.dtype), d, f"grad[{i}]", loose=True)
                except Mismatch:
                    raise Mismatch(f"grad[{i}]: differs from CPU's float32 gradient and from its float64 one") from None
    return "same value and gradients"


def _grad_in_float64(case, cpu_in, cots):
    """CPU's gradients of the case with its float inputs in float64 (None for random ops or on error)."""
    op = OPS[case["op"]]
    if op.random:
        return None
    xs = [t.detach().double().requires_grad_(t.requires_grad) if t.is_floating_point() else t for t in cpu_in]
    try:
        with torch.enable_grad():
            outs = [o for o in _tensors(op.fn(xs, case["args"]))
                    if o.requires_grad and o.is_floating_point() and o.numel() > 0]
            leaves = [t for t in xs if t.requires_grad]
            return torch.autograd.grad(outs, leaves, [c.double() for c in cots], allow_unused=True)
    except Exception:  # noqa: BLE001 - no float64 form: keep the float32 mismatch
        return None


def _line(e: Optional[BaseException]) -> str:
    if e is None:
        return ""
    text = str(e).strip().splitlines()
    return (text[0] if text else "")[:200]


# --- Operators, by family --------------------------------------------------------------------


class Op:
    """`ties`: among equal inputs, which one the op picks is the implementation's (topk: CPU's partial sort
    picks differently from the device), so with repeated input values the gradients are compared as
    multisets of values, not position by position.
    `cpu_contiguous`: CPU's reference runs on contiguous copies of the inputs (same values), where CPU's own
    kernel is wrong for some layouts."""

    def __init__(self, family: str, fn: Callable, random=False, loose=False, strides=False, check=None, ties=False,
                 cpu_contiguous=False):
        self.family, self.fn, self.random, self.loose, self.strides, self.check = family, fn, random, loose, strides, check
        self.ties, self.cpu_contiguous = ties, cpu_contiguous


OPS: Dict[str, Op] = {}


def op(family, name, **kw):
    def register(fn):
        OPS[name] = Op(family, fn, **kw)
        return fn
    return register


def _unary(name, f):
    op("unary", name)(lambda x, a: f(x[0]))


for _name, _f in {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "sin": torch.sin,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": F.relu, "gelu": F.gelu, "floor": torch.floor,
    "round": torch.round, "sign": torch.sign, "reciprocal": torch.reciprocal, "bitwise_not": torch.bitwise_not,
    "logical_not": torch.logical_not, "square": torch.square, "clamp": lambda x: torch.clamp(x, -1, 2),
    "nan_to_num": torch.nan_to_num, "isnan": torch.isnan, "erfinv": torch.erfinv, "log1p": torch.log1p,
}.items():
    _unary(_name, _f)


def _div(x, y, mode):
    """CPU's vectorised bfloat16 trunc division rounds the quotient to bfloat16 before truncating (3.078125 /
    0.6171875 gives 5 from four elements up, 4 for one); the device truncates the float quotient, as CPU's scalar
    loop does. The CPU reference computes that in float."""
    out = torch.div(x, y, rounding_mode=mode)
    tensors = [t for t in (x, y) if isinstance(t, torch.Tensor)]
    if mode == "trunc" and out.dtype == torch.bfloat16 and all(t.device.type == "cpu" for t in tensors):
        f = [t.float() if isinstance(t, torch.Tensor) else t for t in (x, y)]
        out = torch.div(f[0], f[1], rounding_mode=mode).to(out.dtype)
    return out


def _operands(x, a):
    """The two operands: two tensors, or one tensor and a Python number or 0-d CPU tensor (args "scalar",
    "scalar_form", "scalar_left"), which TensorIterator casts to the common dtype without a check."""
    if "scalar" not in a:
        return x[0], x[1]
    v = torch.tensor(a["scalar"]) if a["scalar_form"] == "cpu_tensor" else a["scalar"]
    return (v, x[0]) if a["scalar_left"] else (x[0], v)


def _binary(name, f):
    op("binary", name)(lambda x, a: f(*_operands(x, a), a))


for _name, _f in {
    "add": lambda x, y, a: torch.add(x, y, alpha=a.get("alpha", 1)), "sub": lambda x, y, a: torch.sub(x, y),
    "mul": lambda x, y, a: x * y, "div": lambda x, y, a: _div(x, y, a.get("rounding_mode")),
    "remainder": lambda x, y, a: torch.remainder(x, y), "fmod": lambda x, y, a: torch.fmod(x, y),
    "floor_divide": lambda x, y, a: torch.floor_divide(x, y), "pow": lambda x, y, a: torch.pow(x, y),
    "maximum": lambda x, y, a: torch.maximum(x, y), "minimum": lambda x, y, a: torch.minimum(x, y),
    "eq": lambda x, y, a: torch.eq(x, y), "lt": lambda x, y, a: torch.lt(x, y),
    "bitwise_and": lambda x, y, a: torch.bitwise_and(x, y), "atan2": lambda x, y, a: torch.atan2(x, y),
    "where": lambda x, y, a: torch.where(x > 0, x, y), "lerp": lambda x, y, a: torch.lerp(x, y, 0.3),
    "add_": lambda x, y, a: x.clone().add_(y), "copy_": lambda x, y, a: x.clone().copy_(y),
    "shift_left": lambda x, y, a: x << y,
}.items():
    _binary(_name, _f)


def _reduce(name, f, **kw):
    op("reduce", name, loose=True, **kw)(lambda x, a: f(x[0], a))


def _dims(a):
    return a["dim"] if a.get("dim") is not None else None


for _name, _f in {
    "sum": lambda x, a: x.sum() if a.get("dim") is None else x.sum(a["dim"], keepdim=a["keepdim"]),
    "mean": lambda x, a: x.mean() if a.get("dim") is None else x.mean(a["dim"], keepdim=a["keepdim"]),
    "prod": lambda x, a: x.prod() if a.get("dim") is None else x.prod(a["dim"][0], keepdim=a["keepdim"]),
    "amax": lambda x, a: x.amax(a.get("dim") or (), keepdim=a["keepdim"]),
    "max_dim": lambda x, a: x.max() if a.get("dim") is None else x.max(a["dim"][0], keepdim=a["keepdim"]),
    "argmax": lambda x, a: x.argmax() if a.get("dim") is None else x.argmax(a["dim"][0], keepdim=a["keepdim"]),
    "var": lambda x, a: x.var() if a.get("dim") is None else x.var(a["dim"], keepdim=a["keepdim"]),
    "std": lambda x, a: x.std(_dims(a), correction=0),
    "norm": lambda x, a: torch.linalg.vector_norm(x, dim=_dims(a), keepdim=a["keepdim"]),
    # Every dim named: CPU's logsumexp over dim=() of a tensor of 1 or more dims raises ("output with
    # shape [] doesn't match the broadcast shape"), a PyTorch bug the device need not copy.
    "logsumexp": lambda x, a: torch.logsumexp(x, a.get("dim") or list(range(x.dim())), keepdim=a["keepdim"]),
    "any": lambda x, a: x.any() if a.get("dim") is None else x.any(a["dim"][0], keepdim=a["keepdim"]),
    "all": lambda x, a: x.all() if a.get("dim") is None else x.all(a["dim"][0]),
    "cumsum": lambda x, a: x.cumsum(a["dim"][0] if a.get("dim") else 0),
    "cumprod": lambda x, a: x.cumprod(a["dim"][0] if a.get("dim") else 0),
    "nansum": lambda x, a: x.nansum(_dims(a)),
    "softmax": lambda x, a: F.softmax(x, a["dim"][0] if a.get("dim") else -1),
    "log_softmax": lambda x, a: F.log_softmax(x, a["dim"][0] if a.get("dim") else 0),
    "sort": lambda x, a: torch.sort(x, a["dim"][0] if a.get("dim") else -1, stable=True),
    "cummax": lambda x, a: x.cummax(a["dim"][0] if a.get("dim") else 0)[0],
    "flip": lambda x, a: x.flip(a.get("dim") or ()),
    "roll": lambda x, a: x.roll(a["k"], a["dim"][0] if a.get("dim") else None),
}.items():
    _reduce(_name, _f)
_reduce("topk", lambda x, a: torch.topk(x, a["k"], a["dim"][0] if a.get("dim") else -1, sorted=True)[0], ties=True)


@op("blas", "matmul", loose=True)
def _matmul(x, a):
    return torch.matmul(x[0], x[1])


@op("blas", "addmm", loose=True)
def _addmm(x, a):
    return torch.addmm(x[2], x[0], x[1], beta=a["beta"], alpha=a["alpha"])


@op("blas", "linear", loose=True)
def _linear(x, a):
    return F.linear(x[0], x[1], x[2] if len(x) > 2 else None)


@op("blas", "bmm", loose=True)
def _bmm(x, a):
    return torch.bmm(x[0], x[1])


@op("conv", "conv", loose=True)
def _conv(x, a):
    d = x[0].dim() - 2
    fn = {1: F.conv1d, 2: F.conv2d}.get(d) if not a["transposed"] else {1: F.conv_transpose1d, 2: F.conv_transpose2d}.get(d)
    if fn is None:
        fn = F.conv2d
    kw = dict(stride=a["stride"], padding=a["padding"], dilation=a["dilation"], groups=a["groups"])
    if a["transposed"]:
        kw["output_padding"] = a.get("output_padding", 0)
    # Winograd serves 3x3 stride-1 convolutions from 16 channels; the fuzzer's have at most 4, so a case
    # lowers the device's minimum to 1 to reach it. Every convolution case sets it, so that it holds through
    # the case's backward and no case inherits another's.
    _set_winograd_min_channels(1 if a.get("winograd") else None)
    return fn(x[0], x[1], x[2] if len(x) > 2 else None, **kw)


_WINOGRAD_DEFAULT = []


def _set_winograd_min_channels(channels):
    from torch_opencl import _C
    if not _WINOGRAD_DEFAULT:
        _WINOGRAD_DEFAULT.append(_C._winograd_min_channels(0)[1])
    _C._winograd_min_channels(0, channels or _WINOGRAD_DEFAULT[0])


@op("conv", "max_pool2d", loose=True)
def _max_pool(x, a):
    return F.max_pool2d(x[0], a["kernel"], a["stride"], a["padding"], a["dilation"], ceil_mode=a["ceil"])


@op("conv", "avg_pool2d", loose=True)
def _avg_pool(x, a):
    return F.avg_pool2d(x[0], a["kernel"], a["stride"], a["padding"], ceil_mode=a["ceil"])


@op("conv", "adaptive_avg_pool2d", loose=True)
def _adaptive(x, a):
    return F.adaptive_avg_pool2d(x[0], a["output"])


@op("norm", "layer_norm", loose=True)
def _layer_norm(x, a):
    shape = x[0].shape[-a["ndim"]:] if a["ndim"] else ()
    return F.layer_norm(x[0], shape, x[1] if len(x) > 1 else None, x[2] if len(x) > 2 else None, eps=a["eps"])


@op("norm", "group_norm", loose=True)
def _group_norm(x, a):
    return F.group_norm(x[0], a["groups"], eps=a["eps"])


# CPU's backward is wrong for an input whose strides also read as channels-last (W = 1, channel stride
# 1, e.g. sizes (1, 2, 2, 1) strides (4, 1, 2, 1)) with a contiguous gradient: it permutes the gradient.
@op("norm", "batch_norm", loose=True, cpu_contiguous=True)
def _batch_norm(x, a):
    c = x[0].shape[1] if x[0].dim() > 1 else 1
    mean, var = torch.zeros(c, device=x[0].device), torch.ones(c, device=x[0].device)
    return F.batch_norm(x[0], mean, var, training=a["training"], eps=a["eps"]), mean, var


@op("loss", "cross_entropy", loose=True)
def _cross_entropy(x, a):
    return F.cross_entropy(x[0], x[1], reduction=a["reduction"], ignore_index=a["ignore_index"],
                           label_smoothing=a["label_smoothing"])


@op("loss", "nll_loss", loose=True)
def _nll(x, a):
    return F.nll_loss(x[0], x[1], reduction=a["reduction"], ignore_index=a["ignore_index"])


@op("loss", "mse_loss", loose=True)
def _mse(x, a):
    return F.mse_loss(x[0], x[1], reduction=a["reduction"])


@op("index", "index_select")
def _index_select(x, a):
    return torch.index_select(x[0], a["dim"], x[1])


@op("index", "gather")
def _gather(x, a):
    return torch.gather(x[0], a["dim"], x[1])


@op("index", "scatter_add")
def _scatter_add(x, a):
    return x[0].scatter_add(a["dim"], x[1], x[2])


@op("index", "embedding")
def _embedding(x, a):
    return F.embedding(x[1], x[0])


@op("index", "take")
def _take(x, a):
    return torch.take(x[0], x[1])


@op("index", "index")
def _index(x, a):
    return x[0][x[1]]


@op("index", "index_put_acc")
def _index_put(x, a):
    return x[0].index_put((x[1],), x[2], accumulate=True)


@op("index", "masked_fill")
def _masked_fill(x, a):
    return x[0].masked_fill(x[1] > 0, a["value"])


@op("shape", "cat")
def _cat(x, a):
    return torch.cat(x, a["dim"])


@op("shape", "stack")
def _stack(x, a):
    return torch.stack(x, a["dim"])


@op("shape", "tril")
def _tril(x, a):
    return torch.tril(x[0], a["k"])


@op("shape", "repeat")
def _repeat(x, a):
    return x[0].repeat(a["reps"])


@op("shape", "contiguous")
def _contiguous(x, a):
    return x[0].contiguous() * 1 if x[0].dtype != torch.bool else x[0].contiguous()


def _binary_values(out, case):
    if not all(((t == 0) | (t == 1)).all() for t in _tensors(out) if t.is_floating_point()):
        raise Mismatch("bernoulli/dropout gave values outside {0, 1} (times the scale)")


@op("random", "bernoulli", random=True, check=_binary_values)
def _bernoulli(x, a):
    return torch.bernoulli(x[0]) if a.get("p") is None else torch.bernoulli(x[0], a["p"])


@op("random", "dropout", random=True)
def _dropout(x, a):
    return F.dropout(x[0], a["p"], training=True)


@op("random", "normal_", random=True)
def _normal(x, a):
    return x[0].clone().normal_(a["mean"], a["std"])


@op("random", "uniform_", random=True)
def _uniform(x, a):
    return x[0].clone().uniform_(a["from"], a["to"])


@op("random", "randint_like", random=True)
def _randint(x, a):
    return torch.randint_like(x[0], a["low"], a["high"])


@op("random", "multinomial", random=True)
def _multinomial(x, a):
    return torch.multinomial(x[0], a["n"], replacement=a["replacement"])


def _kthvalue(x, a):
    """The k-th value and the value at its index: CPU leaves which of equal values' indices it returns
    unspecified, so the index is held to pointing at the k-th value, not to CPU's choice."""
    values, indices = torch.kthvalue(x[0], a["k"], -1)
    rows = x[0].unsqueeze(-1) if x[0].dim() == 0 else x[0]
    return values, rows.gather(-1, indices.reshape(rows.shape[:-1] + (1,))).squeeze(-1)


# Operators that had no opencl kernel when this family was written: the boxed CPU fallback (and its layouts: strides
# compared). det, slogdet, logdet, inv and cholesky_ex are native now (aten/native/linalg_*.cpp), kthvalue and cross too.
for _name, _f in {
    "det": lambda x, a: torch.linalg.det(x[0]), "slogdet": lambda x, a: torch.linalg.slogdet(x[0]),
    "logdet": lambda x, a: torch.logdet(x[0]), "inv": lambda x, a: torch.linalg.inv(x[0]),
    "hypot": lambda x, a: torch.hypot(x[0], x[0].flip(-1) if x[0].dim() else x[0]),
    "lgamma": lambda x, a: torch.lgamma(x[0]), "kthvalue": _kthvalue,
    "cross": lambda x, a: torch.linalg.cross(x[0], x[0].roll(1, -1), dim=-1),
    "qr": lambda x, a: torch.linalg.qr(x[0])[1].abs(), "cholesky_ex": lambda x, a: torch.linalg.cholesky_ex(x[0])[1],
    "trace": lambda x, a: torch.trace(x[0]), "matrix_exp": lambda x, a: torch.linalg.matrix_exp(x[0] * 0.1),
}.items():
    op("fallback", _name, loose=True, strides=True)(_f)


# The "wide" family: a few ops at sizes that reach the kernels' GPU forms and their edges (rows longer
# than a work-group, several chunks per output, GEMM tiles with ragged edges); the other families keep
# tensors under MAX_ELEMENTS.
for _name, _f in {
    "wide_softmax": lambda x, a: F.softmax(x[0], a["dim"]),
    "wide_log_softmax": lambda x, a: F.log_softmax(x[0], a["dim"]),
    "wide_sum": lambda x, a: x[0].sum(a["dim"]),
    "wide_var": lambda x, a: x[0].var(a["dim"]),
    "wide_amax": lambda x, a: x[0].amax(a["dim"]),
    "wide_argmax": lambda x, a: x[0].argmax(a["dim"]),
    "wide_logsumexp": lambda x, a: torch.logsumexp(x[0], a["dim"]),
    "wide_cumsum": lambda x, a: x[0].cumsum(a["dim"]),
    "wide_layer_norm": lambda x, a: F.layer_norm(x[0], x[0].shape[-1:]),
    "wide_cross_entropy": lambda x, a: F.cross_entropy(x[0], x[1]),
    "wide_mm": lambda x, a: x[0] @ x[1],
    "wide_bmm": lambda x, a: torch.bmm(x[0], x[1]),
}.items():
    op("wide", _name, loose=True)(_f)


def families() -> List[str]:
    return sorted({o.family for o in OPS.values()})


def ops_of(family: str) -> List[str]:
    return sorted(n for n, o in OPS.items() if o.family == family)


def main(argv):
    case = json.loads(argv[1])
    torch.opencl.set_fallback_mode("silent")
    print(check_case(case))



# --- Cases, by family (hypothesis strategies) ------------------------------------------------


def _grad_ok(dtype):
    return dtype in ("float32", "float64")


@st.composite
def _dtype(draw, choices=None):
    return draw(st.sampled_from(choices or device_dtypes()))


@st.composite
def unary_cases(draw):
    name = draw(st.sampled_from(ops_of("unary")))
    dtype = draw(_dtype())
    spec = draw(tensor_specs(draw(shapes()), dtype))
    return {"family": "unary", "op": name, "inputs": [spec], "args": {}, "grad": _grad_ok(dtype) and draw(st.booleans())}


@st.composite
def _broadcastable(draw, sizes):
    """A shape that broadcasts with `sizes` (a suffix, some dims 1), or now and then one that does not."""
    if sizes and draw(st.integers(0, 9)) == 0:
        other = list(sizes)
        other[draw(st.integers(0, len(sizes) - 1))] += 1
        return other
    n = draw(st.integers(0, len(sizes)))
    out = list(sizes[len(sizes) - n:])
    return [1 if draw(st.integers(0, 3)) == 0 else s for s in out]


@st.composite
def binary_cases(draw):
    name = draw(st.sampled_from(ops_of("binary")))
    a = draw(_dtype())
    b = a if draw(st.integers(0, 2)) else draw(_dtype())
    sx = draw(shapes())
    sy = draw(_broadcastable(sx))
    if draw(st.booleans()):
        sx, sy = sy, sx
    lo, hi = (0, 9) if name == "shift_left" else (None, None)
    inputs = [draw(tensor_specs(sx, a)), draw(tensor_specs(sy, b, lo=lo, hi=hi))]
    args = {}
    if draw(st.integers(0, 3)) == 0:
        # One operand a Python number or 0-d CPU tensor, values beyond small dtypes' ranges included
        # (CPU wraps integers and gives inf for a double beyond float).
        inputs = inputs[:1]
        args["scalar"] = draw(st.sampled_from([0, 1, -1, 3, 255, 300, -200, 2**31, 2**40, -(2**63), True, False,
                                               0.5, -2.5, 1e300, -1e300, float("inf"), float("nan"), 65519.0]))
        args["scalar_form"] = draw(st.sampled_from(["python", "cpu_tensor"]))
        # In place, self must be the tensor (a CPU self with a device operand is an error on any accelerator).
        args["scalar_left"] = name not in ("add_", "copy_") and draw(st.booleans())
    if name == "add":
        args["alpha"] = draw(st.sampled_from([1, 2, -1, 0.5]))
    if name == "div":
        args["rounding_mode"] = draw(st.sampled_from([None, "trunc", "floor"]))
    grad = _grad_ok(a) and _grad_ok(b) and draw(st.booleans())
    return {"family": "binary", "op": name, "inputs": inputs, "args": args, "grad": grad}


@st.composite
def reduce_cases(draw):
    name = draw(st.sampled_from(ops_of("reduce")))
    dtype = draw(_dtype())
    if name == "prod" and dtype in ("float16", "bfloat16"):
        # CPU multiplies half and bfloat16 in their own type, so a partial product overflows to inf in an
        # order of its own; the device accumulates in float, as CUDA does (test_reduce.py checks it).
        dtype = "float32"
    sizes = draw(shapes())
    nd = max(len(sizes), 1)
    dim = None
    if draw(st.integers(0, 3)):
        count = draw(st.integers(1, min(2, nd)))
        dim = [draw(st.integers(-nd - (draw(st.integers(0, 9)) == 0), nd - 1 + (draw(st.integers(0, 9)) == 0)))
               for _ in range(count)]
    size = sizes[dim[0]] if dim and sizes and -len(sizes) <= dim[0] < len(sizes) else (sizes[-1] if sizes else 1)
    args = {"dim": dim, "keepdim": draw(st.booleans()), "k": draw(st.integers(-1, size + 1))}
    spec = draw(tensor_specs(sizes, dtype))
    return {"family": "reduce", "op": name, "inputs": [spec], "args": args, "grad": _grad_ok(dtype) and draw(st.booleans())}


@st.composite
def blas_cases(draw):
    name = draw(st.sampled_from(ops_of("blas")))
    dtype = draw(_dtype(FLOATS + ["int64"]))
    m, k, n = (draw(st.integers(0, 6)) for _ in range(3))
    k2 = k if draw(st.integers(0, 9)) else k + 1  # now and then, sizes that do not fit
    if name == "matmul":
        batch = draw(st.sampled_from([[], [2], [1, 3]]))
        xs = batch + [m, k] if draw(st.integers(0, 4)) else [k]
        ys = [k2, n] if draw(st.booleans()) else batch + [k2, n]
        shapes_ = [xs, ys]
    elif name == "bmm":
        b = draw(st.integers(0, 3))
        shapes_ = [[b, m, k], [b, k2, n]]
    elif name == "addmm":
        shapes_ = [[m, k], [k2, n], draw(_broadcastable([m, n]))]
    else:  # linear: weight (n, k), bias (n)
        batch = draw(st.sampled_from([[], [2], [0]]))
        shapes_ = [batch + [m, k], [n, k2]] + ([[n]] if draw(st.booleans()) else [])
    inputs = [draw(tensor_specs(s, dtype, specials=False)) for s in shapes_]
    args = {"alpha": draw(st.sampled_from([1, 0.5, 0])), "beta": draw(st.sampled_from([1, 0, 2]))}
    return {"family": "blas", "op": name, "inputs": inputs, "args": args, "grad": _grad_ok(dtype) and draw(st.booleans())}


_ARG = st.sampled_from([1, 1, 2, 0, -1])


@st.composite
def conv_cases(draw):
    name = draw(st.sampled_from(ops_of("conv")))
    dtype = draw(_dtype(["float32", "float32", "float64"]))
    d = 2 if name != "conv" else draw(st.sampled_from([1, 2]))
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 4))
    spatial = [draw(st.integers(0, 7)) for _ in range(d)]
    batched = name == "conv" or draw(st.integers(0, 3))
    x_shape = ([n] if batched else []) + [c] + spatial
    inputs = [draw(tensor_specs(x_shape, dtype, expand=False, specials=False))]
    args: Dict[str, Any] = {}
    if name == "conv":
        # Winograd's cases (see _conv): the convolutions it serves, 2-D 3x3 of stride 1, single-group.
        winograd = d == 2 and draw(st.booleans())
        groups = 1 if winograd else draw(st.sampled_from([1, 1, 2, 0]))
        transposed = draw(st.booleans())
        o = draw(st.integers(1, 4))
        kern = [3, 3] if winograd else [draw(st.integers(0, 3)) for _ in range(d)]
        per_group = c // groups if groups > 0 and c % groups == 0 else c
        w_shape = ([c, o] if transposed else [o * max(groups, 1), per_group]) + kern
        inputs.append(draw(tensor_specs(w_shape, dtype, expand=False, specials=False)))
        if draw(st.booleans()):
            out_ch = o * max(groups, 1) if transposed else w_shape[0]
            inputs.append(draw(tensor_specs([out_ch], dtype, specials=False)))
        args = {"stride": 1 if winograd else draw(_ARG), "padding": draw(st.sampled_from([0, 1, 2, -1])),
                "dilation": 1 if winograd else draw(_ARG), "groups": groups, "transposed": transposed,
                "output_padding": 0 if winograd else draw(st.sampled_from([0, 0, 1])), "winograd": winograd}
        if transposed and args["dilation"] == 0:
            # CPU is not consistent here: with a one-tap kernel its batch-1 path refuses dilation 0 and its
            # oneDNN path (batch 2 and more) computes it. The device computes it (test_cpu_parity_edges.py).
            args["dilation"] = -1
        if transposed and _transposed_output_has_a_zero_size(spatial, kern, args):
            # Nor here: CPU's batch-1 path refuses an output size of 0, its oneDNN path returns an empty
            # tensor. The device refuses it (test_cpu_parity_edges.py); the case becomes a bad padding.
            args["padding"] = -1
    elif name == "adaptive_avg_pool2d":
        args = {"output": [draw(st.integers(0, 4)), draw(st.integers(1, 4))]}
    else:
        args = {"kernel": draw(st.sampled_from([1, 2, 3, 0])), "stride": draw(st.sampled_from([None, 1, 2, 0, -1])),
                "padding": draw(st.sampled_from([0, 1, 2, -1])), "dilation": draw(_ARG), "ceil": draw(st.booleans())}
    grad = draw(st.booleans())
    if name == "max_pool2d" and _a_pool_window_is_all_padding(spatial, args):
        # CPU's max_pool2d gives such a window an index outside the plane, and its backward writes
        # there (heap corruption, `free(): invalid size`): values only (test_pooling.py asserts the
        # device's -inf and zero gradient).
        grad = False
    return {"family": "conv", "op": name, "inputs": inputs, "args": args, "grad": grad}


def _transposed_output_has_a_zero_size(spatial, kern, a) -> bool:
    s, p, d, op = a["stride"], a["padding"], a["dilation"], a["output_padding"]
    if min(s, d) <= 0 or p < 0:
        return False  # refused by both
    return any((i - 1) * s - 2 * p + d * (k - 1) + op + 1 == 0 for i, k in zip(spatial, kern))


def _a_pool_window_is_all_padding(spatial, a) -> bool:
    k, p, d = a["kernel"], a["padding"], a["dilation"]
    s = a["stride"] if a["stride"] is not None else k
    if min(k, s, d) <= 0 or p < 0:
        return False  # refused by both
    for size in spatial:
        span = d * (k - 1) + 1
        out = (size + 2 * p - span + (s - 1 if a["ceil"] else 0)) // s + 1
        if a["ceil"] and (out - 1) * s >= size + p:
            out -= 1
        for o in range(max(out, 0)):
            if not any(0 <= o * s - p + j * d < size for j in range(k)):
                return True
    return False


@st.composite
def norm_cases(draw):
    name = draw(st.sampled_from(ops_of("norm")))
    dtype = draw(_dtype(["float32", "float32", "float64", "float16", "bfloat16"]))
    sizes = draw(shapes(min_dims=1 if name != "layer_norm" else 0))
    inputs = [draw(tensor_specs(sizes, dtype, specials=False))]
    args: Dict[str, Any] = {"eps": draw(st.sampled_from([1e-5, 0.0, 1.0])), "training": draw(st.booleans())}
    if name == "layer_norm":
        args["ndim"] = draw(st.integers(0, min(2, len(sizes))))
        shape = sizes[len(sizes) - args["ndim"]:] if args["ndim"] else []
        if draw(st.booleans()):
            inputs.append(draw(tensor_specs(shape if draw(st.integers(0, 9)) else shape + [1], dtype, specials=False)))
            inputs.append(draw(tensor_specs(shape, dtype, specials=False)))
    elif name == "group_norm":
        args["groups"] = draw(st.sampled_from([1, 2, 3, 0]))
    return {"family": "norm", "op": name, "inputs": inputs, "args": args, "grad": _grad_ok(dtype) and draw(st.booleans())}


@st.composite
def loss_cases(draw):
    name = draw(st.sampled_from(ops_of("loss")))
    dtype = draw(_dtype(["float32", "float32", "float64"]))
    n, c = draw(st.integers(0, 4)), draw(st.integers(1, 5))
    extra = draw(st.sampled_from([[], [], [3]]))
    args = {"reduction": draw(st.sampled_from(["mean", "sum", "none"])),
            "ignore_index": draw(st.sampled_from([-100, 0, 1])),
            "label_smoothing": draw(st.sampled_from([0.0, 0.0, 0.2, -0.1, 1.5]))}
    logits = draw(tensor_specs(([n, c] if draw(st.integers(0, 5)) else [c]) + extra, dtype, specials=False))
    if name == "mse_loss":
        target = draw(tensor_specs(draw(_broadcastable(logits["sizes"])), dtype, specials=False))
    else:
        t_shape = logits["sizes"][:1] + extra if len(logits["sizes"]) > 1 else []
        lo, hi = (-1, c + 1) if draw(st.integers(0, 4)) == 0 else (0, c)
        target = draw(tensor_specs(t_shape, draw(st.sampled_from(["int64", "int64", "int32", "float32"])), lo=lo, hi=hi,
                                   specials=False))
        target["nograd"] = True
    return {"family": "loss", "op": name, "inputs": [logits, target], "args": args, "grad": draw(st.booleans())}


@st.composite
def index_cases(draw):
    name = draw(st.sampled_from(ops_of("index")))
    dtype = draw(_dtype())
    sizes = draw(shapes(min_dims=1))
    nd = len(sizes)
    dim = draw(st.integers(-nd, nd - 1)) if draw(st.integers(0, 9)) else nd
    size = sizes[dim] if -nd <= dim < nd else 1
    bad = draw(st.integers(0, 5)) == 0
    lo, hi = (-size - 1, size + 1) if bad else ((-size if name in ("index", "take") else 0), max(size, 1))
    itype = draw(st.sampled_from(["int64", "int64", "int32"] + (["float32"] if bad else [])))
    x = draw(tensor_specs(sizes, dtype))
    args: Dict[str, Any] = {"dim": dim, "value": draw(st.sampled_from([0, -1.5, 3]))}
    if name in ("index_select", "index"):
        idx = draw(tensor_specs(draw(shapes(max_dims=1 if name == "index_select" else 2)), itype, lo=lo, hi=hi,
                                specials=False))
        inputs = [x, idx]
    elif name in ("gather", "scatter_add"):
        isz = [draw(st.integers(0, s)) for s in sizes]
        idx = draw(tensor_specs(isz, itype, lo=lo, hi=hi, specials=False))
        inputs = [x, idx] + ([draw(tensor_specs(isz, dtype))] if name == "scatter_add" else [])
    elif name == "embedding":
        v = sizes[0]
        inputs = [draw(tensor_specs(sizes[:2] if nd > 1 else sizes + [3], dtype)),
                  draw(tensor_specs(draw(shapes(max_dims=2)), itype, lo=-1 if bad else 0, hi=v + (1 if bad else 0),
                                    specials=False))]
    elif name == "take":
        numel = math.prod(sizes)
        inputs = [x, draw(tensor_specs(draw(shapes(max_dims=2)), itype, lo=-numel - bad, hi=numel + bad,
                                       specials=False))]
    elif name == "index_put_acc":
        idx = draw(tensor_specs([draw(st.integers(0, 4))], itype, lo=lo if dim == 0 else 0, hi=hi if dim == 0 else sizes[0],
                                specials=False))
        inputs = [x, idx, draw(tensor_specs(idx["sizes"] + sizes[1:], dtype))]
    else:  # masked_fill
        inputs = [x, draw(tensor_specs(draw(_broadcastable(sizes)), "float32"))]
    for s in inputs[1:]:
        s["nograd"] = s["dtype"] not in ("float32", "float64") or name in ("masked_fill",)
    return {"family": "index", "op": name, "inputs": inputs, "args": args, "grad": _grad_ok(dtype) and draw(st.booleans())}


@st.composite
def shape_cases(draw):
    name = draw(st.sampled_from(ops_of("shape")))
    dtype = draw(_dtype())
    sizes = draw(shapes(min_dims=1 if name in ("cat", "tril") else 0))
    nd = len(sizes)
    args = {"dim": draw(st.integers(-nd - 1, nd)), "k": draw(st.integers(-3, 3)),
            "reps": [draw(st.integers(0, 2)) for _ in range(max(nd, draw(st.integers(0, 3))))]}
    if name in ("cat", "stack"):
        inputs = []
        for _ in range(draw(st.integers(1, 3))):
            s = list(sizes)
            if name == "cat" and nd and -nd <= args["dim"] < nd and draw(st.booleans()):
                s[args["dim"]] = draw(st.integers(0, 3))
            if draw(st.integers(0, 9)) == 0 and s:  # a tensor that does not fit
                s[0] += 1
            inputs.append(draw(tensor_specs(s, dtype if draw(st.integers(0, 4)) else draw(_dtype()))))
    else:
        inputs = [draw(tensor_specs(sizes if name != "tril" or nd >= 2 else sizes + [3], dtype))]
    return {"family": "shape", "op": name, "inputs": inputs, "args": args, "grad": _grad_ok(dtype) and draw(st.booleans())}


@st.composite
def random_cases(draw):
    name = draw(st.sampled_from(ops_of("random")))
    dtype = draw(_dtype(FLOATS + (INTS if name == "randint_like" else [])))
    sizes = draw(shapes())
    spec = draw(tensor_specs(sizes, dtype, specials=False))
    args: Dict[str, Any] = {}
    if name == "bernoulli":
        spec["scale"] = 0.5  # probabilities around [-1, 1]: some out of range
        if draw(st.booleans()):
            spec["specials"] = draw(st.booleans())
        else:
            args["p"] = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, -0.1]))
    elif name == "dropout":
        args["p"] = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, -0.1]))
    elif name == "normal_":
        args = {"mean": draw(st.sampled_from([0.0, 2.0])), "std": draw(st.sampled_from([1.0, 0.0, -1.0]))}
    elif name == "uniform_":
        args = {"from": draw(st.sampled_from([0.0, -1.0])), "to": draw(st.sampled_from([1.0, -2.0, 0.0]))}
    elif name == "randint_like":
        args = {"low": draw(st.sampled_from([0, -3, 5])), "high": draw(st.sampled_from([1, 5, 300]))}
    else:  # multinomial: rows of probabilities (some negative, some all zero)
        spec["sizes"] = spec["sizes"][:2] or [3]
        spec = draw(tensor_specs(spec["sizes"], dtype, specials=False))
        spec["scale"] = draw(st.sampled_from([0.0, 1.0]))
        args = {"n": draw(st.integers(0, 5)), "replacement": draw(st.booleans())}
    return {"family": "random", "op": name, "inputs": [spec], "args": args, "grad": False}


@st.composite
def fallback_cases(draw):
    name = draw(st.sampled_from(ops_of("fallback")))
    dtype = draw(_dtype(["float32", "float64", "float64"] + (["int64"] if name in ("hypot", "cross", "trace") else [])))
    if name in ("hypot", "lgamma", "kthvalue", "cross"):
        sizes = draw(shapes(min_dims=1))
        if name == "cross":
            sizes[-1] = 3 if draw(st.integers(0, 5)) else sizes[-1]
    else:
        n = draw(st.integers(0, 4))
        sizes = draw(st.sampled_from([[], [2], [0]])) + [n, n if draw(st.integers(0, 9)) else n + 1]
    spec = draw(tensor_specs(sizes, dtype, specials=False))
    spec["scale"] = 1.0
    last = sizes[-1] if sizes else 1
    args = {"k": draw(st.integers(0, last + 1))}
    # kthvalue's gradient lands on the index it returns, which CPU leaves unspecified among equal values (an
    # expanded row is all ties): test_order_stats.py checks it on rows without ties.
    grad = _grad_ok(dtype) and name != "kthvalue" and draw(st.booleans())
    return {"family": "fallback", "op": name, "inputs": [spec], "args": args, "grad": grad}


@st.composite
def wide_cases(draw):
    name = draw(st.sampled_from(ops_of("wide")))
    dtype = draw(_dtype(["float32", "float32", "float64"]))
    grad = draw(st.booleans()) and name != "wide_argmax"
    if name in ("wide_mm", "wide_bmm"):
        m, k, n = (draw(st.sampled_from([1, 15, 64, 65, 130, 257])) for _ in range(3))
        batch = [draw(st.integers(1, 3))] if name == "wide_bmm" else []
        inputs = [draw(tensor_specs(batch + [m, k], dtype, expand=False, specials=False)),
                  draw(tensor_specs(batch + [k, n], dtype, expand=False, specials=False))]
        return {"family": "wide", "op": name, "inputs": inputs, "args": {}, "grad": grad}
    long_, short = draw(st.sampled_from([2, 17, 64, 255, 256, 1000, 4097])), draw(st.sampled_from([1, 3, 8]))
    sizes = [short, long_] if draw(st.booleans()) else [long_, short]
    inputs = [draw(tensor_specs(sizes, dtype, specials=False))]
    if name == "wide_cross_entropy":
        inputs.append(draw(tensor_specs(sizes[:1], "int64", lo=0, hi=sizes[1], specials=False)))
        inputs[-1]["nograd"] = True
    return {"family": "wide", "op": name, "inputs": inputs, "args": {"dim": draw(st.sampled_from([0, 1, -1]))},
            "grad": grad}


CASES = {
    "unary": unary_cases, "binary": binary_cases, "reduce": reduce_cases, "blas": blas_cases, "conv": conv_cases,
    "norm": norm_cases, "loss": loss_cases, "index": index_cases, "shape": shape_cases, "random": random_cases,
    "fallback": fallback_cases, "wide": wide_cases,
}


if __name__ == "__main__":
    main(sys.argv)
