"""Lowering choices that opencl makes differently from Inductor's defaults.

cat of many small inputs: Inductor writes a cat of more than `max_pointwise_cat_inputs` (8) inputs as a
ConcatKernel, which copies each input that is not computed in place into the output with a kernel of its
own. A compiled clip_grad_norm_ stacks one norm per parameter that way: 30 one-element launches for a
small transformer, more than the rest of the clip and the optimizer step together. For a small output
(SMALL_CAT_NUMEL elements or fewer, static sizes) one kernel that takes each element from its input
(Inductor's pointwise_cat) does the same in one launch.

Random ops' seeds: drawn on the host, each kernel takes its seeds by value (seeds.py).

`_foreach_norm`: generated, its partial norms one kernel for all tensors (foreach_norm.py).

Matrix products of float32 on CPU-class devices: a template with their epilogues fused (gemm.py).

Atomic adds (index_put with accumulate, index_add, scatter_add): generated kernels add to every element type
Inductor sends (kernel.atomic_add_line), the 64-bit ones only where the device has
cl_khr_int64_base_atomics; elsewhere those ops of 64-bit types stay on the eager kernels, as Inductor keeps
int64 and bool ones there on every device.
"""
import math

import sympy
import torch

from . import foreach_norm, gemm, seeds

SMALL_CAT_NUMEL = 4096


def _small_cat_of_many(inputs) -> bool:
    from torch._inductor import config

    if not isinstance(inputs, (list, tuple)) or len(inputs) <= config.max_pointwise_cat_inputs:
        return False
    device = inputs[0].get_device()
    if device is None or device.type != "opencl" or len({x.get_dtype() for x in inputs}) != 1:
        return False
    total = 0
    for x in inputs:
        size = x.get_size()
        if not all(isinstance(s, (int, sympy.Integer)) for s in size):
            return False  # dynamic sizes: Inductor's choice
        numel = math.prod(int(s) for s in size)
        if numel == 0 or x.get_device() != device:
            return False
        total += numel
    return total <= SMALL_CAT_NUMEL


_WIDE = (torch.float64, torch.int64, torch.uint64)


def _opencl_lacks_int64_atomics() -> bool:
    from .. import _C
    from .runtime import has_int64_atomics

    return not all(has_int64_atomics(d) for d in range(_C._device_count()))


def _install_atomic_add_limits(lowering) -> None:
    """Keep atomic adds of 64-bit types on eager kernels where an opencl device cannot do them."""
    if getattr(lowering.use_scatter_fallback, "_opencl", False):
        return
    needs_fallback, use_scatter_fallback = (lowering.needs_fallback_due_to_atomic_add_limitations,
                                            lowering.use_scatter_fallback)

    def needs_fallback_for_opencl(dtype):
        if needs_fallback(dtype):
            return True
        node = getattr(lowering.V.graph, "current_node", None) if lowering.V.graph is not None else None
        val = node.meta.get("val") if node is not None else None
        on_opencl = isinstance(val, torch.Tensor) and val.device.type == "opencl"
        return on_opencl and dtype in _WIDE and _opencl_lacks_int64_atomics()

    def scatter_fallback_for_opencl(op_overload, reduction_type, self_dtype, src_dtype, src_device_type,
                                    src_is_tensor):
        if use_scatter_fallback(op_overload, reduction_type, self_dtype, src_dtype, src_device_type, src_is_tensor):
            return True
        return (src_device_type == "opencl" and (self_dtype in _WIDE or src_dtype in _WIDE)
                and _opencl_lacks_int64_atomics())

    needs_fallback_for_opencl._opencl = True  # type: ignore[attr-defined]
    scatter_fallback_for_opencl._opencl = True  # type: ignore[attr-defined]
    lowering.needs_fallback_due_to_atomic_add_limitations = needs_fallback_for_opencl
    lowering.use_scatter_fallback = scatter_fallback_for_opencl


def _prefer(lowering, op, ours) -> None:
    """`ours` as an Inductor user lowering of `op` (consulted before Inductor's own lowering): where it returns
    None (not an opencl case it takes), a user lowering registered before it, else Inductor's, lowers the op."""
    previous = lowering.user_lowerings.get(op)
    if getattr(previous, "_opencl", False):
        return

    def lower(*args, **kwargs):
        out = ours(*args, **kwargs)
        if out is None and previous is not None:
            return previous(*args, **kwargs)
        return out

    lower._opencl = True  # type: ignore[attr-defined]
    lowering.user_lowerings[op] = lower


def install() -> None:
    from torch._inductor import inductor_prims, lowering

    _install_atomic_add_limits(lowering)
    gemm.install(lowering)
    _prefer(lowering, torch.ops.aten._foreach_norm.Scalar, foreach_norm.foreach_norm)
    _prefer(lowering, inductor_prims.seeds, seeds.lower_seeds)
    _prefer(lowering, inductor_prims.lookup_seed, seeds.lower_lookup_seed)

    for overload in (torch.ops.aten.cat.default,):
        inductors = lowering.lowerings.get(overload)
        if inductors is None or getattr(inductors, "_opencl_small_cat", False):
            continue

        def cat(*args, _inductors=inductors, **kwargs):
            inputs = args[0] if args else kwargs["tensors"]
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            if _small_cat_of_many(inputs):
                return lowering.pointwise_cat(list(inputs), lowering._validate_dim(inputs[0], dim, 0))
            return _inductors(*args, **kwargs)

        cat._opencl_small_cat = True  # type: ignore[attr-defined]
        lowering.lowerings[overload] = cat
