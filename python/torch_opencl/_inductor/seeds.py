"""The seeds of a graph's random ops (dropout, rand_like, ...) come from the host, as eager's do.

Inductor draws one seed per random op of a graph per run: `aten.randint` into a device buffer (a kernel
launch of its own, before every kernel that uses one), which the kernels then load. Eager's random
kernels take the generator's seed and offset as arguments instead. Here the seeds are drawn the same
way on the host (`_C._philox_seeds`: Philox blocks of the device's generator, which it advances, so
torch.manual_seed makes a compiled run repeat), into a CPU tensor, and each kernel that uses seed i takes
it by value (OpenCLKernel.load, a constant index into a CPU buffer): one launch fewer per step of a
model with dropout, and nothing to copy. Seeds that leave their graph (the forward saves them for a
checkpointed dropout's recompute in the backward, whose signature says a device tensor) stay Inductor's
device draw.
"""
from __future__ import annotations

import functools

import torch

KERNEL_NAME = "opencl_philox_seeds"  # as the wrapper imports it (wrapper.py)


@functools.lru_cache(None)
def _host_seeds_node():
    """The IR node class (made on first use: importing Inductor's ir is not free)."""
    from torch._inductor import ir

    class HostSeeds(ir.ExternKernelAlloc):
        """`count` seeds for random ops on opencl device `index`, a CPU int64 tensor the wrapper draws."""

        def __init__(self, count: int, device: torch.device) -> None:
            super().__init__(
                layout=ir.FixedLayout(torch.device("cpu"), torch.int64, [count]),
                inputs=[],
                constant_args=[device.index or 0, count],
                python_kernel_name=KERNEL_NAME,
            )
            self.opencl_device = device

        def has_side_effects(self) -> bool:
            return False

    return HostSeeds


def is_host_seeds(name: str) -> bool:
    from torch._inductor.virtualized import V

    return isinstance(V.graph.try_get_buffer(name), _host_seeds_node())


def _only_read_here() -> bool:
    """Whether the seeds node being lowered is read by this graph's seed lookups only. Seeds that leave the
    graph (saved by the forward for a checkpointed dropout's recompute in the backward) are a device
    tensor in the graphs' signature, so they stay Inductor's own."""
    from torch._inductor import inductor_prims
    from torch._inductor.virtualized import V

    node = V.graph.current_node
    return node is not None and all(user.target is inductor_prims.lookup_seed for user in node.users)


def lower_seeds(count, device):
    """Lowering of inductor_prims.seeds: host seeds for an opencl device (None: Inductor's own)."""
    from torch._inductor import ir
    from torch._inductor.lowering import decode_device

    device = decode_device(device)
    if device.type != "opencl" or not _only_read_here():
        return None
    return ir.TensorBox.create(_host_seeds_node()(count, device))


def lower_lookup_seed(seeds, index):
    """Lowering of inductor_prims.lookup_seed over host seeds: the seed as a value of the opencl device,
    so that the random op that reads it is computed there (Inductor's own puts it on the seeds' device)."""
    from torch._inductor import ir
    from torch._inductor.virtualized import ops

    data = seeds.data.data if isinstance(seeds, ir.TensorBox) and isinstance(seeds.data, ir.StorageBox) else None
    if not isinstance(data, _host_seeds_node()):
        return None
    name = data.get_name()
    return ir.Pointwise.create(device=data.opencl_device, dtype=torch.int64,
                               inner_fn=lambda _: ops.load_seed(name, index), ranges=[])

