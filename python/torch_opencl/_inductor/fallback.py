"""Operators the code generator cannot take run on the device's ATen kernels (eager), node by node.

Every Inductor lowering is wrapped: when its result lives on opencl and computes with an op, a
reduction or a dtype that kernel.py cannot write (ops.erfinv, a complex value, ...), the node is
lowered again as an extern call of the ATen operator, as Inductor does for operators it has no
lowering for. Each such node is counted (``stats()``) and warned about once per operator, when its
graph is lowered: a graph Inductor serves from its FX graph cache is not lowered again and not counted.
"""
import functools
import warnings
from collections import Counter
from typing import Dict, Optional

import torch

from .overrides import COMPUTE_TYPE, SUPPORTED_OPS

SUPPORTED_REDUCTIONS = frozenset(
    {"sum", "prod", "xor_sum", "any", "max", "min", "argmax", "argmin", "welford_reduce", "welford_combine"}
)

_counts: Counter = Counter()


def stats() -> Dict[str, int]:
    """Nodes lowered to eager ATen calls because the OpenCL code generator cannot take them, by operator."""
    return dict(_counts)


def reset_stats() -> None:
    _counts.clear()


def _loops_of(node):
    """The Pointwise/Reduction bodies a lowering's result computes, through boxes and views."""
    from torch._inductor import ir

    seen = 0
    while node is not None and seen < 16:
        seen += 1
        if isinstance(node, ir.Loops):
            return node
        if isinstance(node, (ir.TensorBox, ir.StorageBox)):
            node = node.data
        elif isinstance(node, ir.ComputedBuffer):
            node = node.data
        elif isinstance(node, ir.BaseView):
            node = node.data
        else:
            return None
    return None


def unsupported_reason(result) -> Optional[str]:
    """Why a lowering's result cannot become OpenCL C, or None."""
    from torch._inductor import ir

    for value in torch.utils._pytree.tree_leaves(result):
        if not isinstance(value, ir.IRNode):
            continue
        loops = _loops_of(value)
        if loops is None:
            continue
        device = loops.get_device()
        if device is None or device.type != "opencl":
            continue
        if loops.get_dtype() not in COMPUTE_TYPE:
            return f"dtype {loops.get_dtype()}"
        if isinstance(loops, ir.Reduction) and loops.reduction_type not in SUPPORTED_REDUCTIONS:
            return f"reduction {loops.reduction_type}"
        missing = set(loops.inner_fn_opcount().used_ops) - SUPPORTED_OPS
        if missing:
            return "ops." + ", ops.".join(sorted(missing))
    return None


def _checked(op, lowering):
    from torch._inductor.lowering import fallback_handler

    @functools.wraps(lowering)
    def lower(*args, **kwargs):
        result = lowering(*args, **kwargs)
        reason = unsupported_reason(result)
        if reason is None:
            return result
        name = str(op)
        if name not in _counts:
            warnings.warn(
                f"torch.compile on opencl: {name} runs as an eager ATen call ({reason} has no OpenCL code "
                "generator yet); counted in torch_opencl._inductor.fallback.stats()",
                stacklevel=2,
            )
        _counts[name] += 1
        return fallback_handler(op, add_to_fallback_set=False)(*args, **kwargs)

    lower._opencl_checked = True  # type: ignore[attr-defined]
    return lower


def install() -> None:
    from torch._inductor import lowering

    for op, fn in list(lowering.lowerings.items()):
        if getattr(fn, "_is_fallback_handler", False) or getattr(fn, "_opencl_checked", False):
            continue
        if not isinstance(op, torch._ops.OpOverload):
            continue
        lowering.lowerings[op] = _checked(op, fn)
