"""Conformance harness: PyTorch's OpInfo samples, run on CPU and on the opencl device, compared.

Shared by the CI test (test_conformance.py), the device-generic tests (test_device_generic.py)
and the full sweep (scripts/conformance.sh, which runs this file as a script).

For one OpInfo and one dtype, `check_op` generates the OpInfo's sample inputs on the CPU under a
fixed seed, copies every tensor to the device keeping its exact layout (sizes, strides, storage
offset, overlap), and also derives a non-contiguous copy of each sample (same values, strided
layout). It runs the op on both sides and compares:
  forward   outputs (dtype, shape, values), the sample's tensors after the call (ops that write
            their inputs: running stats, in-place kwargs), the in-place variant where the CPU
            accepts it, and the non-contiguous copy;
  backward  torch.autograd.grad of the outputs against a fixed random cotangent, for every input
            that requires grad, where the OpInfo supports autograd in that dtype.
Random ops (the CPU gives different results under different seeds for some sample, with the
seeding that OpInfos wrap random ops in disabled) and uninitialised outputs (empty*) are checked
by shape and dtype only; every other op's values are compared. Sparse layouts and complex dtypes are out of scope: skipped,
and counted as skipped. `fallback_stats()` is diffed around the device calls: an op is native when
no operator reached the CPU fallback.

As a script:  python _opinfo_harness.py sweep|report|update-xfail ...  (see scripts/conformance.sh)
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

import torch

import torch_opencl  # noqa: F401  (before common_device_type: it looks for the backend at import)

DEV = "opencl"
HERE = os.path.dirname(os.path.abspath(__file__))
XFAIL_PATH = os.path.join(HERE, "conformance_xfail.txt")

# Tolerances: float32 ~1e-5 relative for elementwise, 1e-4 for reductions/GEMM (COMMON.md);
# gradients sum over the cotangent, so they get the reduction tolerance.
TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}
GRAD_TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-4),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}

# Outputs whose values are unspecified: only shape and dtype are compared.
UNINITIALISED = re.compile(r"(^|\.)(new_)?empty(_like|_strided|_permuted)?$")
# Seeds under which every sample runs on the CPU before the op counts as deterministic: a random
# op differs under some of them for some sample (a one-element dropout agrees under two seeds
# half the time, so two are not enough).
RANDOM_PROBE_SEEDS = (1, 2, 3, 4, 5)
# Ops whose indices among equal values are unspecified (PyTorch documents no order for ties; CPU's
# topk takes them in the order its heap leaves them, [1, 6, 4] for the 3s of [1, 3, 3, 2, 3, 0, 3]).
# Their values are compared as usual; their indices must select those values, each index once.
TIE_ORDER_FREE = {"topk"}
# Selections along a dim whose index among equal values CPU leaves to its algorithm (kthvalue's quickselect,
# mode's std::sort, unstable past 16 elements): their values are compared as usual; their indices must point at
# elements equal to the values.
SELECTION_TIE_FREE = {"kthvalue", "mode"}


class Skip(Exception):
    """The sample (or op) is out of scope: sparse layout, complex dtype."""


def _op_db():
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def all_ops() -> Dict[str, Any]:
    """{full_name: OpInfo} for every OpInfo in PyTorch's op_db (first one wins on a clash)."""
    ops: Dict[str, Any] = {}
    for op in _op_db():
        ops.setdefault(op.full_name, op)
    return ops


# --- Copying samples: exact layouts, and a derived non-contiguous layout ---------------------


def _copy_layout(t: torch.Tensor, device: str) -> torch.Tensor:
    """A copy of `t` on `device` with the same sizes, strides and storage offset (the whole
    storage travels, so overlapping and offset views stay what they were). A tensor that
    requires grad becomes a leaf that requires grad."""
    if t.layout != torch.strided:
        raise Skip(f"layout {t.layout}")
    if t.is_complex():
        raise Skip("complex dtype")
    with torch.no_grad():
        n = t.untyped_storage().nbytes() // max(t.element_size(), 1)
        base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
        base = base.to(device, copy=True)
        d = base.as_strided(t.size(), t.stride(), t.storage_offset())
    d = d.detach()
    if t.requires_grad:
        d.requires_grad_()
    return d


def _noncontig(t: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous CPU layout (every stride doubled), or `t` itself
    when no such layout differs (0-d, one element)."""
    if t.layout != torch.strided or t.dim() == 0 or t.numel() <= 1:
        return t
    with torch.no_grad():
        buf = torch.zeros(*t.shape, 2, dtype=t.dtype)
        nc = buf[..., 0]
        nc.copy_(t)
    nc = nc.detach()
    if t.requires_grad:
        nc.requires_grad_()
    return nc


def tree_map(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if type(x) is list:
        return [tree_map(fn, v) for v in x]
    if type(x) is tuple:
        return tuple(tree_map(fn, v) for v in x)
    if type(x) is dict:
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def tree_tensors(x) -> List[torch.Tensor]:
    out: List[torch.Tensor] = []

    def visit(v):
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):  # includes torch.return_types
            for e in v:
                visit(e)
        elif isinstance(v, dict):
            for e in v.values():
                visit(e)

    visit(x)
    return out


class Sample:
    """input/args/kwargs of one SampleInput, as plain containers."""

    def __init__(self, input, args, kwargs, post):
        self.input, self.args, self.kwargs, self.post = input, args, kwargs, post

    @staticmethod
    def of(s) -> "Sample":
        return Sample(s.input, tuple(s.args), dict(s.kwargs), s.output_process_fn_grad)

    def map(self, fn) -> "Sample":
        return Sample(tree_map(fn, self.input), tree_map(fn, self.args), tree_map(fn, self.kwargs), self.post)

    def tensors(self) -> List[torch.Tensor]:
        return tree_tensors([self.input, list(self.args), self.kwargs])

    def describe(self) -> str:
        def d(v):
            if isinstance(v, torch.Tensor):
                s = f"T{list(v.shape)}"
                if v.layout != torch.strided:
                    s += f"/{str(v.layout).replace('torch.', '')}"
                elif v.dim() and not v.is_contiguous():
                    s += f"/s{list(v.stride())}"
                return s
            if isinstance(v, (list, tuple)):
                return "[" + ",".join(d(e) for e in v) + "]"
            if isinstance(v, dict):
                return "{" + ",".join(f"{k}={d(e)}" for k, e in v.items()) + "}"
            return repr(v)

        parts = [d(self.input)] + [d(a) for a in self.args] + [f"{k}={d(v)}" for k, v in self.kwargs.items()]
        text = "(" + ", ".join(parts) + ")"
        return text if len(text) < 160 else text[:157] + "..."


# --- Comparison ------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def compare(cpu, dev, tol, values=True, what="output"):
    """Structural comparison of a CPU result and a device result."""
    if isinstance(cpu, torch.Tensor):
        if not isinstance(dev, torch.Tensor):
            raise Mismatch(f"{what}: device gave {type(dev).__name__}, CPU a tensor")
        if dev.device.type != cpu.device.type and not (cpu.device.type == "cpu" and dev.device.type == DEV):
            raise Mismatch(f"{what}: on {dev.device}, expected {DEV}")
        if dev.dtype != cpu.dtype:
            raise Mismatch(f"{what}: dtype {dev.dtype}, CPU {cpu.dtype}")
        if dev.shape != cpu.shape:
            raise Mismatch(f"{what}: shape {list(dev.shape)}, CPU {list(cpu.shape)}")
        if not values or cpu.layout != torch.strided:
            return
        d = dev.detach().cpu()
        c = cpu.detach()
        kw = tol.get(c.dtype, {}) if c.is_floating_point() else dict(rtol=0, atol=0)
        try:
            torch.testing.assert_close(d, c, equal_nan=True, check_stride=False, **kw)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            detail = "; ".join(ln for ln in lines[1:3])
            raise Mismatch(f"{what}: {lines[0] if lines else 'values differ'} {detail}".strip()) from None
        return
    if isinstance(cpu, (list, tuple)):
        if not isinstance(dev, (list, tuple)) or len(dev) != len(cpu):
            raise Mismatch(f"{what}: structure differs ({type(dev).__name__} vs {type(cpu).__name__})")
        for i, (c, d) in enumerate(zip(cpu, dev)):
            compare(c, d, tol, values, f"{what}[{i}]")
        return
    if isinstance(cpu, dict):
        for k in cpu:
            compare(cpu[k], dev[k], tol, values, f"{what}[{k}]")
        return
    if isinstance(cpu, float) and isinstance(dev, float):
        if values and not (math.isclose(cpu, dev, rel_tol=1e-4, abs_tol=1e-5) or (math.isnan(cpu) and math.isnan(dev))):
            raise Mismatch(f"{what}: {dev} vs CPU {cpu}")
        return
    if values and cpu != dev and not (cpu is None and dev is None):
        raise Mismatch(f"{what}: {dev!r} vs CPU {cpu!r}")


def _tie_checked_indices(cpu_s, cpu_out, dev_s, dev_out):
    """For topk (values, indices): raises Mismatch when the device's indices do not select its
    values from the input or repeat an index along the dim; otherwise returns the device result
    with CPU's indices in their place, so that compare() checks everything else."""
    values, indices = dev_out
    args = list(cpu_s.args) + [None] * 2
    dim = cpu_s.kwargs.get("dim", args[1] if args[1] is not None else -1)
    src = dev_s.input.detach().cpu()
    idx = indices.detach().cpu()
    if src.dim() == 0:
        src, idx, dim = src.reshape(1), idx.reshape(1), 0
    picked = src.gather(dim, idx)
    try:
        torch.testing.assert_close(picked, values.detach().cpu().reshape(picked.shape), equal_nan=True, rtol=0,
                                   atol=0)
    except AssertionError:
        raise Mismatch("output[1]: the indices do not select the returned values from the input") from None
    if (idx.sort(dim=dim).values.diff(dim=dim) == 0).any():
        raise Mismatch("output[1]: an index appears twice along the dim")
    return type(dev_out)((values, cpu_out[1].to(indices.device)))


def _selection_checked_indices(name, cpu_s, cpu_out, dev_s, dev_out):
    """For kthvalue and mode (values, indices): raises Mismatch when the device's indices do not point at its
    values in the input; otherwise returns the device result with CPU's indices in their place."""
    values, indices = dev_out
    args = list(cpu_s.args)[1 if name == "kthvalue" else 0:] + [None] * 2
    dim = cpu_s.kwargs.get("dim", args[0] if args[0] is not None else -1)
    keepdim = cpu_s.kwargs.get("keepdim", args[1] if args[1] is not None else False)
    src = dev_s.input.detach().cpu()
    idx = indices.detach().cpu()
    if src.dim() == 0:
        ok = idx.item() == 0
    else:
        picked = src.gather(dim, idx if keepdim else idx.unsqueeze(dim))
        picked = picked if keepdim else picked.squeeze(dim)
        ok = torch.equal(picked.isnan(), values.detach().cpu().isnan()) and bool(
            ((picked == values.detach().cpu()) | picked.isnan()).all())
    if not ok:
        raise Mismatch("output[1]: the indices do not point at the returned values in the input")
    return type(dev_out)((values, cpu_out[1].to(indices.device)))


def _fallback_snapshot() -> Dict[str, int]:
    return torch.opencl.fallback_stats()


def _fallback_diff(before: Dict[str, int], after: Dict[str, int]) -> List[str]:
    return sorted(k for k, v in after.items() if v > before.get(k, 0))


def _portable(text: str) -> str:
    """Drops what names this machine (the OpenCL device's name after `opencl:N`), so that the
    expected-failure list reads the same wherever the sweep runs."""
    return re.sub(r"(opencl:\d+) \([^()]*(\([^()]*\)[^()]*)*\)", r"\1", text)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    line = text[0] if text else ""
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    return f"{type(e).__name__}: {line}"[:240]


# --- One op, one dtype -----------------------------------------------------------------------


@dataclass
class Result:
    op: str
    dtype: str
    forward: str = "skip"  # pass | fail | skip
    backward: str = "n/a"  # pass | fail | n/a
    native: Optional[bool] = None  # forward: no operator reached the fallback (None: nothing ran)
    fallback_ops: List[str] = field(default_factory=list)  # forward and in-place calls
    native_backward: Optional[bool] = None  # backward: no operator reached the fallback
    grad_fallback_ops: List[str] = field(default_factory=list)
    seconds: float = 0.0
    samples: int = 0
    checked: str = "values"  # values | shape+dtype (random or uninitialised outputs)
    error: str = ""  # forward: first failure
    grad_error: str = ""  # backward: first failure
    skip_reason: str = ""

    def key(self, phase: str) -> str:
        return f"{self.op} {self.dtype} {phase}"


def seed_of(name: str, dtype: str) -> int:
    return zlib.crc32(f"{name}/{dtype}".encode()) & 0x7FFFFFFF


def _seed(seed: int) -> None:
    """Seeds the CPU generator only: torch.manual_seed also visits every lazy device module,
    which costs milliseconds per call (thousands of calls per sweep). Device random streams
    are never compared by value."""
    torch.default_generator.manual_seed(seed)


class _NoSeeding:
    """Makes torch.manual_seed a no-op while active: OpInfos wrap random ops in wrapper_set_seed,
    which seeds every generator with the same number before each call, so that two runs under
    different seeds would agree and a random op would pass for a deterministic one."""

    def __enter__(self):
        self._orig = torch.manual_seed, torch.random.manual_seed
        torch.manual_seed = torch.random.manual_seed = lambda seed: torch.default_generator
        return self

    def __exit__(self, *exc):
        torch.manual_seed, torch.random.manual_seed = self._orig
        return False


def _to_device(s: Sample, keep_cpu: Optional[List[bool]] = None) -> Sample:
    """The sample on the device; tensors flagged in keep_cpu (in Sample.tensors() order) stay."""
    counter = iter(range(1 << 30))

    def move(t):
        i = next(counter)
        device = "cpu" if keep_cpu and i < len(keep_cpu) and keep_cpu[i] else DEV
        return _copy_layout(t, device)

    return s.map(move)


def _cpu_placement(op, dtype, grad, dtype_name, count) -> Dict[int, List[bool]]:
    """For each sample the OpInfo generates for the device: which tensors it leaves on the CPU."""
    _seed(seed_of(op.full_name, dtype_name))
    out = {}
    try:
        for i, s in enumerate(op.sample_inputs(DEV, dtype, requires_grad=grad, set_seed=False)):
            flags = [t.device.type == "cpu" for t in Sample.of(s).tensors()]
            if any(flags):
                out[i] = flags
    except Exception:
        pass
    return out


def _call(fn, s: Sample):
    return fn(s.input, *s.args, **s.kwargs)


def _is_random(op, fn, samples: List[Sample]) -> bool:
    """True when the CPU gives different results for some sample under different seeds."""
    for s in samples:
        outs = []
        try:
            for seed in RANDOM_PROBE_SEEDS:
                _seed(seed)
                c = s.map(lambda t: _copy_layout(t, "cpu"))
                with torch.no_grad(), _NoSeeding():
                    outs.append(s.post(_call(fn, c)))
        except Skip:
            continue
        except Exception:  # the CPU rejects the sample: the reference run will skip it
            continue
        exact = {torch.float32: dict(rtol=0, atol=0), torch.float64: dict(rtol=0, atol=0)}
        for other in outs[1:]:
            try:
                compare(outs[0], other, exact)
            except Exception:
                return True
    return False


def _supports_grad(op, dtype) -> bool:
    return bool(op.supports_autograd) and dtype.is_floating_point and dtype in op.supported_backward_dtypes("cpu")


def check_op(op, dtype_name: str, max_samples: Optional[int] = None, noncontig: bool = True) -> Result:
    """Runs every sample of `op` in `dtype_name` on CPU and device; never raises for op failures."""
    dtype = DTYPES[dtype_name]
    r = Result(op.full_name, dtype_name)
    t0 = time.perf_counter()
    try:
        _check_op(op, dtype, r, max_samples, noncontig)
    except Skip as e:
        r.forward, r.backward, r.skip_reason = "skip", "n/a", str(e)
    r.seconds = round(time.perf_counter() - t0, 3)
    return r


def _check_op(op, dtype, r: Result, max_samples, noncontig_variant):
    if dtype not in op.supported_dtypes("cpu"):
        raise Skip(f"{dtype} not supported on CPU by this OpInfo")
    grad = _supports_grad(op, dtype)
    uninit = bool(UNINITIALISED.search(op.name))
    tol, gtol = TOLERANCES, GRAD_TOLERANCES
    fallback: set = set()
    grad_fallback: set = set()
    ran_device = False
    fwd_fail = ""
    bwd_fail = ""
    bwd_ran = False
    skipped_samples: List[str] = []

    _seed(seed_of(op.full_name, r.dtype))
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad, set_seed=False))
    except Exception as e:  # the OpInfo itself cannot make samples here
        raise Skip(f"sample generation failed: {_first_line(e)}")
    if max_samples is not None:
        samples = samples[:max_samples]
    fn = op.op
    random_op = not uninit and _is_random(op, fn, [Sample.of(raw) for raw in samples])
    inplace_fn = op.get_inplace()
    placement: Dict[int, List[bool]] = {}  # sample index -> per tensor: stays on the CPU
    cot_gen = torch.Generator().manual_seed(seed_of(op.full_name, "cotangent"))

    for index, raw in enumerate(samples):
        base = Sample.of(raw)
        variants = [("", base)]
        if noncontig_variant:
            nc = base.map(_noncontig)
            if any(a is not b for a, b in zip(nc.tensors(), base.tensors())):
                variants.append(("noncontig ", nc))
        for label, cpu_s in variants:
            tag = f"sample {index} {label}{cpu_s.describe()}"
            try:
                dev_s = _to_device(cpu_s, placement.get(index))
                cpu_run = cpu_s.map(lambda t: _copy_layout(t, "cpu"))
            except Skip as e:
                skipped_samples.append(str(e))
                continue
            values = not (random_op or uninit)
            if not values:
                r.checked = "shape+dtype"
            # CPU reference; a sample the CPU rejects is an error-input, not ours to judge.
            _seed(0)
            try:
                with torch.enable_grad():
                    cpu_out = cpu_s.post(_call(fn, cpu_run))
            except Exception:
                continue
            if any(t.layout != torch.strided or t.is_complex() for t in tree_tensors(cpu_out)):
                skipped_samples.append("sparse or complex output")
                continue
            r.samples += 1
            before = _fallback_snapshot()
            _seed(0)
            try:
                try:
                    with torch.enable_grad():
                        dev_out = dev_s.post(_call(fn, dev_s))
                except Exception as e:
                    # Some OpInfos keep an argument on the CPU (tensor_split's indices): the
                    # samples generated for the device say which; retry with that placement.
                    if "cpu" not in str(e).lower() or placement or index in placement:
                        raise
                    placement.update(_cpu_placement(op, dtype, grad, r.dtype, len(samples)))
                    if index not in placement:
                        raise
                    dev_s = _to_device(cpu_s, placement[index])
                    before = _fallback_snapshot()
                    with torch.enable_grad():
                        dev_out = dev_s.post(_call(fn, dev_s))
                ran_device = True
            except Exception as e:
                if "sparse" in str(e).lower():  # sparse layouts are out of scope
                    skipped_samples.append("sparse layout")
                    r.samples -= 1
                    continue
                ran_device = True
                fallback.update(_fallback_diff(before, _fallback_snapshot()))
                fwd_fail = fwd_fail or f"{tag}: {_first_line(e)}"
                continue
            fallback.update(_fallback_diff(before, _fallback_snapshot()))
            try:
                if op.name in TIE_ORDER_FREE and values:
                    dev_out = _tie_checked_indices(cpu_s, cpu_out, dev_s, dev_out)
                if op.name in SELECTION_TIE_FREE and values:
                    dev_out = _selection_checked_indices(op.name, cpu_s, cpu_out, dev_s, dev_out)
                compare(cpu_out, dev_out, tol, values)
                compare(cpu_run.tensors(), dev_s.tensors(), tol, values, what="input after call")
            except Mismatch as e:
                fwd_fail = fwd_fail or f"{tag}: {e}"[:300]
                continue
            except Exception as e:
                fwd_fail = fwd_fail or f"{tag}: compare: {_first_line(e)}"
                continue

            # Gradients: autograd.grad of sum(out * cotangent) on both sides.
            if grad:
                c_outs = [t for t in tree_tensors(cpu_out) if t.requires_grad and t.is_floating_point()]
                d_outs = [t for t in tree_tensors(dev_out) if t.requires_grad and t.is_floating_point()]
                c_ins = [t for t in cpu_run.tensors() if t.requires_grad]
                d_ins = [t for t in dev_s.tensors() if t.requires_grad]
                if c_outs and c_ins and len(c_outs) == len(d_outs) and len(c_ins) == len(d_ins):
                    cots = [torch.randn(t.shape, generator=cot_gen, dtype=t.dtype) for t in c_outs]
                    try:
                        c_grads = torch.autograd.grad(c_outs, c_ins, cots, allow_unused=True)
                    except Exception:
                        c_grads = None
                    if c_grads is not None:
                        bwd_ran = True
                        before = _fallback_snapshot()
                        try:
                            d_grads = torch.autograd.grad(d_outs, d_ins, [c.to(d.device) for c, d in zip(cots, d_outs)], allow_unused=True)
                            grad_fallback.update(_fallback_diff(before, _fallback_snapshot()))
                            compare(list(c_grads), list(d_grads), gtol, values, what="grad")
                        except Mismatch as e:
                            bwd_fail = bwd_fail or f"{tag}: {e}"[:300]
                        except Exception as e:
                            grad_fallback.update(_fallback_diff(before, _fallback_snapshot()))
                            bwd_fail = bwd_fail or f"{tag}: {_first_line(e)}"
                elif len(c_outs) != len(d_outs):
                    bwd_ran = True
                    bwd_fail = bwd_fail or f"{tag}: {len(d_outs)} outputs require grad, CPU {len(c_outs)}"

            # The in-place variant, where the CPU accepts it for this sample.
            if inplace_fn is not None and isinstance(cpu_s.input, torch.Tensor):
                nograd = lambda t: _copy_layout(t.detach(), "cpu")  # noqa: E731
                c_ip = cpu_s.map(nograd)
                _seed(0)
                try:
                    c_ret = _call(inplace_fn, c_ip)
                except Exception:
                    continue
                d_ip = cpu_s.map(lambda t: _copy_layout(t.detach(), DEV))
                before = _fallback_snapshot()
                _seed(0)
                try:
                    d_ret = _call(inplace_fn, d_ip)
                    fallback.update(_fallback_diff(before, _fallback_snapshot()))
                    if isinstance(d_ret, torch.Tensor) and d_ret is not d_ip.input:
                        raise Mismatch("in-place variant did not return its input")
                    compare(c_ip.tensors(), d_ip.tensors(), tol, values, what="in-place result")
                    del c_ret
                except Mismatch as e:
                    fwd_fail = fwd_fail or f"{tag}: {e}"[:300]
                except Exception as e:
                    fallback.update(_fallback_diff(before, _fallback_snapshot()))
                    fwd_fail = fwd_fail or f"{tag}: in-place: {_first_line(e)}"

    if r.samples == 0:
        reason = skipped_samples[0] if skipped_samples else "no sample the CPU accepts"
        raise Skip(reason)
    r.forward = "fail" if fwd_fail else "pass"
    r.error = fwd_fail
    if grad and bwd_ran:
        r.backward = "fail" if bwd_fail else "pass"
        r.grad_error = bwd_fail
        r.native_backward = not grad_fallback
        r.grad_fallback_ops = sorted(grad_fallback)
    r.fallback_ops = sorted(fallback)
    r.native = (not fallback) if ran_device else None


# --- Expected failures -----------------------------------------------------------------------


def read_xfail(path: str = XFAIL_PATH) -> Dict[str, str]:
    """{"op dtype phase": reason} from lines `op dtype phase  # reason`."""
    out: Dict[str, str] = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            head, _, reason = line.partition("#")
            fields = head.split()
            if len(fields) != 3:
                raise ValueError(f"{path}: bad line {line!r}: expected 'op dtype phase  # reason'")
            out[" ".join(fields)] = reason.strip()
    return out


XFAIL_HEADER = """\
# Operators whose OpInfo samples do not yet match CPU PyTorch on the opencl device.
# One line per failure: `op dtype phase  # first failing sample and the first line of its error`.
# Generated by `scripts/conformance.sh --update-xfail`; do not edit by hand except to remove
# lines. The CI test (test/test_conformance.py) fails when a listed entry starts passing.
"""


def write_xfail(entries: Dict[str, str], path: str = XFAIL_PATH) -> None:
    with open(path, "w") as f:
        f.write(XFAIL_HEADER)
        for key in sorted(entries):
            reason = _portable(entries[key].replace("\n", " "))
            f.write(f"{key}  # {reason}\n")


def failures_of(r: Result) -> Dict[str, str]:
    out = {}
    if r.forward == "fail":
        out[r.key("forward")] = r.error
    if r.backward == "fail":
        out[r.key("backward")] = r.grad_error
    return out


def verdict(r: Result, xfail: Dict[str, str]) -> List[str]:
    """Problems of a result against the expected-failure list (empty when it conforms)."""
    problems = []
    for phase, status, err in (("forward", r.forward, r.error), ("backward", r.backward, r.grad_error)):
        key = r.key(phase)
        if status == "fail" and key not in xfail:
            problems.append(f"FAIL {key}: {err}")
        elif status == "pass" and key in xfail:
            problems.append(f"XPASS {key}: now passes; remove it from test/conformance_xfail.txt")
    return problems


# --- The sweep: a worker process per batch, a timeout per op ---------------------------------


def _worker(args) -> None:
    """Reads `op<TAB>dtype` lines on stdin, writes one JSON result per line on stdout."""
    torch.opencl.set_fallback_mode("silent")
    import warnings

    warnings.filterwarnings("ignore")
    ops = all_ops()
    out = sys.stdout
    sys.stdout = sys.stderr  # ops that print must not corrupt the protocol
    out.write("READY\n")
    out.flush()
    for line in sys.stdin:
        name, dtype = line.rstrip("\n").split("\t")
        try:
            r = check_op(ops[name], dtype)
        except BaseException as e:  # noqa: BLE001 - a harness bug must not end the sweep
            r = Result(name, dtype, forward="fail", error=f"harness: {_first_line(e)}")
            traceback.print_exc()
        out.write(json.dumps(asdict(r)) + "\n")
        out.flush()


def _sweep(args) -> None:
    import select
    import subprocess

    names = sorted(all_ops())
    if args.ops:
        wanted = set(args.ops.split(","))
        names = [n for n in names if n in wanted]
    jobs = [(n, d) for d in args.dtypes.split(",") for n in names]
    done = set()
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            for line in f:
                rec = json.loads(line)
                done.add((rec["op"], rec["dtype"]))
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        open(args.out, "w").close()
    jobs = [j for j in jobs if j not in done]
    print(f"conformance: {len(jobs)} (op, dtype) jobs, timeout {args.timeout}s each", flush=True)
    proc = None
    sink = open(args.out, "a")
    start = time.time()

    def start_worker():
        p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, cwd=HERE,
        )
        ready = p.stdout.readline()
        if ready.strip() != "READY":
            raise RuntimeError("conformance worker failed to start")
        return p

    for i, (name, dtype) in enumerate(jobs):
        if proc is None or proc.poll() is not None:
            proc = start_worker()
        proc.stdin.write(f"{name}\t{dtype}\n")
        proc.stdin.flush()
        t0 = time.time()
        line = ""
        while time.time() - t0 < args.timeout:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                break
            if proc.poll() is not None:
                break
        if line:
            rec = json.loads(line)
        else:
            crashed = proc.poll() is not None
            if not crashed:
                proc.kill()
            rc = proc.wait()
            proc = None
            why = f"worker crashed (exit {rc})" if crashed else f"timeout after {args.timeout:.0f}s"
            rec = asdict(Result(name, dtype, forward="fail", seconds=round(time.time() - t0, 1), error=why))
        sink.write(json.dumps(rec) + "\n")
        sink.flush()
        print(f"[{i + 1}/{len(jobs)} {time.time() - start:.0f}s] {name} {dtype}: "
              f"fwd {rec['forward']} bwd {rec['backward']} {rec['seconds']}s", flush=True)
    if proc is not None:
        proc.stdin.close()
        proc.wait()
    sink.close()


def load_results(path: str) -> List[Result]:
    latest: Dict[tuple, Result] = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                latest[(rec["op"], rec["dtype"])] = Result(**rec)
    return [latest[k] for k in sorted(latest)]


def _update_xfail(args) -> None:
    results = load_results(args.out)
    old = read_xfail()
    swept = {(r.op, r.dtype) for r in results}
    # Keep entries of (op, dtype) pairs this run did not cover; replace the rest.
    entries = {k: v for k, v in old.items() if tuple(k.split()[:2]) not in swept}
    for r in results:
        entries.update(failures_of(r))
    write_xfail(entries)
    print(f"conformance: wrote {len(entries)} expected failures to {XFAIL_PATH}")


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "n/a"


def _order(dtype: str) -> int:
    return list(DTYPES).index(dtype) if dtype in DTYPES else 99


def _path(native: Optional[bool], ops: List[str]) -> str:
    if native is None:
        return ""
    if native:
        return "native"
    names = [o.replace("aten::", "") for o in ops]
    return "fallback: " + ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _cell(text: str, limit: int = 160) -> str:
    text = _portable(text).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _report(args) -> None:
    results = load_results(args.out)
    by_dtype: Dict[str, List[Result]] = {}
    for r in results:
        by_dtype.setdefault(r.dtype, []).append(r)
    dtypes = sorted(by_dtype, key=_order)
    lines = ["# Conformance against CPU PyTorch (OpInfo samples)", ""]
    lines.append(
        "Generated by `scripts/conformance.sh` (harness: `test/_opinfo_harness.py`) from PyTorch's OpInfo "
        "database (`op_db`): every sample input, plus a non-contiguous copy of it, runs on CPU and on the "
        "opencl device (PoCL); outputs, mutated inputs, in-place variants and gradients (autograd.grad "
        "against a fixed random cotangent) are compared. *Forward pass* counts the CPU fallback as a "
        "pass when its answer is right; *native* means no operator reached the fallback during the "
        "forward (or backward) calls. Random ops and uninitialised outputs are compared by shape and "
        "dtype only. Sparse layouts and complex dtypes are out of scope (counted as skipped)."
    )
    lines += [
        "",
        "| dtype | OpInfos | tested | skipped | forward pass | forward + gradients pass | native forward | native backward |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dtype in dtypes:
        rs = by_dtype[dtype]
        tested = [r for r in rs if r.forward != "skip"]
        fwd = [r for r in tested if r.forward == "pass"]
        with_grad = [r for r in tested if r.backward != "n/a"]
        both = [r for r in with_grad if r.forward == "pass" and r.backward == "pass"]
        native = [r for r in tested if r.native]
        native_bwd = [r for r in with_grad if r.native_backward]
        lines.append(
            f"| {dtype} | {len(rs)} | {len(tested)} | {len(rs) - len(tested)} | "
            f"{len(fwd)}/{len(tested)} ({_pct(len(fwd), len(tested))}) | "
            f"{len(both)}/{len(with_grad)} ({_pct(len(both), len(with_grad))}) | "
            f"{len(native)}/{len(tested)} ({_pct(len(native), len(tested))}) | "
            f"{len(native_bwd)}/{len(with_grad)} ({_pct(len(native_bwd), len(with_grad))}) |"
        )
    total = sum(r.seconds for r in results)
    lines += ["", f"Time of the checks: {total:.0f} s in all.", ""]

    # Wrong answers or errors with no fallback involved: bugs of native kernels.
    native_fail = []
    for r in results:
        if r.forward == "fail" and r.native:
            native_fail.append((r.op, r.dtype, "forward", r.error))
        if r.backward == "fail" and r.native_backward and r.native:
            native_fail.append((r.op, r.dtype, "backward", r.grad_error))
    lines += ["## Failures on native paths (no operator reached the fallback)", ""]
    if native_fail:
        lines += ["| op | dtype | phase | first failing sample |", "|---|---|---|---|"]
        lines += [f"| {o} | {d} | {p} | {_cell(e, 300)} |" for o, d, p, e in native_fail]
    else:
        lines.append("None.")
    lines.append("")

    cats: Dict[str, int] = {}
    for r in results:
        for err in (r.error, r.grad_error):
            if err:
                cats[_category(err)] = cats.get(_category(err), 0) + 1
    if cats:
        lines += ["## Failure categories", "", "| count | category |", "|---|---|"]
        for c, n in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {n} | {_cell(c)} |")
        lines.append("")
    for dtype in dtypes:
        lines += [
            f"## {dtype}", "",
            "| op | forward | backward | forward path | backward path | time (s) | samples | notes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in by_dtype[dtype]:
            note = r.skip_reason or r.error or r.grad_error
            if r.checked != "values" and r.forward != "skip":
                note = ("shape+dtype only. " + note).strip()
            bpath = _path(r.native_backward, r.grad_fallback_ops) if r.backward != "n/a" else ""
            lines.append(
                f"| {r.op} | {r.forward} | {r.backward} | {_cell(_path(r.native, r.fallback_ops), 80)} | "
                f"{_cell(bpath, 80)} | {r.seconds:.2f} | {r.samples} | {_cell(note)} |"
            )
        lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(args.doc)), exist_ok=True)
    with open(args.doc, "w") as f:
        f.write("\n".join(lines))
    print(f"conformance: wrote {os.path.relpath(args.doc)}")


def _category(err: str) -> str:
    """A failure message without the sample: the part after the last 'sample N ...: '."""
    m = re.match(r"sample \d+ .*?\): (.*)$", err)
    text = _portable(m.group(1) if m else err)
    text = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", text)
    return text[:120]


def main(argv=None) -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("worker")
    for name in ("sweep", "report", "update-xfail"):
        s = sub.add_parser(name)
        s.add_argument("--out", default=os.path.join(HERE, "..", "build", "conformance", "results.jsonl"))
        s.add_argument("--doc", default=os.path.join(HERE, "..", "docs", "conformance.md"))
        if name == "sweep":
            s.add_argument("--dtypes", default="float32,float64,int64")
            s.add_argument("--ops", default="", help="comma-separated OpInfo full names (default: all)")
            s.add_argument("--timeout", type=float, default=300.0, help="seconds per (op, dtype)")
            s.add_argument("--resume", action="store_true", help="keep results already in --out")
    args = p.parse_args(argv)
    {"worker": _worker, "sweep": _sweep, "report": _report, "update-xfail": _update_xfail}[args.cmd](args)


if __name__ == "__main__":
    main()
