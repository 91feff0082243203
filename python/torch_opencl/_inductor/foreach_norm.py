"""`_foreach_norm` generated, so that a compiled clip_grad_norm_ costs three launches however many
parameters it clips: the partial norms of every tensor in one kernel, the total norm in the next, the
scaling of the gradients in a third.

Without this, Inductor calls eager's `_foreach_norm` (two launches per 16 tensors: partial norms, then each
tensor's) and its generated total norm reads the norms after them. Here each tensor of n elements is cut
into S = ceil(n / CHUNK) rows (at most MAX_PARTS) of `chunk` elements, reduced (|x|^2, |x| or max |x|
over a row, in float32, float64 for float64) as Inductor reductions, independent of each other, so
they are one combined kernel (combo.py: a work-group per row in the GPU form, every row at least a
work-group long so that all take the same work-group size; a chunk of every tensor's rows per work-item
in the CPU form). A tensor's norm is then the sum (max) of its S partials, a pointwise
value of S loads: never a kernel of its own where it is read by another kernel (clip_grad_norm_'s stack
and norm of the norms), which inlines it.

Taken for ord 1, 2 and inf (eager's kernels' orders) over tensors of one floating dtype on one opencl
device with static sizes, at most MAX_TENSORS of them (the kernel reading all the norms takes a parameter
per tensor, and its source S loads per tensor); anything else is Inductor's call into eager's kernels.
"""
from __future__ import annotations

import math

import sympy
import torch

CHUNK = 8192  # elements a row of partial norms reduces, at least
MAX_PARTS = 64  # rows a tensor is cut into, at most
MAX_TENSORS = 64

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _static_numel(x) -> int | None:
    size = x.get_size()
    if not all(isinstance(s, (int, sympy.Integer)) for s in size):
        return None
    return math.prod(int(s) for s in size)


def _takes(tensors, ord, dtype) -> bool:
    from torch._inductor import ir

    if not isinstance(tensors, (list, tuple)) or not 0 < len(tensors) <= MAX_TENSORS:
        return False
    if not all(isinstance(x, ir.IRNode) for x in tensors):
        return False
    device, kind = tensors[0].get_device(), tensors[0].get_dtype()
    if device is None or device.type != "opencl" or kind not in _DTYPES or dtype not in (None, kind):
        return False
    if isinstance(ord, bool) or not isinstance(ord, (int, float)) or float(ord) not in (1.0, 2.0, math.inf):
        return False
    return all(x.get_device() == device and x.get_dtype() == kind and (_static_numel(x) or 0) > 0 for x in tensors)


def _flat_loader(x):
    """A loader of x by its elements' flat (row-major) index, whatever its layout."""
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing

    sizes = [int(s) for s in x.get_size()]
    load = x.make_loader()
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]

    def loader(r):
        index, outer = [], True  # the outermost dim of more than one element needs no modulo (r < numel)
        for size, stride in zip(sizes, strides):
            if size == 1:
                index.append(sympy.S.Zero)
                continue
            whole = r if stride == 1 else FloorDiv(r, stride)
            index.append(whole if outer else ModularIndexing(r, stride, size))
            outer = False
        return load(index)

    return loader


def _partials(x, order: float, acc: torch.dtype):
    """Row s of the result: the partial norm (before the root) of x's elements s*chunk .. (s+1)*chunk - 1."""
    from torch._inductor import ir
    from torch._inductor.virtualized import ops

    from .. import device_module

    n = _static_numel(x)
    parts = max(1, min(MAX_PARTS, -(-n // CHUNK)))
    chunk = -(-n // parts)
    props = device_module.get_device_properties(x.get_device())
    if props.kernel_class == "gpu":
        # Rows of a whole work-group at least (masked past n): the GPU form combines reductions of one
        # work-group size only (combo.combo_key), and a shorter row would take a narrower one.
        chunk = max(chunk, int(props.row_group))
    parts = -(-n // chunk)
    load = _flat_loader(x)

    def value(r):
        v = ops.to_dtype(load(r), acc)
        return ops.mul(v, v) if order == 2 else ops.abs(v)

    def inner_fn(index, rindex):
        r = index[0] * chunk + rindex[0]
        if parts * chunk == n:
            return value(r)
        inside = ops.lt(ops.index_expr(r, torch.int64), ops.constant(n, torch.int64))
        return ops.masked(inside, lambda: value(r), 0.0)

    device = x.get_device()
    if chunk == 1:  # a tensor of one element: its value
        part = ir.Pointwise.create(device=device, dtype=acc, inner_fn=lambda index: inner_fn(index, [sympy.S.Zero]),
                                   ranges=[parts])
    else:
        # Built directly rather than through Reduction.create, which could split each row again.
        part = ir.TensorBox.create(ir.Reduction(
            device=device, dtype=acc, inner_fn=inner_fn, ranges=[sympy.Integer(parts)],
            reduction_ranges=[sympy.Integer(chunk)], reduction_type="max" if order == math.inf else "sum",
            src_dtype=acc, reduction_hint=ir.ReductionHint.INNER))
    part.realize()
    return part, parts


def _norm(part, parts: int, order: float, out_dtype: torch.dtype):
    from torch._inductor import ir
    from torch._inductor.virtualized import ops

    load = part.make_loader()

    def inner_fn(index):
        total = load([sympy.S.Zero])
        for s in range(1, parts):
            v = load([sympy.Integer(s)])
            total = ops.maximum(total, v) if order == math.inf else ops.add(total, v)
        if order == 2:
            total = ops.sqrt(total)
        return ops.to_dtype(total, out_dtype)

    return ir.Pointwise.create(device=part.get_device(), dtype=out_dtype, inner_fn=inner_fn, ranges=[])


def foreach_norm(tensors, ord=2, dtype=None):
    """The lowering of aten._foreach_norm.Scalar for opencl (an Inductor user lowering: None leaves the op
    to Inductor's own handling)."""
    if not _takes(tensors, ord, dtype):
        return None
    order = float(ord)
    kind = tensors[0].get_dtype()
    acc = torch.float64 if kind == torch.float64 else torch.float32
    # Independent reductions: the combo kernels of opencl graphs (combo.py) make them one kernel. (Not a
    # foreach group: Inductor's scheduler makes none of reductions, and its fusion checks fail on one.)
    partials = [_partials(x, order, acc) for x in tensors]
    return [_norm(part, parts, order, kind) for part, parts in partials]

