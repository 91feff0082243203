"""Inductor's scheduling for opencl: SIMD kernels (kernel.py) over flat index ranges, horizontally
fused where Inductor groups independent kernels (combo.py), products with their epilogues (gemm.py, through
SIMDScheduling's codegen_template), one program per graph (wrapper.py)."""
import sympy
from torch._inductor.codegen.common import BackendFeature
from torch._inductor.codegen.simd import SIMDScheduling
from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
from torch._inductor.utils import get_kernel_metadata
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from .combo import OpenCLComboKernel, combo_key, max_params
from .gemm import OpenCLGemmKernel
from .kernel import KERNEL_NAME_PLACEHOLDER, OpenCLKernel


class OpenCLScheduling(SIMDScheduling):
    kernel_type = OpenCLKernel  # type: ignore[assignment]

    @classmethod
    def get_backend_features(cls, device):
        # Foreach ops become one kernel for all their tensors (codegen_combo_kernel). No scan, sort,
        # bucketize or in-place buffers: Inductor keeps ATen's kernels for those. Products with their
        # epilogues are templates (gemm.py), which need no feature flag.
        return OrderedSet([BackendFeature.FOREACH])

    @classmethod
    def get_tiling_and_scores(cls, node_schedule, numel, reduction_numel=sympy.S.One, coalesce_analysis=None):
        # One flat range per kernel (plus the reduction's): the kernels index with Inductor's strides.
        tiling = {"x": numel}
        if reduction_numel != 1:
            tiling["r0_"] = reduction_numel
        return tiling, None

    def can_fuse(self, node1, node2):
        # Inductor refuses a pointwise node before a reduction unless the pointwise node's own tiling is
        # (numel, 1) or the reduction's: Triton's. Ours is one flat range, (numel,), for every pointwise node,
        # which that check always refused, so a realized pointwise value (a forward's saved activation, a
        # backward's masked gradient) was a kernel of its own before the reduction reading it.
        from torch._inductor import config

        with config.patch({"triton.tiling_prevents_reduction_fusion": False}):
            return super().can_fuse(node1, node2)

    can_fuse_vertical = can_fuse  # SIMDScheduling binds its own can_fuse to these names
    can_fuse_horizontal = can_fuse

    def codegen_combo_kernel(self, combo_kernel_node):
        """A group of independent kernels (a foreach op, or what config.combo_kernels groups) becomes
        as few kernels as the device's form and parameter space allow (combo.py); a kernel that cannot
        share one is generated alone."""
        limit = max_params(V.graph.get_current_device_or_throw())
        pending: dict = {}  # combo key -> (kernels, their node schedules, their parameter count)

        def flush(key):
            kernels, schedules, _ = pending.pop(key)
            self._emit(kernels[0] if len(kernels) == 1 else OpenCLComboKernel(kernels), schedules)

        for node in combo_kernel_node.get_subkernel_nodes():
            nodes = [n for n in node.get_nodes() if n.get_name() not in self.scheduler.removed_ops]
            if not nodes:
                continue
            _, (numel, rnumel) = max(nodes, key=lambda n: int(n.is_reduction())).group
            node_schedule = self.generate_node_schedule(nodes, numel, rnumel)
            features = SIMDKernelFeatures(node_schedule, numel, rnumel)
            tiling, _ = self.get_tiling_and_scores(node_schedule, numel, rnumel)
            kernel = OpenCLKernel(tiling, features=features)
            self.process_kernel(kernel, node_schedule)
            key = combo_key(kernel)
            if key is None:
                self._emit(kernel, node_schedule)
                continue
            count = OpenCLComboKernel.param_count(kernel)
            if key in pending and pending[key][2] + count > limit:
                flush(key)
            kernels, schedules, params = pending.get(key, ([], [], 0))
            pending[key] = (kernels + [kernel], schedules + list(node_schedule), params + count)
        for key in list(pending):
            flush(key)
        self.free_buffers_in_scheduler()

    def _emit(self, kernel, node_schedule) -> None:
        with V.set_kernel_handler(kernel if isinstance(kernel, OpenCLKernel) else kernel.kernels[0]):
            src_code = kernel.codegen_kernel()
        name = self.define_kernel(src_code, node_schedule, kernel)
        kernel.call_kernel(name)

    def define_kernel(self, src_code, node_schedule, kernel):
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        if isinstance(kernel, OpenCLComboKernel):
            fused = "combo"
        elif isinstance(kernel, OpenCLGemmKernel):
            fused = "gemm"
        else:
            fused = "red" if kernel.features.is_reduction() else "poi"
        name = f"opencl_{fused}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[src_code] = name
        origins, detailed = get_kernel_metadata(node_schedule, wrapper)
        device = V.graph.get_current_device_or_throw().index or 0
        wrapper.define_opencl_kernel(name, src_code.replace(KERNEL_NAME_PLACEHOLDER, name), device,
                                     f"{origins}\n{detailed}")
        return name
