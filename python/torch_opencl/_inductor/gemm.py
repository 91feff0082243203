"""Matrix products that torch.compile generates, with their epilogues, on CPU-class devices.

Elsewhere a compiled graph calls mm and addmm as extern kernels (our ATen GEMM), and what follows a product
(a bias, an activation, dropout, the mask of an activation's gradient) is a kernel of its own, a second pass
over the product. Here a float32 mm of static sizes lowers to an Inductor template (an ir.TemplateBuffer, as
Inductor's Triton mm templates) whose kernel computes a tile of the product in registers
(kernels_cl/inductor_gemm.cl) and then runs the pointwise nodes Inductor fuses after it on each element of
the tile, storing only what the graph needs. addmm becomes that product plus a pointwise add, which Inductor
then fuses into it. One launch where the extern path took a B-pack, the product and the epilogue's kernel.
Inductor fuses only pointwise epilogues into templates; a linear layer's bias gradient (the column sums of
the output's gradient T, a reduction) is paired with its weight gradient mm(T.t(), X) by the device's
post-grad pass (pair_layer_gradients) and computed in that product's kernel as the row sums of its A, a second
output the kernel writes. The same pass pairs that weight gradient with the layer's input gradient mm(T, W)
before it, and both products (and the row sums) are one launch (tuned_mm_group): the second product's
work-groups follow the first's, and its tile is stored as it is. Where the tile's rows are whole vectors of
the row, the epilogue runs on 16 of them at a time (_vector_epilogue).

The tile's form follows the operands' layouts:
* A and B both adjacent along k (x @ w.t(), a linear layer's forward) and at most NT_MAX_ROWS rows: dot
  products along k, with no pack of the transposed weight;
* else the register tile of kernels_cl/gemm.cl, reading B's rows as vectors. Where eager would pack B first
  (its columns not adjacent, its last tile partial, or large panels many row tiles reuse:
  small_gemm_packs_b in gemm_small.cpp, asked through _C), each work-group of STAGING_GROUP row tiles stages
  its column tile's panel in local memory; a panel too large for that goes through eager's pack (a launch
  before the product's).
Other dtypes, dynamic sizes and GPU-class devices keep the extern kernels (whose GPU forms have their own
tiles and tensor cores). A product over k = 1 Inductor writes as pointwise code itself.

`enabled` switches the template off (extern products everywhere), for measurements; it is part of the code
generator's cache key (__init__._codegen_version).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import sympy
import torch
from torch._inductor import ir
from torch._inductor.codegen.common import IndentedBuffer
from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from .. import _C

from .kernel import KERNEL_NAME_PLACEHOLDER, OpenCLKernel, Param, declare
from .vectors import WIDTH, vector_body

enabled = True

PANEL = "gemm_panel"  # the kernel parameter of B's packed panel

# The nt form for products of at most this many rows. PoCL, 2-core AVX-512, device time of a compiled product
# against eager's pack and product: 128 x 784 x 256 (the MLP's first layer) 497 vs 750 us, 128 x 256 x 256
# 175 vs 187; 1024 x 128 x 384 1026 vs 631, 1024 x 512 x 128 917 vs 759 (many row tiles: the register tile
# over a packed panel reuses B's columns, the nt form rereads them for every row tile).
NT_MAX_ROWS = 128
STAGING_GROUP = 16  # work-items (row tiles of one column tile) per work-group where B's panel is staged
STAGING_MAX_BYTES = 256 << 10


@dataclasses.dataclass(frozen=True)
class GemmPlan:
    """One product C (m, n) = A (m, k) @ B (k, n) and its tile: element (i, j) of A is at a_off + i * sam +
    j * sak of its buffer, and so on for B."""

    m: int
    n: int
    k: int
    a_off: int
    sam: int
    sak: int
    b_off: int
    sbk: int
    sbn: int
    form: str  # "nn" (register tile) or "nt" (dot products along k)
    vector: int  # floats per vector (TOCL_GEMM_VW)
    rows: int  # rows of C per tile
    cols: int  # columns of C per tile
    pack: bool = False  # the nn form reads B through panels eager's pack makes (gemm.cl), launched before
    staged: bool = False  # ... or through its column tile's panel, staged in local memory by each work-group
    row_sums: bool = False  # also A's row sums (a bias gradient: see pair_layer_gradients), by the first column tile

    @property
    def groups_per_column(self) -> int:
        return -(-self.tiles_m // STAGING_GROUP)

    @property
    def tiles_m(self) -> int:
        return -(-self.m // self.rows)

    @property
    def tiles_n(self) -> int:
        return -(-self.n // self.cols)

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n


def _static(values) -> list[int] | None:
    out = []
    for v in values:
        if not isinstance(v, (int, sympy.Integer)):
            return None
        out.append(int(v))
    return out


def _fixed_input(x):
    """`x` realized, as a Buffer or ReinterpretView of fixed layout (a flexible one frozen as it stands)."""
    x = ir.ExternKernel.realize_input(x)
    x = ir.InputsKernel.unwrap_storage_for_input(x)
    if isinstance(x, ir.Buffer) and isinstance(x.get_layout(), ir.FlexibleLayout):
        x.freeze_layout()
    return x if isinstance(x, (ir.Buffer, ir.ReinterpretView)) else None


def _plan(mat1, mat2) -> tuple[GemmPlan, Any, Any] | None:
    """The template's plan for mat1 @ mat2, with the fixed inputs; None where the extern product stays."""
    if not enabled:
        return None
    device = mat1.get_device()
    if device is None or device.type != "opencl" or mat2.get_device() != device:
        return None
    if mat1.get_dtype() != torch.float32 or mat2.get_dtype() != torch.float32:
        return None
    sizes = _static([*mat1.get_size(), *mat2.get_size()])
    if sizes is None or len(sizes) != 4:
        return None
    m, k, k2, n = sizes
    if k != k2 or min(m, n, k) < 1 or max(m * n, m * k, k * n) >= 2**31:
        return None
    from .. import device_module

    props = device_module.get_device_properties(device)
    vector, rows = int(props.cpu_gemm_vector_width), int(props.cpu_gemm_rows)
    if not vector:
        return None  # a GPU-class device: the extern product's tiles
    a, b = _fixed_input(mat1), _fixed_input(mat2)
    if a is None or b is None:
        return None
    a_strides, b_strides = _static(a.get_stride()), _static(b.get_stride())
    offsets = _static([a.get_layout().offset, b.get_layout().offset])
    if a_strides is None or b_strides is None or offsets is None:
        return None
    (sam, sak), (sbk, sbn) = a_strides, b_strides
    sam, sbn = (0 if m == 1 else sam), (1 if n == 1 else sbn)
    sak, sbk = (1 if k == 1 else sak), (1 if k == 1 else sbk)
    if sak == 1 and sbk == 1 and m <= NT_MAX_ROWS:
        nt_rows, nt_cols = int(props.cpu_gemm_nt_rows), int(props.cpu_gemm_nt_cols)
        return GemmPlan(m, n, k, offsets[0], sam, sak, offsets[1], sbk, sbn, "nt", vector, nt_rows, nt_cols), a, b
    cols = 2 * vector if n > vector else vector
    # Packed where eager packs (gemm_small.cpp): B's columns not adjacent, its last tile partial, or large
    # panels that many row tiles reuse.
    pack = bool(_C._gemm_packs_b(m, n, k, sbn, cols))
    # Where eager packs, each work-group stages its column tile's panel in local memory instead (no launch, no
    # panel in global memory), when the panel fits; else eager's pack, launched before the product.
    staged = pack and k * cols * 4 <= min(STAGING_MAX_BYTES, int(props.local_memory) // 2)
    plan = GemmPlan(m, n, k, offsets[0], sam, sak, offsets[1], sbk, sbn, "nn", vector, rows, cols,
                    pack and not staged, staged)
    return plan, a, b


def tuned_mm(mat1, mat2, row_sums: bool = False):
    """mat1 @ mat2 as the template, or None. With `row_sums`, (the product, mat1's row sums) from the one
    kernel, or None where the template does not take them (the dot-product form)."""
    planned = _plan(mat1, mat2)
    if planned is None or (row_sums and planned[0].form != "nn"):
        return None
    plan, a, b = planned
    product, _, sums = _template(dataclasses.replace(plan, row_sums=row_sums), a, b)
    return (product, sums) if row_sums else product


def tuned_mm_group(mat1, mat2, mat1_t, x, row_sums: bool):
    """An input gradient T @ W (mat1 = T, mat2 = W) and its layer's weight gradient T.t() @ X (mat1_t = T.t())
    in one launch: (the input gradient, the weight gradient, with `row_sums` T's column sums), or None where
    the template does not take both or one of them would need eager's pack launched before."""
    first, second = _plan(mat1, mat2), _plan(mat1_t, x)
    if first is None or second is None or first[0].pack or second[0].pack:
        return None
    if row_sums and second[0].form != "nn":
        return None
    plan, a, b = first
    grouped, a2, b2 = second
    return _template(plan, a, b, (dataclasses.replace(grouped, row_sums=row_sums), a2, b2))


def _template(plan: GemmPlan, a, b, grouped=None):
    """The template's IR node for `plan` (and a grouped second product: (its plan, A, B)): (the product's
    TensorBox, the grouped product's or None, the row sums' or None). The outputs besides the first are
    buffers allocated empty and written by the kernel (inputs it mutates: how Inductor's templates give more
    than one output, as flex attention's logsumexp)."""
    from torch._inductor.lowering import empty_strided

    device = a.get_device()
    layout = ir.FixedLayout(device, torch.float32, [plan.m, plan.n])
    second_plan, a2, b2 = grouped if grouped is not None else (None, None, None)
    inputs, second, sums = [a, b], None, None
    if second_plan is not None:
        second = empty_strided([second_plan.m, second_plan.n], [second_plan.n, 1], dtype=torch.float32, device=device)
        inputs += [a2, b2, second.data.data]
    summed = second_plan or plan  # the row sums are the weight gradient's: the grouped product's where there is one
    if summed.row_sums:
        sums = empty_strided([summed.m], [1], dtype=torch.float32, device=device)
        inputs.append(sums.data.data)
    mutated = [t.data.data for t in (second, sums) if t is not None]

    def make_kernel_render(template_node, hint_override=None):
        return OpenCLGemmKernel(plan, second_plan), lambda: None

    buf = OpenCLTemplateBuffer(layout=layout, inputs=inputs, make_kernel_render=make_kernel_render,
                               mutated_inputs=mutated or None)
    buf.allow_prologue_fusion = False
    return ir.TensorBox.create(buf), second, sums


class OpenCLTemplateBuffer(ir.TemplateBuffer):
    """The product's IR node; its outputs include the buffers its kernel writes besides the product (the
    row sums), as Inductor's Triton templates list theirs."""

    def get_outputs(self) -> list:
        return [self, *self.mutation_outputs]


ROW_SUMS_OF = "opencl_row_sums_of"  # FX meta of a bias gradient's sum: the weight gradient's mm that computes it
ROW_SUMS = "opencl_row_sums"  # FX meta of that mm: the sum node
GROUPED = "opencl_grouped"  # FX meta of an input gradient's mm T @ W: the weight gradient's mm T.t() @ X it computes
GROUPED_INTO = "opencl_grouped_into"  # FX meta of that weight gradient's mm: the input gradient's


def pair_layer_gradients(graph) -> None:
    """Pairs each product mm(T.t(), X) with a sum(T, [0]) after it: a linear layer's weight gradient and its
    bias gradient, both reading the output gradient T. The lowering of the pair computes the sum in the
    product's kernel (T's columns are A's rows), where it was a reduction kernel of its own over T. It also
    pairs the product with the input gradient mm(T, W) before it, which the lowering computes in the same
    launch (tuned_mm_group). Runs as the device's post-grad pass (__init__.py), on graphs with opencl
    tensors."""
    if not enabled or not _templates_on(graph):
        return
    aten = torch.ops.aten
    order = {node: i for i, node in enumerate(graph.nodes)}
    for node in graph.nodes:
        if node.target is not aten.mm.default or not isinstance(node.args[0], torch.fx.Node):
            continue
        a = node.args[0]
        transposed = (a.target is aten.permute.default and list(a.args[1]) == [1, 0]) or a.target is aten.t.default
        t = a.args[0] if transposed else None
        value = t.meta.get("val") if isinstance(t, torch.fx.Node) else None
        if (value is None or value.dim() != 2 or value.dtype != torch.float32 or value.device.type != "opencl"):
            continue
        for user in t.users:
            # sum(T, [0]) or sum(T, [0], keepdim), of T's dtype (dims may be None: a sum of everything).
            if (user.target is aten.sum.dim_IntList and len(user.args) in (2, 3) and not user.kwargs
                    and isinstance(user.args[1], (list, tuple)) and list(user.args[1]) in ([0], [-2])
                    and ROW_SUMS_OF not in user.meta and order[user] > order[node]):
                node.meta[ROW_SUMS], user.meta[ROW_SUMS_OF] = user, node
                break
        # The layer's input gradient T @ W before it, with X ready by then: both products in one launch.
        x = node.args[1]
        for user in t.users:
            if (user.target is aten.mm.default and user.args[0] is t and not user.kwargs and GROUPED not in user.meta
                    and isinstance(x, torch.fx.Node) and order[user] < order[node] and _ready_before(x, user, order)):
                user.meta[GROUPED], node.meta[GROUPED_INTO] = node, user
                break


def _templates_on(graph) -> bool:
    """Whether the graph's opencl device takes the template (CPU class): elsewhere the pass leaves the graph
    as it is."""
    from .. import device_module

    for node in graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor) and value.device.type == "opencl":
            return bool(device_module.get_device_properties(value.device).cpu_gemm_vector_width)
    return False


def _ready_before(x, node, order) -> bool:
    """Whether `x` is computed before `node`, moving it there if need be: the partitioner may recompute a
    saved activation's view or copy (the attention output's reshape) after the input gradient. Moves x and
    its ancestors after `node`, in their order, where they are pure ATen ops that do not depend on `node`."""
    if order[x] < order[node]:
        return True
    late, stack = {}, [x]
    while stack:
        n = stack.pop()
        if n in late or order[n] < order[node]:
            continue
        target = n.target
        if (n is node or n.op != "call_function" or not isinstance(target, torch._ops.OpOverload)
                or target._schema.is_mutable or torch.Tag.nondeterministic_seeded in target.tags):
            return False
        late[n] = order[n]
        stack.extend(a for a in n.all_input_nodes)
    for n in sorted(late, key=late.get):
        node.prepend(n)
    order.update({n: i for i, n in enumerate(node.graph.nodes)})
    return True


class OpenCLGemmKernel(OpenCLKernel):
    """The generated kernel of one product and the epilogue nodes Inductor fused after it. The epilogue is
    generated as a pointwise kernel's body over the product's elements (xindex = row * n + col); a load of
    the product returns the tile's value (Inductor's store cache), and the product itself is stored only if
    something outside the kernel reads it."""

    def __init__(self, plan: GemmPlan, grouped: GemmPlan | None = None) -> None:
        numel = sympy.Integer(plan.m * plan.n)
        super().__init__({"x": numel}, features=SIMDKernelFeatures([], numel))
        self.plan = plan
        self.grouped = grouped  # a second product the launch computes (tuned_mm_group), stored as it is
        self.prologue_fused_inputs: OrderedSet[str] = OrderedSet()
        self.prologue_fused_inputs_preserve_zero: OrderedSet[str] = OrderedSet()
        self._inputs: tuple[str, str] = ("", "")  # A's and B's kernel parameters
        self._grouped_params: tuple[str, str, str] = ("", "", "")  # the grouped product's A, B and output
        self._sums = ""  # the row sums' kernel parameter (the plan with row_sums)
        self.template_inputs: tuple[Any, ...] = ()  # A's and B's IR nodes
        self._value = ""

    def get_unfused_epilogues(self) -> list:
        return []

    def rng_memo(self) -> str:
        """What a random op of the epilogue (dropout) passes for its Philox block memo. The tile's elements go
        along its rows, so four consecutive ones share a block. Where every block lies whole in a tile row (n
        and the tile's columns multiples of RNG_BLOCK), the row's loop is unrolled and no memo is passed: the
        four calls of a block then draw it once, as the compiler sees (a memo carried from element to element
        kept the epilogue scalar: a compiled linear + ReLU + dropout, 128 x 784 x 256, took 864 us against
        eager's 605). Otherwise a memo per call site (one Philox per element made that 1.8x slower than the
        product and a pointwise kernel)."""
        if self._rng_whole_blocks():
            self.rng_blocked = True
            return "0"
        name = f"rng{next(self.rng_memos)}"
        self.hoisted.writeline(f"philox_memo {name} = PHILOX_MEMO_INIT;")
        return f"&{name}"

    def _rng_whole_blocks(self) -> bool:
        return self.plan.n % self.RNG_BLOCK == 0 and self.plan.cols % self.RNG_BLOCK == 0

    def kernel_params(self) -> list[Param]:
        params = super().kernel_params()
        if self.plan.pack:  # the panel of B that call_kernel packs before the launch
            params.append(Param(PANEL, None, "float", pointer=True))
        return params

    def codegen_template_body(self, scheduling, template_node, epilogue_nodes, prologue_nodes,
                              buf_name_to_prologue_group, prologue_preserves_zero_mask_fn, render) -> str:
        assert not prologue_nodes, "the opencl product template takes no prologues"
        buf = template_node.node
        a, b, *rest = buf.inputs  # A, B, [the grouped product's A, B, output], [the row sums]
        self.template_inputs = (a, b)
        with self:
            self._inputs = (self.args.input(a.get_name()), self.args.input(b.get_name()))
            if self.grouped is not None:
                a2, b2, out2, *rest = rest
                self._grouped_params = (self.args.input(a2.get_name()), self.args.input(b2.get_name()),
                                        self.args.output(out2.get_name()))
            if rest:
                self._sums = self.args.output(rest[0].get_name())
            value = self.cse.newvar(dtype=torch.float32)
            self._value = str(value)
            self.variant_vars.add(self._value)  # differs per element: never hoisted out of the loop
            (index_vars, _) = self.split_and_set_ranges([[self.plan.m, self.plan.n], []])
            V.ops.store(buf.get_name(), buf.get_layout().make_indexer()(index_vars), value)
            for node in epilogue_nodes:
                node.codegen(self.split_and_set_ranges(node.get_ranges()))
        with V.set_kernel_handler(self):
            return self.codegen_kernel()

    def _plans(self) -> list[GemmPlan]:
        return [self.plan] + ([self.grouped] if self.grouped is not None else [])

    def _group_size(self) -> int:
        """Work-items per work-group: STAGING_GROUP where a product stages its panels; else groups of 4 tiles,
        single tiles when there are few to spread over the cores (gemm_small.cpp)."""
        plans = self._plans()
        if any(p.staged for p in plans):
            return STAGING_GROUP
        return 4 if sum(p.tiles for p in plans) >= 64 else 1

    def _groups(self, p: GemmPlan) -> int:
        return p.tiles_n * p.groups_per_column if p.staged else -(-p.tiles // self._group_size())

    def _codegen_tile(self, code: IndentedBuffer, p: GemmPlan, a: str, b: str, first_group: int = 0) -> None:
        """The lines that find this work-item's tile (row0, col0) of `p` (whose work-groups start at
        `first_group`), compute it into `tile`, and its rows' sums where `p` has them."""
        a_ptr, b_ptr = f"{a} + {p.a_off}", f"{b} + {p.b_off}"
        nn = f"tocl_gemm_nn_{'wide' if p.cols > p.vector else 'narrow'}"
        group = f"((int)get_group_id(0) - {first_group})" if first_group else "(int)get_group_id(0)"
        if p.staged:
            # A work-group per STAGING_GROUP row tiles of one column tile; every item helps stage the panel
            # (`panel`, in local memory, declared at the kernel's scope).
            code.writeline(f"const int tn = {group} / {p.groups_per_column};")
            code.writeline(f"const int tm = {group} % {p.groups_per_column} * {STAGING_GROUP} + (int)get_local_id(0);")
            code.writeline(f"const int row0 = tm * {p.rows}, col0 = tn * {p.cols};")
            code.writeline(f"tocl_gemm_stage_b(panel, {b_ptr} + (long)col0 * {p.sbn}, {p.n} - col0, {p.k}, {p.sbk}L, "
                           f"{p.sbn}L, {p.cols});")
            code.writeline(f"if (tm >= {p.tiles_m}) return;")
            code.writeline(f"float tile[TOCL_GEMM_TM][{p.cols}];")
            code.writeline(f"{nn}_staged(tile, {a_ptr}, panel, row0, {p.m}, {p.n} - col0, {p.k}, {p.sam}L, {p.sak}L, "
                           f"{p.cols}L, 1L, 1);")
        else:
            offset = f" - {first_group * self._group_size()}u" if first_group else ""
            code.writeline(f"const uint gid = get_global_id(0){offset};")
            code.writeline(f"if (gid >= {p.tiles}u) return;")
            code.writeline(f"const int row0 = (int)(gid % {p.tiles_m}u) * {p.rows};")
            code.writeline(f"const int col0 = (int)(gid / {p.tiles_m}u) * {p.cols};")
            if p.form == "nt":
                code.writeline("float tile[TOCL_GEMM_NT_ROWS][TOCL_GEMM_NT_COLS];")
                code.writeline(f"tocl_gemm_nt(tile, {a_ptr}, {b_ptr}, row0, col0, {p.m}, {p.n}, {p.k}, {p.sam}L, {p.sbn}L);")
            else:
                code.writeline(f"float tile[TOCL_GEMM_TM][{p.cols}];")
                if p.pack:
                    code.writeline(f"{nn}(tile, {a_ptr}, {PANEL} + (long)(gid / {p.tiles_m}u) * {p.k * p.cols}, row0, "
                                   f"{p.m}, {p.n} - col0, {p.k}, {p.sam}L, {p.sak}L, {p.cols}L, 1L, 1);")
                else:
                    vector_rows = f"col0 + {p.cols} <= {p.n}" if p.sbn == 1 else "0"
                    code.writeline(f"{nn}(tile, {a_ptr}, {b_ptr} + (long)col0 * {p.sbn}, row0, {p.m}, {p.n} - col0, "
                                   f"{p.k}, {p.sam}L, {p.sak}L, {p.sbk}L, {p.sbn}L, {vector_rows});")
        if p.row_sums:
            code.writeline(f"if (col0 == 0) tocl_gemm_row_sums({self._sums}, {a_ptr}, row0, {p.m}, {p.k}, {p.sam}L, "
                           f"{p.sak}L);")

    def codegen_kernel(self, name: str | None = None) -> str:
        self.codegen_body()
        p, idx = self.plan, self.index_dtype
        code = IndentedBuffer()
        code.writeline(f"__kernel void {name or KERNEL_NAME_PLACEHOLDER}({', '.join(declare(self.kernel_params()))}) {{")
        with code.indent():
            staged = [q.k * q.cols for q in self._plans() if q.staged]
            if staged:  # local memory is declared at the kernel's scope; the products' groups take turns in it
                code.writeline(f"__local float panel[{max(staged)}];")
            code.splice(self.kernel_scope)
            if self.grouped is not None:
                # The grouped product's work-groups follow this one's; they store their tile as it is.
                q, (a2, b2, out2) = self.grouped, self._grouped_params
                code.writeline(f"if (get_group_id(0) >= {self._groups(p)}u) {{")
                with code.indent():
                    self._codegen_tile(code, q, a2, b2, self._groups(p))
                    code.writeline(f"for (int r = 0; r < {q.rows}; ++r) {{")
                    with code.indent():
                        code.writeline(f"if (row0 + r >= {q.m}) break;")
                        code.writeline(f"for (int j = 0; j < {q.cols}; ++j)")
                        code.writeline(f"    if (col0 + j < {q.n}) {out2}[(long)(row0 + r) * {q.n} + col0 + j] = tile[r][j];")
                    code.writeline("}")
                    code.writeline("return;")
                code.writeline("}")
            self._codegen_tile(code, p, *self._inputs)
            code.splice(self.hoisted)
            vectors = self._vector_epilogue()
            code.writeline(f"for (int r = 0; r < {p.rows}; ++r) {{")
            with code.indent():
                code.writeline(f"if (row0 + r >= {p.m}) break;")
                if vectors:
                    # WIDTH columns a step as float vectors (see _vector_epilogue); n is a multiple of WIDTH, so
                    # a step is whole or past the last column.
                    step, value, body = WIDTH, f"vload{WIDTH}(0, &tile[r][j])", vectors
                    code.writeline("#pragma unroll")
                else:
                    step, value, body = 1, "tile[r][j]", self.body
                    if self.rng_blocked:  # see rng_memo
                        code.writeline("#pragma unroll")
                code.writeline(f"for (int j = 0; j < {p.cols}; j += {step}) {{")
                with code.indent():
                    if p.n % p.cols:  # else every tile is whole
                        code.writeline(f"if (col0 + j >= {p.n}) break;")
                    code.writeline(f"const {idx} xindex = ({idx})(row0 + r) * {p.n} + col0 + j;")
                    code.writeline(f"const float{step if vectors else ''} {self._value} = {value};")
                    code.splice(body)
                code.writeline("}")
            code.writeline("}")
        code.writeline("}")
        return code.getvalue()

    def _vector_epilogue(self) -> IndentedBuffer | None:
        """The epilogue as a step of WIDTH adjacent columns of a tile row in float vectors (vectors.py), where
        the tile's rows and the product's are whole steps and the body qualifies; else None (one element at
        a time). PoCL does not vectorise the element loop around a call (erf_of, exp: vectors.py). Measured
        (PoCL, A/B against the scalar loop): on par for a lone 1024 x 64 x 256 product with GELU, its
        gradient or a bias; the transformer step 0.94-0.95 of eager's time against 0.97-1.08."""
        p = self.plan
        if p.form != "nn" or p.cols % WIDTH or p.n % WIDTH:
            return None
        return vector_body(self.body._lines, self.hoisted._lines, vectors=(self._value,), aligned=True,
                           require_calls=False)

    def call_kernel(self, name: str, node: Any = None, deallocate_ws: bool = True) -> None:
        p, wrapper = self.plan, V.graph.wrapper_code
        device = V.graph.get_current_device_or_throw()
        params = self.kernel_params()
        args = self.call_args(name, [q for q in params if q.name != PANEL])
        panel = None
        if p.pack:
            # B's panels first, by eager's pack (gemm_small.cpp).
            panel = f"{name}_panel"
            b = wrapper.val_to_arg_str(self.template_inputs[1])
            wrapper.writeline(f"{panel} = opencl_gemm_pack_b({b}, {p.cols})")
            args.append(panel)
        group = self._group_size()
        threads = sum(self._groups(q) for q in self._plans()) * group
        args += [f"threads={threads}", f"group_size={group}"]
        wrapper.generate_kernel_call(name, args, device=device, triton=False)
        if panel:
            wrapper.writeline(f"del {panel}")


def install(lowering) -> None:
    """mm and addmm of opencl tensors through the template where it takes them; the bias gradient's sum and
    the weight gradient's mm that pair_layer_gradients paired with an earlier product, from that product's
    kernel."""
    aten = torch.ops.aten
    mm_lowering, addmm_lowering = lowering.lowerings[aten.mm.default], lowering.lowerings[aten.addmm.default]
    sum_lowering = lowering.lowerings[aten.sum.dim_IntList]
    if getattr(mm_lowering, "_opencl_gemm", False):
        return

    def computed(kind: str) -> dict:
        """The graph's outputs that an earlier product's kernel computes, by FX node: "row_sums" (a sum
        node's), "grouped" (a weight gradient's mm)."""
        if not hasattr(V.graph, "opencl_computed"):
            V.graph.opencl_computed = {"row_sums": {}, "grouped": {}}
        return V.graph.opencl_computed[kind]

    def mm(mat1, mat2, out_dtype=None, *, layout=None):
        node = V.graph.current_node
        if out_dtype is None and layout is None and node is not None and node.target is aten.mm.default:
            if node in computed("grouped"):
                return computed("grouped")[node]
            sums_node, weight_gradient = node.meta.get(ROW_SUMS), node.meta.get(GROUPED)
            if weight_gradient is not None and weight_gradient.args[1] in V.graph.env:
                # mat1 is T; the weight gradient is T.t() @ X, X lowered before this node (pair_layer_gradients).
                wg_sums = weight_gradient.meta.get(ROW_SUMS)
                out = tuned_mm_group(mat1, mat2, lowering.lowerings[aten.permute.default](mat1, [1, 0]),
                                     V.graph.env[weight_gradient.args[1]], row_sums=wg_sums is not None)
                if out is not None:
                    product, computed("grouped")[weight_gradient], sums = out
                    if sums is not None:
                        computed("row_sums")[wg_sums] = sums
                    return product
            if sums_node is not None and (out := tuned_mm(mat1, mat2, row_sums=True)) is not None:
                product, computed("row_sums")[sums_node] = out
                return product
            if (out := tuned_mm(mat1, mat2)) is not None:
                return out
        return mm_lowering(mat1, mat2, out_dtype=out_dtype, layout=layout)

    def addmm(inp, mat1, mat2, *, alpha=1, beta=1, layout=None):
        if layout is None and inp.get_dtype() == torch.float32 and (out := tuned_mm(mat1, mat2)) is not None:
            # alpha * (mat1 @ mat2) + beta * inp as pointwise nodes after the product, which Inductor fuses
            # into its kernel; beta == 0 ignores inp, NaN included (BLAS, eager).
            add, mul = lowering.lowerings[aten.add.Tensor], lowering.lowerings[aten.mul.Tensor]
            if alpha != 1:
                out = mul(out, alpha)
            if beta == 0:
                return out
            return add(out, inp if beta == 1 else mul(inp, beta))
        return addmm_lowering(inp, mat1, mat2, alpha=alpha, beta=beta, layout=layout)

    def sum_(x, *args, **kwargs):
        node = V.graph.current_node
        sums = computed("row_sums").get(node) if node is not None else None
        if sums is not None:  # computed by its product's kernel
            return lowering.lowerings[aten.view.default](sums, list(node.meta["val"].shape))
        return sum_lowering(x, *args, **kwargs)

    for overload, fn in ((aten.mm.default, mm), (aten.addmm.default, addmm), (aten.sum.dim_IntList, sum_)):
        fn._opencl_gemm = True  # type: ignore[attr-defined]
        lowering.lowerings[overload] = fn
