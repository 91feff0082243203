"""One generated OpenCL kernel: Inductor's loop IR (a SIMDKernel) written as OpenCL C.

The shape follows Inductor's Metal kernel (torch/_inductor/codegen/mps.py) with the device's kernel
class (runtime/kernel_forms.h) choosing the form of reductions:

* CPU form (pointwise and reductions): a few work-items per core, each walking a contiguous chunk of
  the outputs (rows) in a loop, the reduction of a row in an inner loop. What does not depend on the
  output index (a load at a fixed index, an optimizer's bias correction computed from it) is computed
  once per work-item before the loop: PoCL would otherwise repeat it for every element (its work-item
  loops do not hoist it), and a loop over a contiguous chunk is what its compiler vectorises.
  A pointwise kernel whose indices split the flat index into rows (x1 = xindex / 256, x0 = xindex %
  256: a broadcast of per-row values) walks whole rows in two loops, the indices written from the two
  loop counters: a division per element and per-row loads in the inner loop kept it scalar (a cross
  entropy backward over 1024x256: 1.1 ms flat, 0.22 ms by rows).
  A row's reduction runs in LANES lanes (element r0_index goes to lane r0_index % LANES, each lane
  an accumulator of a private array), combined in a tree after the loop: one running sum is a chain
  of dependent adds that the compiler may not reorder, so it stays scalar, math calls included
  (a row sum of exp over 512 floats: 3.0 ms per 1M elements one lane, 0.4 ms in 8).
* CPU form, pointwise kernels whose body is float32 math with calls (exp, erf_of, ...) read and written at
  the flat index: 16 outputs a step as float16 vectors, the chunk's last ones one at a time (vectors.py):
  PoCL keeps a builtin's call scalar in its work-item loop (a compiled GELU backward: 2x faster).
* CPU form, reductions whose loads are adjacent for adjacent outputs and not along the row (one
  reduction loop, outputs a static multiple of LANES; a load the same for every output, as layer norm's
  per-row rstd in its weight gradient, may step along the row): the lanes are LANES adjacent outputs instead,
  walked together row by row, so that the loads of a row are adjacent; one output at a time reads its
  column with a stride (a bias gradient, 1024 rows of 256: 0.35 ms a call, 0.07-0.1 ms in lanes).
* GPU form, pointwise: one work-item per output element, bound-checked.
* GPU form, reductions: one work-group of RG work-items per output row; each strides over the row,
  then the partial results meet in local memory (a tree of RG/2, RG/4, ... steps).
* GPU form, reductions over a non-contiguous dim (Inductor's OUTER hint: a bias gradient, layer norm's
  weight gradient, the second stage of a split reduction): a work-group takes COLUMNS adjacent outputs
  (x_lane) times RG slices of the reduced index, so that a warp's loads are adjacent in memory; one
  output per work-group would read the column with a stride, one cache line per element.

Each reduction loop is a "phase"; code after a reduction that reads its result (the normalisation of a
layer norm, the division of a softmax) runs in the next phase's loop, as Triton's looped reductions do.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from collections import Counter
from typing import Any

import sympy
import torch
from torch._inductor.codegen.common import CSE, DeferredLine, IndentedBuffer
from torch._inductor.codegen.simd import CantSplit, IterationRangesEntry, SIMDKernel
from torch._inductor.runtime.hints import ReductionHint
from torch._inductor.utils import get_kernel_metadata  # noqa: F401  (re-exported for scheduling)
from torch._inductor.virtualized import V
from torch.utils._sympy.functions import FloorDiv, ModularIndexing
from torch.utils._ordered_set import OrderedSet
from torch.utils._sympy.printers import PythonPrinter

from . import seeds
from .overrides import OpenCLOverrides, Unsupported, compute_type, highest, literal, lowest, storage_type
from .printer import cexpr
from .vectors import WIDTH, vector_body

KERNEL_NAME_PLACEHOLDER = "opencl_kernel_name_placeholder"
INDEX_ERRORS = "index_errors"  # the parameter of kernels that check indices (kernels_cl/inductor.cl)

# The accumulation type of sum/prod: float for the half types (as ATen's acc_type).
_ACC_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.bool: torch.int64}


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_INDEX_NAME = re.compile(r"^(x|y|z|r\d+_)(\d+|index)$|^r0_(lid|base)$|^(x_lane|lane|xblock|xouter|xinner)$")


class TypedCSE(CSE):
    """CSE whose new variables are declared with their OpenCL C type (C has no `auto`); in the CPU form,
    values that do not depend on the output index are written before the loop over outputs."""

    def generate(self, buffer, expr, *, bounds=None, write=True, assignment=True, dtype=None, shape=None):
        if dtype is not None:
            self.prefix = compute_type(dtype) + " "
        elif isinstance(expr, str):
            self.prefix = f"__typeof__({expr}) "
        kwargs = {} if bounds is None else {"bounds": bounds}
        kernel = V.kernel
        ours = isinstance(kernel, OpenCLKernel)
        hoist = ours and assignment and isinstance(expr, str) and kernel.invariant(expr)
        if hoist and self.try_get(expr) is None:
            buffer = kernel.hoisted
        var = super().generate(buffer, expr, write=write, assignment=assignment, dtype=dtype, shape=shape, **kwargs)
        if ours:
            if hoist:
                kernel.outside_loop_vars.add(var)
            else:
                kernel.variant_vars.add(str(var))
                if not kernel.inside_reduction:
                    kernel.outside_loop_vars.add(var)
        return var


def _single_loop(node_schedule) -> bool:
    """True if a reduction kernel's schedule makes one reduction loop, with only code over outputs
    after it (Inductor's loop IR: nodes inside the loop until a DisableReduction marker)."""
    from torch._inductor.codegen.simd_kernel_features import DisableReduction, EnableReduction

    looping, loops, ended = True, 0, True  # ended: no loop is open (none yet, or a DisableReduction since)
    for node in node_schedule:
        if node is DisableReduction:
            looping, ended = False, True
        elif node is EnableReduction:
            looping = True
        elif looping:
            loops += ended
            ended = False
        elif loops == 0:
            return False  # code over outputs before the loop
    return loops <= 1


def _pow2_at_least(n: int) -> int:
    """The smallest power of two >= n: the widest group a row of n elements can use."""
    return 1 << max(0, n - 1).bit_length()


class LaunchForm:
    """How a kernel maps to work-items; decided at code generation from the device's kernel class."""

    CPU_GROUP = 8  # work-items per work-group in the CPU form
    CPU_GROUPS_PER_UNIT = 4  # work-groups per compute unit: PoCL runs a work-group on one core
    CPU_LANES = 8  # a CPU-form reduction's lanes: a vector of floats on AVX2, half of one on AVX-512
    CPU_MIN_ROW = 16  # the shortest row a CPU-form pointwise kernel walks as an inner loop
    COLUMNS = 32  # adjacent outputs of a work-group in the column form: 128-byte reads of floats

    def __init__(self, device: torch.device, reduction: bool, xnumel: sympy.Expr, rnumel: sympy.Expr,
                 outer: bool = False, single_loop: bool = False):
        from .. import device_module

        props = device_module.get_device_properties(device)
        self.gpu = props.kernel_class == "gpu"
        self.chunked = not self.gpu  # the CPU form: loops over contiguous chunks of outputs
        self.group = int(props.row_group)  # 256 on GPUs (runtime/kernel_forms.cpp)
        self.row_group = 1  # work-items per reduction row
        self.columns = 1  # adjacent outputs per work-group (the column form: more than 1)
        self.lanes = 1  # accumulators per reduction in one work-item (the CPU form: more than 1)
        # The CPU form's lanes may be adjacent outputs instead of a row's elements (the kernel decides
        # when it sees its loads: OpenCLKernel._choose_lanes).
        self.column_lanes = False
        if self.chunked:
            self.group = self.CPU_GROUP
            self.lanes = self.CPU_LANES if reduction else 1
            self.column_lanes = (reduction and single_loop and isinstance(xnumel, sympy.Integer)
                                 and int(xnumel) % self.lanes == 0)
            self.max_threads = max(1, int(props.compute_units)) * self.CPU_GROUPS_PER_UNIT * self.CPU_GROUP
        elif reduction and outer and isinstance(xnumel, sympy.Integer) and int(xnumel) % self.COLUMNS == 0 \
                and self.group >= 2 * self.COLUMNS:
            # The column form (whole groups of outputs only: no work-item idles past the last one).
            self.columns = self.COLUMNS
            self.row_group = self.group // self.COLUMNS
            if isinstance(rnumel, sympy.Integer):
                self.row_group = max(2, min(self.row_group, _pow2_at_least(int(rnumel))))
        elif reduction:
            self.row_group = self.group
            if isinstance(rnumel, sympy.Integer):  # a short row needs no wider group than itself
                self.row_group = max(32, min(self.group, _pow2_at_least(int(rnumel))))

    @property
    def group_rows(self) -> bool:
        """A work-group's items share output rows (the GPU forms of a reduction): one row, or in the
        column form `columns` adjacent ones."""
        return self.row_group > 1


class OpenCLKernel(SIMDKernel):
    overrides = OpenCLOverrides  # type: ignore[assignment]
    suffix = ";"
    newvar_prefix = ""
    sexpr = staticmethod(cexpr)
    kexpr = staticmethod(cexpr)
    pexpr = staticmethod(PythonPrinter().doprint)

    @classmethod
    def map_kernel_groups_to_node_sizes(cls, groups, lengths, set_ranges):
        """Inductor's split of a node's ranges into the kernel's, and where it cannot prove the division
        exact (a dynamic size written as a sum: numel s0*s1*s2 - 4*s1*s2 is not divisible by s0 - 4 as sympy
        sees it), the node's own ranges when, without its empty reduction range, they multiply out to the
        kernel's one flat range (and its reduction's): that compile failed with CantSplit."""
        try:
            return super().map_kernel_groups_to_node_sizes(groups, lengths, set_ranges)
        except CantSplit:
            own = list(lengths)
            while len(own) > len(groups) and not own[-1]:
                own.pop()
            if len(own) != len(groups) or any(
                sympy.expand(sympy.Mul(*sizes) - group) != 0 for sizes, group in zip(own, groups)
            ):
                raise
            return [*set_ranges(*own), *([] for _ in range(len(lengths) - len(own)))]

    def __init__(self, tiling: dict[str, sympy.Expr], **kwargs: Any) -> None:
        super().__init__(tiling, **kwargs)
        self.cse = TypedCSE(self.newvar_prefix, self.suffix)
        self.pre_loop = IndentedBuffer()  # accumulators, declared before a reduction loop
        self.post_loop_combine = IndentedBuffer()  # a loop's partial results combined
        self.post_loop_store = IndentedBuffer()  # and stored
        self.kernel_scope = IndentedBuffer()  # __local arrays (OpenCL wants them at kernel scope)
        self.outside_loop_vars: OrderedSet[Any] = OrderedSet()
        self.acc_ids = itertools.count()
        self.uses_fp64 = False
        self.scalar_args: OrderedSet[str] = OrderedSet()  # 0-d CPU tensors, passed by value
        self.host_seed_params: dict[tuple[str, int], str] = {}  # (seeds buffer, index) -> parameter (seeds.py)
        self.hoisted = IndentedBuffer()  # CPU form: computed once per work-item, before the output loop
        self.variant_vars: set[str] = set()  # CSE variables that depend on the output or reduction index
        self.rng_memos = itertools.count()
        self.rng_blocked = False  # see rng_memo
        self.uses_index_errors = False
        self._masked_depth = 0
        self._hoistable_load = True
        xnumel = self.numels.get("x", sympy.S.One)
        rnumel = self.numels.get("r0_", sympy.S.One)
        if any(p not in ("x", "r0_") for p in self.numels):
            raise Unsupported(f"tiling {dict(self.numels)}")
        reduction = self.features.is_reduction()
        outer = reduction and self.features.get_reduction_hint() in (ReductionHint.OUTER, ReductionHint.OUTER_TINY)
        self.form = LaunchForm(V.graph.get_current_device_or_throw(), reduction, xnumel, rnumel, outer,
                               reduction and _single_loop(self.features.node_schedule))
        self._lane_loop_open = False  # the column lanes' loop over outputs, closed by codegen_work
        self._loop_load_strides: list[tuple[Any, Any]] = []  # (along x, along r) of the loop's loads
        self._lane_trees: list[tuple[list[tuple[str, torch.dtype]], str]] = []  # see _combine_lanes
        self._vectors: IndentedBuffer | bool | None = None  # _vector_body's answer once asked (False: none)

    def invariant(self, expr: str) -> bool:
        """True if `expr` is the same for every output of the kernel and may be computed before the loop
        over them (CPU form only; not inside a masked block; loads only of buffers the kernel does not
        write)."""
        if not self.form.chunked or self._masked_depth or not self._hoistable_load:
            return False
        names = _IDENTIFIER.findall(expr)
        return not any(n in self.variant_vars or _INDEX_NAME.match(n) for n in names)

    RNG_BLOCK = 4  # outputs per step of a CPU-form pointwise kernel with random ops: one Philox block

    def rng_memo(self) -> str:
        """What a random op's call site (CPU form) passes for its Philox block memo. A pointwise kernel over a
        static multiple of RNG_BLOCK outputs walks them RNG_BLOCK at a time (codegen_work), the block's
        elements unrolled: the calls of one step then draw the same block, which the compiler computes once,
        and no memo carries state from one element to the next (which kept the loop scalar: a compiled
        randn_like(x) + x took 9x eager's time). Otherwise a memo declared before the loop over outputs,
        whose address the call passes."""
        x = self.numels.get("x")
        if not self.features.is_reduction() and isinstance(x, sympy.Integer) and int(x) % self.RNG_BLOCK == 0:
            self.rng_blocked = True
            return "0"
        name = f"rng{next(self.rng_memos)}"
        self.hoisted.writeline(f"philox_memo {name} = PHILOX_MEMO_INIT;")
        return f"&{name}"

    # --- types and indexing

    def dtype_to_str(self, dtype: torch.dtype) -> str:
        return compute_type(dtype)

    def index_torch_dtype(self) -> torch.dtype:
        return self.get_index_dtype_as_torch_dtype()

    def _note_dtype(self, dtype: torch.dtype) -> None:
        if dtype == torch.float64:
            self.uses_fp64 = True

    def codegen_iteration_ranges_entry(self, entry: IterationRangesEntry) -> None:
        line = f"{self.index_dtype} {entry.name} = {cexpr(self.rename_indexing(entry.expr))};"
        # Entries of the reduction axis live inside the loop; the others once, before it.
        (self.indexing_code if entry.root.is_loop else self.body).writeline(line)

    # --- memory

    @staticmethod
    def _is_cpu_scalar(name: str) -> bool:
        """A 0-d CPU tensor read by a device kernel (an optimizer's step count, a Python number Dynamo
        wrapped): its value goes to the kernel as a by-value argument, as Inductor does for Triton."""
        if V.graph.is_unspec_arg(name):
            return True
        buf = V.graph.try_get_buffer(name)
        device = buf.get_device() if buf is not None else None
        return device is not None and device.type == "cpu" and list(buf.get_size()) == []

    def load(self, name: str, index: sympy.Expr):
        if isinstance(index, sympy.Integer) and seeds.is_host_seeds(name):
            # A random op's seed, drawn on the host (seeds.py): by value, as eager's kernels take theirs.
            param = self.host_seed_params.setdefault((name, int(index)), f"seed{len(self.host_seed_params)}")
            return self.cse.generate(self.loads, param, dtype=torch.int64)
        var = self.args.input(name)
        if self._is_cpu_scalar(name):
            self.scalar_args.add(name)
            dtype = V.graph.get_dtype(name)
            dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
            return self.cse.generate(self.loads, f"(({compute_type(dtype)}){var})", dtype=dtype)
        index = self.prepare_indexing(index)
        dtype = V.graph.get_dtype(name)
        self._note_dtype(dtype)
        idx = self.index_to_str(index)
        if dtype == torch.float16:
            line, dtype = f"vload_half({idx}, {var})", torch.float32
        elif dtype == torch.bfloat16:
            line, dtype = f"bf16_to_float({var}[{idx}])", torch.float32
        elif dtype == torch.bool:
            line = f"({var}[{idx}] != 0)"
        else:
            storage_type(dtype)  # raises for dtypes a kernel cannot hold
            line = f"{var}[{idx}]"
        if self.inside_reduction and self.form.column_lanes:
            self._loop_load_strides.append(self._strides(index))
        # A buffer this kernel writes is read where it stands in the loop, never before it.
        self._hoistable_load = name not in self.mutations and name not in self.args.output_buffers
        try:
            return self.cse.generate(self.loads, line, dtype=dtype)
        finally:
            self._hoistable_load = True

    def _strides(self, index: sympy.Expr) -> tuple[Any, Any]:
        """How far `index` moves for the next output and for the next element of the row (from the
        first one; None where that is not a number, e.g. a dynamic size)."""
        flat = index.subs({s: self.range_tree_nodes[s].expr for s in index.free_symbols if s in self.range_tree_nodes})
        roots = {t.prefix: t.symbol() for t in self.range_trees}
        at = {v: 0 for v in roots.values()}

        def step(prefix):
            if prefix not in roots:
                return 0
            delta = flat.subs({**at, roots[prefix]: 1}) - flat.subs(at)
            return int(delta) if isinstance(delta, sympy.Integer) else None

        return step("x"), step("r0_")

    def _choose_lanes(self) -> None:
        """Column lanes (see the module's note) where one load at least moves along the row and is adjacent
        for adjacent outputs, and no load that differs between outputs is adjacent along the row; row lanes
        otherwise. A load the same for every output (x step 0: layer norm's per-row mean and rstd in its
        weight gradient) is one value for all lanes, so it does not count against the column form."""
        along_row = [(x, r) for x, r in self._loop_load_strides if r != 0]
        self.form.column_lanes = (self.form.column_lanes and any(x == 1 for x, _ in along_row)
                                  and all(r != 1 for x, r in along_row if x != 0))

    def _store_line(self, name: str, index: sympy.Expr, value, mode=None) -> str:
        var = self.args.output(name)
        index = self.prepare_indexing(index)
        dtype = V.graph.get_dtype(name)
        self._note_dtype(dtype)
        idx = self.index_to_str(index)
        if mode == "atomic_add":
            return atomic_add_line(dtype, f"&{var}[{idx}]", str(value))
        if mode is not None:
            raise Unsupported(f"store mode {mode}")
        if dtype == torch.float16:
            return f"vstore_half_rte({value}, {idx}, {var});"
        if dtype == torch.bfloat16:
            return f"{var}[{idx}] = float_to_bf16({value});"
        return f"{var}[{idx}] = ({storage_type(dtype)})({value});"

    def _guard_single(self, line: str) -> str:
        """A store of a whole row's value: one work-item of the group writes it."""
        return f"if (r0_lid == 0) {line}" if self.form.group_rows else line

    def _write_single(self, buffer: IndentedBuffer, name: str, line: str) -> None:
        """A store of a whole row's value (one work-item of the group writes it, in the GPU form). Where the
        kernel also reads that buffer (an in-place update, e.g. BatchNorm's running statistics), every item
        of the group read the old value: barriers keep those reads before the write and later reads after
        it, so no item reads while another writes."""
        guarded = self._guard_single(line)
        renames = getattr(getattr(V.graph, "scheduler", None), "mutation_real_name", None) or {}
        real = renames.get(name, name)  # a mutated graph input's own name
        aliased = any(n in self.args.input_buffers or n in self.args.inplace_buffers for n in (name, real))
        if guarded is line or not aliased:
            buffer.writeline(DeferredLine(name, guarded))
            return
        fence = "barrier(CLK_GLOBAL_MEM_FENCE);"
        if not (buffer._lines and buffer._lines[-1] == fence):  # one between two such stores
            buffer.writeline(fence)
        buffer.writeline(DeferredLine(name, guarded))
        buffer.writeline(fence)

    def store(self, name: str, index: sympy.Expr, value, mode=None) -> None:
        line = self._store_line(name, index, value, mode)
        if self.inside_reduction:
            self.stores.writeline(DeferredLine(name, line))
            return
        self.outside_loop_vars.add(value)
        self._write_single(self.stores, name, line)

    def store_reduction(self, name: str, index: sympy.Expr, value) -> None:
        self._write_single(self.post_loop_store, name, self._store_line(name, index, value))

    def masked(self, mask, body, other):
        """`body` evaluated where `mask` holds (its loads guarded), `other` elsewhere."""
        scoped = IndentedBuffer()
        self._masked_depth += 1
        try:
            with self.swap_buffers(scoped), scoped.indent():
                self.cse.iter_buffer_ids = itertools.count()
                self.cse.name_prefix += "_masked"
                result = body()
        finally:
            self._masked_depth -= 1
        dtype = getattr(result, "dtype", None) or torch.float32
        key = f"masked:{mask}:{scoped.getvalue()}:{other}:{result}"
        var = self.cse.try_get(key)
        if var is None:
            var = self.cse.newvar(dtype=dtype)
            self.variant_vars.add(str(var))
            self.cse.put(key, var)
            if not self.inside_reduction:
                self.outside_loop_vars.add(var)
            t = compute_type(dtype)
            self.compute.writelines([f"{t} {var};", f"if ({mask}) {{"])
            with self.compute.indent():
                self.compute.splice(scoped)
                self.compute.writeline(f"{var} = ({t})({result});")
            self.compute.writeline(f"}} else {var} = ({t})({literal(other, dtype) if isinstance(other, (bool, int, float)) else other});")
        return var

    def check_bounds(self, expr, size, lower, upper) -> None:
        # An index out of range is recorded in the graph's index-error buffer and clamped into range, so
        # nothing is read or written outside a buffer; the wrapper raises IndexError when the graph's run
        # ends (eager raises at the call; Inductor's Triton kernels assert on the device).
        if not (lower or upper) or not isinstance(expr, sympy.Symbol):
            return
        var, limit = str(expr), self.index_to_str(size)
        outside = []
        if lower:
            outside.append(f"{var} < 0")
        if upper:
            outside.append(f"{var} >= ({limit})")
        self.uses_index_errors = True
        self.compute.writeline(
            f"if ({' || '.join(outside)}) {var} = tocl_index_error({INDEX_ERRORS}, {var}, {limit});"
        )

    # --- reductions

    def _acc_var(self, dtype: torch.dtype, init: str, prefix: str = "acc"):
        """A new accumulator, initialised to `init` before the reduction loop; in the CPU form an array
        of one per lane, and the name returned is this lane's element."""
        name = f"{prefix}{next(self.acc_ids)}"
        lanes = self.form.lanes
        if lanes > 1:
            self.pre_loop.writeline(f"{compute_type(dtype)} {name}[{lanes}] = {{{', '.join([init] * lanes)}}};")
            return f"{name}[lane]"
        self.pre_loop.writeline(f"{compute_type(dtype)} {name} = {init};")
        return name

    _LANE_TREE = re.compile(r"^@lane_tree(\d+)@$")

    def _combine_lanes(self, accs: list[tuple[str, torch.dtype]], combine: str) -> list[str]:
        """The CPU form: returns the row's values from the lanes' partials `accs` (`name[lane]`).
        Row lanes meet in a tree, in an order that does not depend on the row's length; with column
        lanes each lane is its own output's whole reduction. Which one is known only when the loop is
        written (_choose_lanes): until then the tree is a placeholder line and the lane a placeholder
        index, both filled in by _lane_results. `combine` as for _combine_in_local."""
        names = [acc.split("[")[0] for acc, _ in accs]
        self.post_loop_combine.writeline(f"@lane_tree{len(self._lane_trees)}@")
        self._lane_trees.append(([(n, d) for n, (_, d) in zip(names, accs)], combine))
        return [f"{name}[@lane@]" for name in names]

    def _lane_results(self) -> IndentedBuffer:
        """post_loop_combine with its lane placeholders filled in for the form chosen."""
        out = IndentedBuffer()
        column = self.form.column_lanes
        for line in self.post_loop_combine._lines:
            tree = self._LANE_TREE.match(line.strip()) if isinstance(line, str) else None
            if tree is None:
                out.writeline(line.replace("@lane@", "lane" if column else "0") if isinstance(line, str) else line)
            elif not column:
                accs, combine = self._lane_trees[int(tree.group(1))]
                out.writeline(f"for (int s = {self.form.lanes // 2}; s > 0; s >>= 1) {{")
                with out.indent():
                    out.writeline("for (int k = 0; k < s; ++k) {")
                    with out.indent():
                        for i, (name, dtype) in enumerate(accs):
                            out.writeline(f"{compute_type(dtype)} a{i} = {name}[k], b{i} = {name}[k + s];")
                        out.splice(combine)
                        for i, (name, _) in enumerate(accs):
                            out.writeline(f"{name}[k] = a{i};")
                    out.writeline("}")
                out.writeline("}")
        return out

    def _combine_in_local(self, accs: list[tuple[str, torch.dtype]], combine: str) -> list[str]:
        """The GPU form: per-work-item partials `accs` meet in local memory; returns the row's values.

        `combine` is C code using a{i} (this work-item's) and b{i} (the partner's) for each accumulator,
        updating a{i}."""
        if self.form.lanes > 1:
            return self._combine_lanes(accs, combine)
        if not self.form.group_rows:
            return [a for a, _ in accs]
        rg, cols = self.form.row_group, self.form.columns
        # Slots: [r0_lid] for one row, [r0_lid * cols + x_lane] for the column form's adjacent rows.
        mine, partner, result = (
            ("r0_lid", "r0_lid + s", "0") if cols == 1 else
            (f"r0_lid * {cols} + x_lane", f"(r0_lid + s) * {cols} + x_lane", "x_lane")
        )
        locals_ = []
        for acc, dtype in accs:
            arr = f"{acc}_local"
            self.kernel_scope.writeline(f"__local {compute_type(dtype)} {arr}[{rg * cols}];")
            self.post_loop_combine.writeline(f"{arr}[{mine}] = {acc};")
            locals_.append(arr)
        buf = self.post_loop_combine
        buf.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
        buf.writeline(f"for (int s = {rg // 2}; s > 0; s >>= 1) {{")
        with buf.indent():
            buf.writeline("if (r0_lid < s) {")
            with buf.indent():
                for i, ((_, dtype), arr) in enumerate(zip(accs, locals_)):
                    t = compute_type(dtype)
                    buf.writeline(f"{t} a{i} = {arr}[{mine}], b{i} = {arr}[{partner}];")
                buf.splice(combine)
                for i, arr in enumerate(locals_):
                    buf.writeline(f"{arr}[{mine}] = a{i};")
            buf.writeline("}")
            buf.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
        buf.writeline("}")
        return [f"{arr}[{result}]" for arr in locals_]

    def _result(self, expr: str, dtype: torch.dtype):
        var = self.cse.newvar(dtype=dtype)
        self.variant_vars.add(str(var))
        self.post_loop_combine.writeline(f"{compute_type(dtype)} {var} = {expr};")
        self.outside_loop_vars.add(var)
        return var

    def reduction(self, dtype, src_dtype, reduction_type, value):
        key = (src_dtype, reduction_type, value)
        if key in self.cse.reduction_cache:
            return self.cse.reduction_cache[key]
        result = self._reduction(dtype, src_dtype, reduction_type, value)
        self.cse.reduction_cache[key] = result
        return result

    def _reduction(self, dtype, src_dtype, reduction_type, value):
        assert self.inside_reduction
        self._note_dtype(src_dtype)
        self._note_dtype(dtype)
        r = self.index_dtype
        if reduction_type in ("sum", "prod", "xor_sum", "any"):
            acc_dtype = torch.bool if reduction_type == "any" else _ACC_DTYPE.get(src_dtype, src_dtype)
            if reduction_type == "sum" and acc_dtype != dtype and dtype.is_floating_point:
                acc_dtype = _ACC_DTYPE.get(dtype, dtype)
            op, init = {"sum": ("+", "0"), "prod": ("*", "1"), "xor_sum": ("^", "0"), "any": ("||", "false")}[
                reduction_type
            ]
            acc = self._acc_var(acc_dtype, init)
            self.compute.writeline(f"{acc} = {acc} {op} ({value});")
            (row,) = self._combine_in_local([(acc, acc_dtype)], f"a0 = a0 {op} b0;")
            return self._result(row, acc_dtype if reduction_type != "any" else torch.bool)
        if reduction_type in ("max", "min"):
            is_max = reduction_type == "max"
            acc = self._acc_var(src_dtype, lowest(src_dtype) if is_max else highest(src_dtype))
            if src_dtype.is_floating_point:
                pick = "TOCL_FMAX" if is_max else "TOCL_FMIN"
                self.compute.writeline(f"{acc} = {pick}(({compute_type(src_dtype)})({value}), {acc});")
                combine = f"a0 = {pick}(b0, a0);"
            else:
                cmp = ">" if is_max else "<"
                self.compute.writeline(f"if (({value}) {cmp} {acc}) {acc} = {value};")
                combine = f"if (b0 {cmp} a0) a0 = b0;"
            (row,) = self._combine_in_local([(acc, src_dtype)], combine)
            return self._result(row, src_dtype)
        if reduction_type in ("argmax", "argmin"):
            is_max = reduction_type == "argmax"
            best = self._acc_var(src_dtype, lowest(src_dtype) if is_max else highest(src_dtype))
            where = self._acc_var(torch.int64, "0", prefix="idx")
            cmp = ">" if is_max else "<"
            v = f"(({compute_type(src_dtype)})({value}))"
            if src_dtype.is_floating_point:
                better = f"({v} {cmp} {best} || (isnan({v}) && !isnan({best})))"
            else:
                better = f"({v} {cmp} {best})"
            self.compute.writeline(f"if ({better}) {{ {best} = {v}; {where} = r0_index; }}")
            if src_dtype.is_floating_point:
                combine = (
                    f"if (b0 {cmp} a0 || (isnan(b0) && !isnan(a0)) || "
                    "((b0 == a0 || (isnan(b0) && isnan(a0))) && b1 < a1)) { a0 = b0; a1 = b1; }"
                )
            else:
                combine = f"if (b0 {cmp} a0 || (b0 == a0 && b1 < a1)) {{ a0 = b0; a1 = b1; }}"
            _, row_idx = self._combine_in_local([(best, src_dtype), (where, torch.int64)], combine)
            return self._result(row_idx, dtype)
        if reduction_type in ("welford_reduce", "welford_combine"):
            acc_dtype = torch.float64 if src_dtype == torch.float64 else torch.float32
            t = compute_type(acc_dtype)
            mean = self._acc_var(acc_dtype, "0", "mean")
            m2 = self._acc_var(acc_dtype, "0", "m2")
            weight = self._acc_var(acc_dtype, "0", "weight")
            if reduction_type == "welford_reduce":
                self.compute.splice(
                    f"""
                    {{
                        const {t} x_ = ({t})({value});
                        {weight} += 1;
                        const {t} delta_ = x_ - {mean};
                        {mean} += delta_ / {weight};
                        {m2} += delta_ * (x_ - {mean});
                    }}"""
                )
            else:
                vmean, vm2, vweight = value
                self.compute.splice(self._welford_merge(t, mean, m2, weight, vmean, vm2, vweight))
            merge = self._welford_merge(t, "a0", "a1", "a2", "b0", "b1", "b2")
            rows = self._combine_in_local([(mean, acc_dtype), (m2, acc_dtype), (weight, acc_dtype)], merge)
            return tuple(self._result(row, acc_dtype) for row in rows)
        raise Unsupported(f"reduction {reduction_type}")

    @staticmethod
    def _welford_merge(t, mean, m2, weight, bmean, bm2, bweight) -> str:
        return f"""
            if ({bweight} != 0) {{
                const {t} w_ = {weight} + {bweight};
                const {t} delta_ = {bmean} - {mean};
                const {t} frac_ = {bweight} / w_;
                {mean} += delta_ * frac_;
                {m2} += {bm2} + delta_ * delta_ * {weight} * frac_;
                {weight} = w_;
            }}"""

    # --- assembly

    def codegen_body(self) -> None:
        if not (
            self.indexing_code
            or self.loads
            or self.compute
            or self.stores
            or self.pre_loop
            or self.post_loop_combine
            or self.post_loop_store
        ):
            return
        loop_trees = [t for t in self.range_trees if t.is_loop]
        if self.inside_reduction and loop_trees:
            (tree,) = loop_trees
            numel = cexpr(tree.numel) if isinstance(tree.numel, sympy.Integer) else f"{tree.prefix}numel"
            assert not self._lane_loop_open, "column lanes take one reduction loop (_single_loop)"
            if self.form.column_lanes:
                self._choose_lanes()
            if self.form.column_lanes:
                self._codegen_column_lanes(tree.prefix, numel)
            elif self.form.lanes > 1:
                self.body.splice(self.pre_loop)
                self._codegen_lane_loops(tree.prefix, numel)
            else:
                self.body.splice(self.pre_loop)
                start, step = ("r0_lid", self.form.row_group) if self.form.group_rows else ("0", 1)
                self.body.writeline(
                    f"for ({self.index_dtype} {tree.prefix}index = {start}; {tree.prefix}index < {numel}; "
                    f"{tree.prefix}index += {step}) {{"
                )
                with self.body.indent():
                    self._splice_loop_body()
                self.body.writeline("}")
            # Values computed inside the loop are gone after it.
            self.cse.invalidate(self.outside_loop_vars)
            tree.cache_clear()
        else:
            self._splice_loop_body()
        self.body.splice(self._lane_results() if self._lane_trees else self.post_loop_combine)
        self.body.splice(self.post_loop_store)
        for buf in (
            self.indexing_code,
            self.loads,
            self.compute,
            self.stores,
            self.pre_loop,
            self.post_loop_combine,
            self.post_loop_store,
        ):
            buf.clear()

    def _splice_loop_body(self) -> None:
        for buf in (self.indexing_code, self.loads, self.compute, self.stores):
            self.body.splice(buf)

    def _codegen_lane_loops(self, prefix: str, numel: str) -> None:
        """The CPU form's reduction loop: whole blocks of LANES elements, element `lane` of a block in
        that lane (a loop of constant trip count, which the compiler unrolls and vectorises), then the
        row's last partial block in lanes 0, 1, ... The body is written twice, once per loop."""
        idx, lanes = self.index_dtype, self.form.lanes
        whole = f"({numel} - {numel} % {lanes})"
        self.body.writeline(f"for ({idx} r0_base = 0; r0_base < {whole}; r0_base += {lanes}) {{")
        with self.body.indent():
            self.body.writeline(f"for (int lane = 0; lane < {lanes}; ++lane) {{")
            with self.body.indent():
                self.body.writeline(f"const {idx} {prefix}index = r0_base + lane;")
                self._splice_loop_body()
            self.body.writeline("}")
        self.body.writeline("}")
        self.body.writeline(f"for (int lane = 0; lane < {numel} % {lanes}; ++lane) {{")
        with self.body.indent():
            self.body.writeline(f"const {idx} {prefix}index = {whole} + lane;")
            self._splice_loop_body()
        self.body.writeline("}")

    def _codegen_column_lanes(self, prefix: str, numel: str) -> None:
        """The CPU form's column lanes: for each index of the reduction, the same element of LANES
        adjacent outputs (`xindex = xblock + lane`), then, lane by lane, the results and what follows
        them (the code over outputs after the loop lands inside this last loop; codegen_work closes
        it). What the body held before (the outputs' index arithmetic, written from xblock and lane
        where it can be) is repeated in both loops."""
        idx, lanes = self.index_dtype, self.form.lanes
        block = FloorDiv(sympy.Symbol("xblock", integer=True), lanes)
        prologue = self._rewritten(self.body, self._index_rewrites(lanes, block, sympy.Symbol("lane", integer=True)))
        self.body.clear()
        self.body.splice(self.pre_loop)
        self.body.writeline(f"for ({idx} {prefix}index = 0; {prefix}index < {numel}; ++{prefix}index) {{")
        with self.body.indent():
            self.body.writeline(f"for (int lane = 0; lane < {lanes}; ++lane) {{")
            with self.body.indent():
                self.body.writeline(f"const {idx} xindex = xblock + lane;")
                self.body.splice(prologue)
                self._splice_loop_body()
            self.body.writeline("}")
        self.body.writeline("}")
        self.body.writeline(f"for (int lane = 0; lane < {lanes}; ++lane) {{")
        self.body.do_indent()
        self.body.writeline(f"const {idx} xindex = xblock + lane;")
        self.body.splice(prologue)
        self._lane_loop_open = True

    def kernel_params(self) -> list[Param]:
        """The kernel's parameters in one order: Inductor's own (in-place buffers, inputs, outputs, size
        variables), then the numels that are not constants (their `outer` is None: call_kernel fills it)."""
        from torch._inductor.codegen.common import SizeArg, TensorArg

        if self.args.workspace_args:
            raise Unsupported("kernel workspaces")
        params = []
        arg_defs, outer_names, precompile_args, _ = self.args.python_argdefs()
        for inner, outer, arg in zip(arg_defs, outer_names, precompile_args):
            if isinstance(arg, SizeArg):
                params.append(Param(inner.name, str(outer), "long"))
            elif isinstance(arg, TensorArg) and outer in self.scalar_args:
                self._note_dtype(arg.dtype)
                by_value = {torch.float64: "double", torch.int64: "long", torch.uint64: "ulong"}
                t = by_value.get(arg.dtype, "float" if arg.dtype.is_floating_point else "long")
                params.append(Param(inner.name, f"{outer}.item()", t))
            elif isinstance(arg, TensorArg):
                self._note_dtype(arg.dtype)
                writes = not inner.name.startswith("in_ptr")
                params.append(Param(inner.name, str(outer), storage_type(arg.dtype), pointer=True, writes=writes))
            else:
                raise Unsupported(f"kernel argument {arg}")
        for (buffer, index), param in self.host_seed_params.items():
            params.append(Param(param, f"{buffer}[{index}].item()", "long"))
        if self.uses_index_errors:
            device = V.graph.get_current_device_or_throw()
            wrapper = V.graph.wrapper_code
            while not hasattr(wrapper, "index_errors_buffer"):  # a subgraph's kernels live in its parent's module
                wrapper = wrapper.parent_wrapper
            outer = wrapper.index_errors_buffer(device)
            params.append(Param(INDEX_ERRORS, outer, "int", pointer=True, writes=True))
        for tree in self.active_range_trees():
            if not isinstance(tree.numel, sympy.Integer):
                params.append(Param(f"{tree.prefix}numel", None, "long"))
        return params

    def xnumel_code(self) -> str:
        x = self.numels.get("x", sympy.S.One)
        return cexpr(x) if isinstance(x, sympy.Integer) else "xnumel"

    def codegen_work(self, code: IndentedBuffer, first: str | None = None) -> None:
        """The body with its mapping to work-items: in the CPU form a loop over this work-item's chunk of
        the outputs; in the GPU form one output per work-item (or, for reductions, per work-group).
        `first` (combo kernels, GPU form): the global id (work-group id, for a work-group per row) of
        this kernel's first output, the caller having checked that the id falls in this kernel's range."""
        xnumel, idx = self.xnumel_code(), self.index_dtype
        if self.form.chunked:
            code.splice(self.hoisted)
            row = None if self.rng_blocked else self._split_row()
            lanes = self.form.lanes
            unit = self._outputs_per_step()
            units, times = (xnumel, "") if unit == 1 else (f"{xnumel} / {unit}", f" * {unit}")
            # This work-item's chunk of the outputs, whole blocks of `unit` (which divides xnumel).
            code.writeline(f"const {idx} xper = ({units} + get_global_size(0) - 1) / get_global_size(0){times};")
            code.writeline(f"const {idx} xstart = get_global_id(0) * xper;")
            code.writeline(f"const {idx} xend = xstart + xper < {xnumel} ? xstart + xper : {xnumel};")
            if self.form.column_lanes:
                code.writeline(f"for ({idx} xblock = xstart; xblock < xend; xblock += {lanes}) {{")
                with code.indent():
                    code.splice(self.body)
                    if self._lane_loop_open:
                        code.writeline("}")
            elif self.rng_blocked:
                code.writeline(f"for ({idx} xblock = xstart; xblock < xend; xblock += {unit}) {{")
                with code.indent():
                    code.writeline("#pragma unroll")
                    code.writeline(f"for (int lane = 0; lane < {unit}; ++lane) {{")
                    with code.indent():
                        code.writeline(f"const {idx} xindex = xblock + lane;")
                        code.splice(self.body)
                    code.writeline("}")
            elif row:
                body = self._rewritten(self.body, self._index_rewrites(
                    row, sympy.Symbol("xouter", integer=True), sympy.Symbol("xinner", integer=True)))
                code.writeline(f"for ({idx} xouter = xstart / {row}; xouter < xend / {row}; ++xouter) {{")
                with code.indent():
                    code.writeline(f"for ({idx} xinner = 0; xinner < {row}; ++xinner) {{")
                    with code.indent():
                        code.writeline(f"const {idx} xindex = xouter * {row} + xinner;")
                        code.splice(body)
                    code.writeline("}")
            elif vectors := self._vector_body():
                # 16 outputs a step as float16 vectors (vectors.py), the chunk's last ones one at a time.
                code.writeline(f"const {idx} xvend = xend > xstart ? xstart + (xend - xstart) / {WIDTH} * {WIDTH} : xstart;")
                code.writeline(f"for ({idx} xindex = xstart; xindex < xvend; xindex += {WIDTH}) {{")
                with code.indent():
                    code.splice(vectors)
                code.writeline("}")
                code.writeline(f"for ({idx} xindex = xvend; xindex < xend; ++xindex) {{")
                with code.indent():
                    code.splice(self.body)
            else:
                code.writeline(f"for ({idx} xindex = xstart; xindex < xend; ++xindex) {{")
                with code.indent():
                    code.splice(self.body)
            code.writeline("}")
            return
        if self.form.columns > 1:  # never combined (combo.py): no `first`
            cols = self.form.columns
            code.writeline(f"const int x_lane = get_local_id(0) % {cols};")
            code.writeline(f"const {idx} xindex = get_group_id(0) * {cols} + x_lane;")
            code.writeline(f"const int r0_lid = get_local_id(0) / {cols};")
        elif self.form.group_rows:
            offset = f" - {first}" if first is not None else ""
            code.writeline(f"const {idx} xindex = get_group_id(0){offset};")
            code.writeline("const int r0_lid = get_local_id(0);")
        elif first is not None:
            code.writeline(f"const {idx} xindex = get_global_id(0) - {first};")
        else:
            code.writeline(f"const {idx} xindex = get_global_id(0);")
            code.writeline(f"if (xindex >= {xnumel}) return;")
        code.splice(self.body)

    def _outputs_per_step(self) -> int:
        """The CPU form's outputs per step of a work-item's loop, which divides its chunk: the column lanes,
        a Philox block (rng_memo), a row (_split_row), a vector (_vector_body), or one output."""
        if self.form.column_lanes:
            return self.form.lanes
        if self.rng_blocked:
            return self.RNG_BLOCK
        if row := self._split_row():
            return row
        x = self.numels.get("x")
        whole = isinstance(x, sympy.Integer) and int(x) % WIDTH == 0
        return WIDTH if whole and self._vector_body() else 1

    def _vector_body(self) -> IndentedBuffer | None:
        """The CPU form's body as a step of 16 outputs in float16 vectors (vectors.py), where the device asks
        for vectors (kernel_forms' pointwise_vectors), the kernel is pointwise and its body qualifies; else
        None."""
        if self._vectors is not None:  # asked again by codegen_work and launch_geometry: the body is final
            return self._vectors or None
        self._vectors = False
        if self.features.is_reduction() or self.rng_blocked or self._split_row():
            return None
        from .. import device_module

        if not device_module.get_device_properties(V.graph.get_current_device_or_throw()).pointwise_vectors:
            return None
        self._vectors = vector_body(self.body._lines, self.hoisted._lines) or False
        return self._vectors or None

    def _split_row(self) -> int | None:
        """The CPU form of a pointwise kernel by rows (see the module's note): the row length, the
        innermost divisor of the flat index among the kernel's indices (codegen_work writes the indices
        from xouter, the row, and xinner, the place in it). None where the kernel does not split (a
        reduction, dynamic sizes, rows too short or too few to give every core a work-group)."""
        x = self.numels.get("x")
        if self.features.is_reduction() or not isinstance(x, sympy.Integer):
            return None
        (tree,) = [t for t in self.range_trees if t.prefix == "x"]
        entries = list(tree.nodes.values())
        divisors = [int(e.divisor) for e in entries if isinstance(e.divisor, sympy.Integer) and e.divisor > 1]
        if not divisors or not all(isinstance(e.length, sympy.Integer) for e in entries):
            return None
        row, numel = min(divisors), int(x)
        from .. import device_module

        props = device_module.get_device_properties(V.graph.get_current_device_or_throw())
        cores = max(1, int(props.compute_units))
        if row < self.form.CPU_MIN_ROW or numel % row or numel // row < cores * self.form.CPU_GROUP:
            return None
        return row

    def _index_rewrites(self, row: int, block: sympy.Expr, place: sympy.Expr) -> dict[str, str]:
        """The lines that declare the kernel's output indices (x entries), each mapped to a simpler one
        where xindex = block * row + place (0 <= place < row, row divides the outputs) makes it a
        function of the block or the place alone, or of the block plus the place."""
        (tree,) = [t for t in self.range_trees if t.prefix == "x"]
        numel = int(self.numels["x"])
        rewrites = {}
        for e in tree.nodes.values():
            if not (isinstance(e.divisor, sympy.Integer) and isinstance(e.length, sympy.Integer)):
                continue
            d, n = int(e.divisor), int(e.length)
            if d == 1 and n == numel:  # xindex itself
                continue
            if d % row == 0:  # whole blocks
                expr = FloorDiv(block, d // row) if d * n == numel else ModularIndexing(block, d // row, n)
            elif row % (d * n) == 0:  # inside a block
                expr = place if d == 1 and n == row else ModularIndexing(place, d, n)
            elif d == 1 and n % row == 0:  # blocks that wrap at n
                expr = ModularIndexing(block, 1, n // row) * row + place
            else:
                continue
            line = f"{self.index_dtype} {e.name} = {cexpr(self.rename_indexing(e.expr))};"
            rewrites[line] = f"{self.index_dtype} {e.name} = {cexpr(expr)};"
        return rewrites

    @staticmethod
    def _rewritten(buffer: IndentedBuffer, rewrites: dict[str, str]) -> IndentedBuffer:
        out = IndentedBuffer()
        for line in buffer._lines:
            out.writeline(rewrites.get(line.strip(), line) if isinstance(line, str) else line)
        return out

    def codegen_kernel(self, name: str | None = None) -> str:
        self.codegen_body()
        code = IndentedBuffer()
        code.writeline(f"__kernel void {name or KERNEL_NAME_PLACEHOLDER}({', '.join(declare(self.kernel_params()))}) {{")
        with code.indent():
            code.splice(self.kernel_scope)
            self.codegen_work(code)
        code.writeline("}")
        return code.getvalue()

    def call_args(self, name: str, params: list[Param]) -> list[str]:
        """The wrapper's arguments for `params`, the numels that are not constants computed there."""
        wrapper = V.graph.wrapper_code
        for v in self.args.sizevars:
            wrapper.ensure_size_computed(v)
        dynamic = iter(t for t in self.active_range_trees() if not isinstance(t.numel, sympy.Integer))
        args = []
        for p in params:
            if p.outer is None:
                tree = next(dynamic)
                expr = tree.numel if isinstance(tree.numel, sympy.Symbol) else wrapper.generate_numel_expr(
                    name, tree
                ).inner
                args.append(self.pexpr(expr) if isinstance(expr, sympy.Expr) else str(expr))
            else:
                args.append(p.outer)
        return args

    def launch_geometry(self) -> tuple[str, int]:
        """(global size as a Python expression of the wrapper, work-group size)."""
        x = self.numels.get("x", sympy.S.One)
        g = self.form.group
        if self.form.chunked:
            # A few work-items per core, each with a contiguous chunk; fewer when there is less work.
            cap = self.form.max_threads
            if isinstance(x, sympy.Integer):
                units = int(x) // self._outputs_per_step()
                n = min(units, cap)
                group = min(g, n)
                return str(-(-n // group) * group), group
            return f"min(-(-({self.pexpr(x)}) // {g}) * {g}, {cap})", g
        if self.form.group_rows:
            rg = self.form.row_group  # the column form: x is a static multiple of its columns
            threads = f"{self.pexpr(x * rg)}" if isinstance(x, sympy.Integer) else f"({self.pexpr(x)}) * {rg}"
            return threads, rg * self.form.columns
        if isinstance(x, sympy.Integer):
            return str(-(-int(x) // g) * g), g
        return f"-(-({self.pexpr(x)}) // {g}) * {g}", g

    def call_kernel(self, name: str, node: Any = None, deallocate_ws: bool = True) -> None:
        args = self.call_args(name, self.kernel_params())
        threads, group = self.launch_geometry()
        args += [f"threads={threads}", f"group_size={group}"]
        V.graph.wrapper_code.generate_kernel_call(
            name, args, device=V.graph.get_current_device_or_throw(), triton=False
        )


@dataclasses.dataclass
class Param:
    """One kernel parameter: its name in the kernel, the wrapper's argument for it (None: a numel that
    call_kernel computes), its C type (the element type for buffers)."""

    name: str
    outer: str | None
    ctype: str
    pointer: bool = False
    writes: bool = False


# The element types a generated kernel adds to atomically (kernels_cl/inductor.cl), by how: the 64-bit
# ones only where the device has cl_khr_int64_base_atomics (lowerings.py keeps those ops eager elsewhere).
_NARROW_ATOMIC_KIND = {torch.float16: (2, 1), torch.bfloat16: (2, 2), torch.int16: (2, 0), torch.uint16: (2, 0),
                       torch.int8: (1, 0), torch.uint8: (1, 0)}


def atomic_add_line(dtype: torch.dtype, address: str, value: str) -> str:
    if dtype == torch.float32:
        return f"tocl_atomic_add_float({address}, {value});"
    if dtype in (torch.int32, torch.uint32):
        return f"atomic_add({address}, ({storage_type(dtype)})({value}));"
    if dtype == torch.float64:
        return f"tocl_atomic_add_double({address}, {value});"
    if dtype in (torch.int64, torch.uint64):
        return f"atom_add({address}, ({storage_type(dtype)})({value}));"
    if dtype in _NARROW_ATOMIC_KIND:
        width, kind = _NARROW_ATOMIC_KIND[dtype]
        float_value, int_value = (f"(float)({value})", "0") if kind else ("0.0f", f"(long)({value})")
        return f"tocl_atomic_add_narrow({address}, {width}, {float_value}, {int_value}, {kind});"
    raise Unsupported(f"atomic_add store of {dtype}")


def declare(params: list[Param]) -> list[str]:
    """The kernel's parameter declarations. A buffer passed once is restrict (nothing else in the kernel
    aliases it): the compiler may then keep loads of row- or kernel-invariant values out of the work-item
    loop. A mutated input passed as an input and an output pointer to one buffer is not."""
    uses = Counter(p.outer for p in params if p.pointer)
    out = []
    for p in params:
        if p.pointer:
            const = "" if p.writes else "const "
            restrict = " restrict" if uses[p.outer] == 1 else ""
            out.append(f"__global {const}{p.ctype}*{restrict} {p.name}")
        else:
            out.append(f"{p.ctype} {p.name}")
    return out
