"""Horizontal fusion: independent kernels of a graph (a foreach op's per-tensor kernels, an optimizer
step over every parameter, what config.combo_kernels groups) written as one OpenCL kernel, so they cost
one launch.

On by default for graphs whose kernels all run on opencl (`enabled`, installed by `install`): a launch costs
more than the work of the small kernels a training step is made of (PoCL's dispatch of a launch across its
threads, a GPU driver's enqueue), and Inductor's `config.combo_kernels` is global, off for the Triton devices,
whose combined kernels it autotunes. Setting `config.combo_kernels` itself still turns them on everywhere.

Each sub-kernel is generated as it would be alone (kernel.py), then its parameters are renamed apart
(a buffer that several sub-kernels use becomes one parameter) and its body is placed in the combined
kernel by the device's form:

* CPU form: every work-item walks its chunk of each sub-kernel's outputs in turn (a loop per
  sub-kernel, with what that sub-kernel hoists computed before its loop);
* GPU form: one work-item per output of all sub-kernels together (for reductions, one work-group per
  output row); the sub-kernels' ranges follow one another in the global range and a work-item (a
  work-group) runs the body of the range it falls in.
"""
from __future__ import annotations

import re
from typing import Any

from torch._inductor.codegen.common import IndentedBuffer
from torch._inductor.virtualized import V

from .kernel import KERNEL_NAME_PLACEHOLDER, OpenCLKernel, Param, declare

enabled = True  # part of the code generator's cache key (_inductor/__init__.py)

_LOCAL_ARRAY = re.compile(r"__local\s+\w+\s+(\w+)\[")

# Bytes a kernel argument takes (pointers and by-value scalars alike, on 64-bit devices).
_ARG_BYTES = 8


def max_params(device: Any) -> int:
    """How many parameters a combined kernel may take on `device` (CL_DEVICE_MAX_PARAMETER_SIZE, at least
    1024 bytes where the driver says nothing)."""
    from .. import device_module

    size = int(getattr(device_module.get_device_properties(device), "max_parameter_size", 0) or 1024)
    return max(8, size // _ARG_BYTES - 2)


def combo_key(kernel: OpenCLKernel):
    """Kernels with equal keys can share a combined kernel; None: this one stays alone.

    A combined kernel needs static sizes (its sub-kernels' ranges follow one another). In the CPU form
    any sub-kernels combine (each work-item loops over its chunk of each); in the GPU form pointwise
    kernels combine with pointwise ones, and reductions with reductions of the same work-group size
    (a work-group per row: a whole work-group takes one branch, so its barriers stay uniform); the
    column form of a reduction stays alone."""
    import sympy

    if not all(isinstance(n, sympy.Integer) for n in kernel.numels.values()) or kernel.form.columns > 1:
        return None
    if kernel.form.chunked:
        return "chunked"
    return ("rows", kernel.form.row_group) if kernel.form.group_rows else "pointwise"


class OpenCLComboKernel:
    """Several OpenCLKernels of one combo_key (each already generated from its nodes) as one kernel."""

    def __init__(self, kernels: list[OpenCLKernel]) -> None:
        assert len(kernels) > 1
        self.kernels = kernels
        self.form = kernels[0].form
        self.params: list[Param] = []
        self.renames: list[dict[str, str]] = []
        by_outer: dict[str, Param] = {}
        for i, kernel in enumerate(kernels):
            names = {}
            for p in kernel.kernel_params():
                assert p.outer is not None, "a combined kernel's numels are constants"
                merged = by_outer.get(p.outer)
                if merged is None or merged.pointer != p.pointer:
                    merged = Param(f"{p.name}_{i}", p.outer, p.ctype, p.pointer, p.writes)
                    by_outer[p.outer] = merged
                    self.params.append(merged)
                merged.writes |= p.writes
                names[p.name] = merged.name
            # A reduction's __local arrays live at kernel scope: renamed apart too.
            for line in kernel.kernel_scope.getvalue().splitlines():
                local = _LOCAL_ARRAY.search(line)
                if local:
                    names[local.group(1)] = f"{local.group(1)}_{i}"
            self.renames.append(names)

    @staticmethod
    def param_count(kernel: OpenCLKernel) -> int:
        return len(kernel.kernel_params())

    def _renamed(self, i: int, text: str) -> str:
        names = self.renames[i]
        if not names:
            return text
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        return pattern.sub(lambda m: names[m.group(1)], text)

    def _body(self, i: int, kernel: OpenCLKernel, first: str | None) -> str:
        code = IndentedBuffer()
        with V.set_kernel_handler(kernel):
            kernel.codegen_work(code, first)
        return self._renamed(i, code.getvalue())

    @staticmethod
    def _numel(kernel: OpenCLKernel) -> int:
        """Outputs (rows, for reductions) of a sub-kernel."""
        return int(kernel.numels.get("x", 1))

    def codegen_kernel(self, name: str | None = None) -> str:
        for kernel in self.kernels:
            with V.set_kernel_handler(kernel):
                kernel.codegen_body()
        code = IndentedBuffer()
        code.writeline(f"__kernel void {name or KERNEL_NAME_PLACEHOLDER}({', '.join(declare(self.params))}) {{")
        with code.indent():
            for i, kernel in enumerate(self.kernels):
                code.splice(self._renamed(i, kernel.kernel_scope.getvalue()))
            if self.form.chunked:
                for i, kernel in enumerate(self.kernels):
                    code.writeline("{")
                    with code.indent():
                        code.splice(self._body(i, kernel, None))
                    code.writeline("}")
            else:
                # Work-items (pointwise) or work-groups (a work-group per reduction row).
                unit = "get_group_id(0)" if self.form.group_rows else "get_global_id(0)"
                code.writeline(f"const long gid = {unit};")
                first = 0
                for i, kernel in enumerate(self.kernels):
                    end = first + self._numel(kernel)
                    keyword = "if" if i == 0 else "} else if"
                    code.writeline(f"{keyword} (gid < {end}) {{")
                    with code.indent():
                        code.splice(self._body(i, kernel, str(first)))
                    first = end
                code.writeline("}")
        code.writeline("}")
        return code.getvalue()

    def call_kernel(self, name: str) -> None:
        args = [p.outer for p in self.params]
        if self.form.chunked:
            # Every work-item takes a chunk of each sub-kernel: as many work-items as the largest needs.
            threads, group = max(self.kernels, key=self._numel).launch_geometry()
        else:
            # The sub-kernels' ranges one after another: outputs (rows of a work-group each) add up.
            group = self.form.row_group if self.form.group_rows else self.form.group
            outputs = sum(self._numel(k) for k in self.kernels)
            threads = outputs * group if self.form.group_rows else -(-outputs // group) * group
        args += [f"threads={threads}", f"group_size={group}"]
        V.graph.wrapper_code.generate_kernel_call(
            name, args, device=V.graph.get_current_device_or_throw(), triton=False
        )


def _opencl_graph(graph) -> bool:
    types = set(getattr(graph, "device_types", ()) or ())
    return "opencl" in types and types <= {"opencl", "cpu"}


def install() -> None:
    """Inductor's combo kernels for the graphs of opencl devices: the scheduler groups independent kernels
    (config.combo_kernels read where GraphLowering makes its scheduler), our scheduling writes each group
    as one kernel (OpenCLScheduling.codegen_combo_kernel). Graphs of other devices are left as they are."""
    from torch._inductor import config
    from torch._inductor.graph import GraphLowering

    make_scheduler = GraphLowering._update_scheduler
    if getattr(make_scheduler, "_opencl", False):
        return

    def _update_scheduler(self) -> None:
        if enabled and not config.combo_kernels and _opencl_graph(self):
            with config.patch(combo_kernels=True):
                return make_scheduler(self)
        return make_scheduler(self)

    _update_scheduler._opencl = True  # type: ignore[attr-defined]
    GraphLowering._update_scheduler = _update_scheduler

    from torch._inductor.scheduler import ForeachKernelSchedulerNode

    group = ForeachKernelSchedulerNode.group_algorithm_for_combo_kernels
    if not getattr(group, "_opencl", False):
        ForeachKernelSchedulerNode.set_group_algorithm_for_combo_kernels(_groups_of(group))


def _groups_of(inductors):
    """Inductor's grouping cuts each topological level of a graph into groups of
    config.combo_kernel_max_num_nodes (8) nodes before it drops those that cannot be combined (views, extern
    calls, templates): a level of one kernel and seven views stays one kernel. For opencl graphs a level's
    kernels that can be combined are one group, however many (codegen_combo_kernel splits it where the
    device's parameter space ends): the transformer's backward's embedding gradients' zero fill shares
    the loss gradient's launch, and clip_grad_norm_'s partial norms of 30 parameters (foreach_norm.py) are
    one launch, not four."""
    def groups(scheduler):
        from torch._inductor.scheduler import ForeachKernelSchedulerNode

        if not _opencl_graph(V.graph):
            return inductors(scheduler)
        out = []
        for level in scheduler._topological_sort_nodes():
            on_opencl = [n for n in level if n.get_device() is not None and n.get_device().type == "opencl"]
            nodes = ForeachKernelSchedulerNode.combinable_nodes(on_opencl)
            if nodes:
                out.append(nodes)
        return out

    groups._opencl = True  # type: ignore[attr-defined]
    return staticmethod(groups)
