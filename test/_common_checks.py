"""The checks PyTorch's TestCommon makes of a device, for one OpInfo, cheaply (test_conformance_common.py runs
them over every OpInfo of op_db in CI). Our own code, written from what those checks assert:

  compare_cpu    the op on the device gives CPU's answer (forward; values, dtype, shape);
  noncontiguous  a non-contiguous copy of the sample gives the contiguous sample's answer on the device;
  variants       the method and in-place variants (and aliases) on the device agree with the function;
  out            with out=, the device writes the function's answer into the given tensor and returns it:
                 out (a matching out=), out_strided (a strided out= keeps its strides and storage),
                 out_resize (an out= of another shape is resized, with PyTorch's warning when it had elements,
                 as on CPU), out_device (an out= on the CPU, or inputs on the CPU with an out= on the device,
                 raises), out_dtype (an int64 out= for a float result: raises where CPU raises, else CPU's values).

float32 only, the first SAMPLES samples (plus the first with a 0-dim tensor for the out= device checks), no
gradients: the full OpInfo sweep (scripts/conformance.sh) covers dtypes, every sample and gradients.
`check(op)` returns {check name: first failure}; an op the checks cannot run (no float32, no sample the CPU
accepts, sparse or complex) gives {} with `skipped(op)` saying why.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Dict, List, Optional

import torch

import _opinfo_harness as H

DTYPE = torch.float32
SAMPLES = 2  # the first samples of each OpInfo; enough to meet every variant and out= path of the op
# A sample whose 0-dim tensor makes the out= device rules bite (a CPU 0-dim tensor passes for a scalar) is
# looked for among this many more.
ZERO_DIM_LOOKAHEAD = 8
CHECKS = ("compare_cpu", "noncontiguous", "variants", "out", "out_strided", "out_resize", "out_device", "out_dtype")


class _Skip(Exception):
    pass


def _samples(op) -> List[H.Sample]:
    H._seed(H.seed_of(op.full_name, "common"))
    gen = op.sample_inputs("cpu", DTYPE, requires_grad=False, set_seed=False)
    first = [H.Sample.of(s) for s in itertools.islice(gen, SAMPLES + ZERO_DIM_LOOKAHEAD)]
    chosen = first[:SAMPLES]
    zero_dim = [s for s in first[SAMPLES:] if any(t.dim() == 0 for t in s.tensors())]
    if zero_dim and not any(t.dim() == 0 for s in chosen for t in s.tensors()):
        chosen.append(zero_dim[0])
    return chosen


def _cpu(s: H.Sample) -> H.Sample:
    return s.map(lambda t: H._copy_layout(t.detach(), "cpu"))


def _dev(s: H.Sample, placement: Optional[List[bool]] = None) -> H.Sample:
    d = H._to_device(s.map(lambda t: t.detach()), placement)
    if "device" in d.kwargs:  # factory samples name the CPU; made for the device, they name it
        d.kwargs = dict(d.kwargs, device=H.DEV)
    return d


def _call(fn, s: H.Sample, **extra):
    return fn(s.input, *s.args, **s.kwargs, **extra)


def _tensor_result(out) -> bool:
    if isinstance(out, torch.Tensor):
        return out.layout == torch.strided and not out.is_complex()
    return (isinstance(out, (tuple, list)) and len(out) > 0
            and all(isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_complex() for t in out))


def _like(result, make):
    """An out= argument shaped as the function's result: a tensor, or a tuple of them."""
    if isinstance(result, torch.Tensor):
        return make(result)
    return tuple(make(t) for t in result)


def _tensors(x) -> List[torch.Tensor]:
    return [x] if isinstance(x, torch.Tensor) else list(x)


def _returned(ret, out):
    """What an out= call gave: its return, or the out= tensors themselves for ops that return nothing
    (split_with_sizes_copy, unbind_copy), as a tensor or a plain tuple."""
    ret = out if ret is None else ret
    return ret if isinstance(ret, torch.Tensor) else tuple(ret)


class _Op:
    """One OpInfo on one sample: CPU's answer, the device's, and how to compare them."""

    def __init__(self, op, sample: H.Sample, values: bool):
        self.op, self.s, self.values = op, sample, values
        H._seed(0)
        self.cpu_out = _call(op.op, _cpu(sample))  # raises: the CPU rejects the sample (not ours to judge)
        if not _tensor_result(self.cpu_out) and not isinstance(self.cpu_out, (int, float, bool)):
            raise _Skip("result is not strided real tensors")
        self.placement: Optional[List[bool]] = None

    def dev(self) -> H.Sample:
        return _dev(self.s, self.placement)

    def run_dev(self, fn, s=None, **extra):
        H._seed(0)
        return _call(fn, s if s is not None else self.dev(), **extra)

    def same(self, expected, got, what):
        # Ties among equal values leave indices to the algorithm: the values decide (the full sweep checks
        # that such indices select the values).
        if self.op.name in H.TIE_ORDER_FREE | H.SELECTION_TIE_FREE and isinstance(expected, tuple):
            expected, got = expected[0], got[0]
        if isinstance(expected, tuple):  # return_types too
            expected = tuple(expected)
        expected = H.tree_map(lambda t: t.detach().cpu(), expected)  # a device answer compares as CPU's
        H.compare(expected, got, H.TOLERANCES, self.values, what)


def _first_error(e: BaseException) -> str:
    return H._portable(H._first_line(e))


def check(op) -> Dict[str, str]:
    """{check: first failure} for one OpInfo (empty: every check that applies passes)."""
    if DTYPE not in op.supported_dtypes("cpu"):
        return {}
    try:
        samples = _samples(op)
    except Exception:
        return {}
    failures: Dict[str, str] = {}
    uninit = bool(H.UNINITIALISED.search(op.name))
    values = not (uninit or H._is_random(op, op.op, samples))

    def fail(name, tag, text):
        failures.setdefault(name, f"{tag}: {text}"[:300])

    for index, sample in enumerate(samples):
        tag = f"sample {index} {sample.describe()}"
        try:
            case = _Op(op, sample, values)
        except Exception:
            continue
        # compare_cpu: and learn which tensors the OpInfo keeps on the CPU (tensor_split's indices).
        try:
            try:
                dev_out = case.run_dev(op.op)
            except Exception as e:
                if "cpu" not in str(e).lower():
                    raise
                placed = H._cpu_placement(op, DTYPE, False, "common", SAMPLES)
                if index not in placed:
                    raise
                case.placement = placed[index]
                dev_out = case.run_dev(op.op)
            case.same(case.cpu_out, dev_out, "output")
        except Exception as e:
            fail("compare_cpu", tag, str(e) if isinstance(e, H.Mismatch) else _first_error(e))
            continue
        _noncontiguous(case, dev_out, tag, fail)
        _variants(case, dev_out, tag, fail)
        if op.supports_out and _tensor_result(case.cpu_out):
            _out_checks(case, dev_out, tag, fail)
    return failures


def _noncontiguous(case: _Op, dev_out, tag, fail):  # noqa: ARG001 (dev_out: the same signature as the others)
    nc = case.s.map(H._noncontig)
    if all(a is b for a, b in zip(nc.tensors(), case.s.tensors())):
        return
    try:  # against CPU on the same layout: layout-dependent ops (as_strided) answer differently to each layout
        H._seed(0)
        expected = _call(case.op.op, _cpu(nc))
    except Exception:
        return
    try:
        got = case.run_dev(case.op.op, _dev(nc, case.placement))
        case.same(expected, got, "non-contiguous output")
    except Exception as e:
        fail("noncontiguous", tag, str(e) if isinstance(e, H.Mismatch) else _first_error(e))


def _variants(case: _Op, dev_out, tag, fail):
    op = case.op
    fns = [("method", op.method_variant)] + [(f"alias {a.name}", a.op) for a in op.aliases]
    fns += [(f"alias {a.name} method", a.method_variant) for a in op.aliases]
    for name, fn in fns:
        if fn is None:
            continue
        try:
            case.same(dev_out, case.run_dev(fn), f"{name} variant")
        except Exception as e:
            fail("variants", tag, str(e) if isinstance(e, H.Mismatch) else f"{name} variant: {_first_error(e)}")
    inplace = [("in-place", op.inplace_variant)] + [(f"alias {a.name} in-place", a.inplace_variant)
                                                    for a in op.aliases]
    for name, fn in inplace:
        if fn is None or not isinstance(case.s.input, torch.Tensor):
            continue
        # Where the CPU accepts the in-place form (same dtype and shape as the input), the device's in-place
        # result is its function's.
        try:
            H._seed(0)
            _call(fn, _cpu(case.s))
        except Exception:
            continue
        d = case.dev()
        try:
            ret = case.run_dev(fn, d)
            if ret is not d.input:
                raise H.Mismatch(f"{name} variant did not return its input")
            # in-place writes the function's answer in the input's dtype (eq_ gives 0/1 floats)
            want = dev_out.to(d.input.dtype) if isinstance(dev_out, torch.Tensor) else dev_out
            case.same(want, d.input, f"{name} variant")
        except Exception as e:
            fail("variants", tag, str(e) if isinstance(e, H.Mismatch) else f"{name} variant: {_first_error(e)}")


def _out_checks(case: _Op, dev_out, tag, fail):
    fn = case.op.op
    expected = case.cpu_out
    try:  # the OpInfo says it supports out=; this sample's CPU call with a matching one decides
        H._seed(0)
        _call(fn, _cpu(case.s), out=_like(expected, lambda t: torch.empty_like(t, memory_format=torch.contiguous_format)))
    except Exception:
        return

    def run_out(name, make_out):
        # CPU's answer through the same out= layout first
        try:
            H._seed(0)
            cpu_out = _like(expected, lambda t: make_out(t, "cpu"))
            cpu_layout = [(t.data_ptr(), t.stride()) for t in _tensors(cpu_out)]
            want = _returned(_call(fn, _cpu(case.s), out=cpu_out), cpu_out)
            # CPU's narrow_copy writes a strided out= as if it were contiguous: where CPU's out= answer is not
            # its function's, there is no right answer to hold the device to
            case.same(expected, want, "CPU's out= result")
            # (CPU's linear restrides a 1-D out=: the device keeps an out='s storage and strides where CPU does)
            cpu_keeps = cpu_layout == [(t.data_ptr(), t.stride()) for t in _tensors(cpu_out)]
        except Exception:
            return
        out = _like(expected, lambda t: make_out(t, H.DEV))
        ptrs = [t.data_ptr() for t in _tensors(out)]
        strides = [t.stride() for t in _tensors(out)]
        try:
            ret = _returned(case.run_dev(fn, out=out), out)
            got = _tensors(ret)
            if len(got) != len(_tensors(out)) or any(g is not o for g, o in zip(got, _tensors(out))):
                raise H.Mismatch("the op did not return its out= tensors")
            case.same(want, ret, "out= result")
            if cpu_keeps:
                if [t.data_ptr() for t in got] != ptrs:
                    raise H.Mismatch("an out= of the right shape was reallocated")
                if [t.stride() for t in got] != strides:
                    raise H.Mismatch(f"an out= of the right shape was restrided: {[t.stride() for t in got]}, "
                                     f"given {strides}")
        except Exception as e:
            fail(name, tag, str(e) if isinstance(e, H.Mismatch) else _first_error(e))

    # A matching out=, and a strided one (same values written through its strides).
    run_out("out", lambda t, device: torch.empty(t.shape, dtype=t.dtype, device=device))
    if any(t.dim() > 0 and t.numel() > 1 for t in _tensors(expected)):
        run_out("out_strided", lambda t, device: torch.empty(*t.shape, 2, dtype=t.dtype, device=device)[..., 0]
                if t.dim() > 0 else torch.empty((), dtype=t.dtype, device=device))

    # Another shape: resized, warning that it had elements exactly where CPU warns.
    def wrong_shape(t):
        return (1,) if t.numel() != 1 else (2,)

    def warns(device):
        out = _like(expected, lambda t: torch.empty(wrong_shape(t), dtype=t.dtype, device=device))
        s = _cpu(case.s) if device == "cpu" else case.dev()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            H._seed(0)
            ret = _returned(_call(fn, s, out=out), out)
        return ret, any("resized" in str(w.message) for w in caught)

    try:  # CPU's out= answer: where CPU resizes no output of a discarded result (batch norm's saved stats)
        cpu_ret, cpu_warns = warns("cpu")
    except Exception:
        cpu_warns = None
    if cpu_warns is not None:
        try:
            ret, dev_warns = warns(H.DEV)
            # shapes and dtypes as CPU's out= (values: the `out` check; an output the op leaves unwritten, as
            # batch norm's saved statistics in eval, holds whatever it held)
            H.compare(H.tree_map(lambda t: t.cpu(), cpu_ret), ret, H.TOLERANCES, False, "resized out= result")
            # (a warning CPU leaves out, as addbmm's, is what TestCommon asks of every op: not a failure)
            if cpu_warns and not dev_warns:
                raise H.Mismatch("resizing an out= with elements did not warn; CPU warns")
        except Exception as e:
            fail("out_resize", tag, str(e) if isinstance(e, H.Mismatch) else _first_error(e))

    # The wrong device: an out= on the CPU for device inputs, and (where an input is more than a scalar) an
    # out= on the device for CPU inputs, raise as on CUDA.
    def refuses(s, device, what):
        out = _like(expected, lambda t: torch.empty(t.shape, dtype=t.dtype, device=device))
        try:
            H._seed(0)
            _call(fn, s, out=out)
        except Exception:
            return
        fail("out_device", tag, f"{what} was accepted; CUDA raises")

    refuses(case.dev(), "cpu", "an out= on the CPU for inputs on the device")
    cpu_inputs = _cpu(case.s)
    if any(t.dim() > 0 for t in cpu_inputs.tensors()) and case.placement is None:
        refuses(cpu_inputs, H.DEV, "an out= on the device for inputs on the CPU")

    # An unsafe dtype: int64 out= for a float result raises where CPU raises, else gives CPU's values.
    if not any(t.is_floating_point() for t in _tensors(expected)):
        return

    def int_out(device):
        return _like(expected, lambda t: torch.empty(t.shape, dtype=torch.int64 if t.is_floating_point()
                                                     else t.dtype, device=device))

    try:
        H._seed(0)
        out = int_out("cpu")
        cpu_ret = _returned(_call(fn, _cpu(case.s), out=out), out)
    except Exception:
        cpu_ret = None
    try:
        H._seed(0)
        out = int_out(H.DEV)
        dev_ret = _returned(_call(fn, case.dev(), out=out), out)
    except Exception as e:
        if cpu_ret is not None:
            fail("out_dtype", tag, f"an int64 out= raised, CPU accepts it: {_first_error(e)}")
        return
    if cpu_ret is None:
        fail("out_dtype", tag, "an int64 out= for a float result was accepted; CPU raises")
        return
    try:
        case.same(cpu_ret, dev_ret, "int64 out= result")
    except Exception as e:
        fail("out_dtype", tag, str(e))


# --- The expected-failure list: `op check  # reason`, shrinking only --------------------------


XFAIL_PATH = H.os.path.join(H.HERE, "conformance_common_xfail.txt")


def read_xfail(path: str = XFAIL_PATH) -> Dict[str, str]:
    out: Dict[str, str] = {}
    with open(path) as f:
        for line in f:
            head, _, reason = line.rstrip("\n").partition("#")
            if not head.strip():
                continue
            fields = head.split()
            if len(fields) != 2 or fields[1] not in CHECKS:
                raise ValueError(f"{path}: bad line {line!r}: expected 'op check  # reason'")
            out[" ".join(fields)] = reason.strip()
    return out


def write_xfail(entries: Dict[str, str], path: str = XFAIL_PATH) -> None:
    with open(path) as f:
        header = [ln for ln in f if ln.startswith("#")]
    with open(path, "w") as f:
        f.writelines(header)
        for key in sorted(entries, key=str.split):
            f.write(f"{key}  # {H._portable(entries[key])}\n")


def main(argv=None) -> None:
    """python _common_checks.py [--ops a,b] [--update-xfail]: the checks over op_db (or some ops), failures
    printed as xfail lines; --update-xfail rewrites the list (a listed entry that still fails keeps its reason)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(description=main.__doc__.split(":")[0])
    p.add_argument("--ops", default="", help="comma-separated OpInfo full names (default: all)")
    p.add_argument("--update-xfail", action="store_true")
    args = p.parse_args(argv)
    torch.opencl.set_fallback_mode("silent")
    warnings.filterwarnings("ignore")
    ops = H.all_ops()
    names = sorted(ops) if not args.ops else [n for n in sorted(ops) if n in args.ops.split(",")]
    old = read_xfail()
    found: Dict[str, str] = {}
    for name in names:
        for check_name, text in sorted(check(ops[name]).items()):
            key = f"{name} {check_name}"
            found[key] = old.get(key) or text
            print(f"{key}  # {found[key]}", flush=True)
    if args.update_xfail:
        swept = set(names)
        write_xfail({**{k: v for k, v in old.items() if k.split()[0] not in swept}, **found})
        print(f"wrote {XFAIL_PATH}", file=sys.stderr)


if __name__ == "__main__":
    main()
