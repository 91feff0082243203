"""Inductor's scheduling for opencl: SIMD kernels (kernel.py) over flat index ranges, one program per
graph (wrapper.py)."""
import sympy
from torch._inductor.codegen.simd import SIMDScheduling
from torch._inductor.utils import get_kernel_metadata
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from .kernel import KERNEL_NAME_PLACEHOLDER, OpenCLKernel


class OpenCLScheduling(SIMDScheduling):
    kernel_type = OpenCLKernel  # type: ignore[assignment]

    @classmethod
    def get_backend_features(cls, device):
        # No scan, sort, bucketize, in-place buffers or templates: Inductor keeps ATen's kernels for those.
        return OrderedSet()

    @classmethod
    def get_tiling_and_scores(cls, node_schedule, numel, reduction_numel=sympy.S.One, coalesce_analysis=None):
        # One flat range per kernel (plus the reduction's): the kernels index with Inductor's strides.
        tiling = {"x": numel}
        if reduction_numel != 1:
            tiling["r0_"] = reduction_numel
        return tiling, None

    def define_kernel(self, src_code, node_schedule, kernel):
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused = "red" if kernel.features.is_reduction() else "poi"
        name = f"opencl_{fused}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[src_code] = name
        origins, detailed = get_kernel_metadata(node_schedule, wrapper)
        device = V.graph.get_current_device_or_throw().index or 0
        wrapper.define_opencl_kernel(name, src_code.replace(KERNEL_NAME_PLACEHOLDER, name), device,
                                     f"{origins}\n{detailed}")
        return name
