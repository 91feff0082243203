"""Lowering choices that opencl makes differently from Inductor's defaults.

cat of many small inputs: Inductor writes a cat of more than `max_pointwise_cat_inputs` (8) inputs as a
ConcatKernel, which copies each input that is not computed in place into the output with a kernel of its
own. A compiled clip_grad_norm_ stacks one norm per parameter that way: 30 one-element launches for a
small transformer, more than the rest of the clip and the optimizer step together. For a small output
(SMALL_CAT_NUMEL elements or fewer, static sizes) one kernel that takes each element from its input
(Inductor's pointwise_cat) does the same in one launch.
"""
import math

import sympy
import torch

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


def install() -> None:
    from torch._inductor import lowering

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
