"""What the wrapper code torch.compile generates for opencl calls at run time.

All generated kernels of one graph go into one OpenCL program (PoCL spends about a second of LLVM
per program), built through torch.opencl.compile_shader's path: the program cache (memory and disk)
and the same argument checks and launch (aten/user_kernel.cpp).
"""
from typing import Dict, List, Set, Tuple

import torch

from .. import _C
from ..shader import ShaderLibrary

_PRELUDE: Dict[int, str] = {}
# The product template's tile sizes (kernel_forms), as kernels_cl/inductor_gemm.cl names them.
_GEMM_DEFINES = (("TOCL_GEMM_VW", "cpu_gemm_vector_width"), ("TOCL_GEMM_TM", "cpu_gemm_rows"),
                 ("TOCL_GEMM_NT_ROWS", "cpu_gemm_nt_rows"), ("TOCL_GEMM_NT_COLS", "cpu_gemm_nt_cols"))


def has_int64_atomics(device: int) -> bool:
    """Whether generated kernels can add to 64-bit elements atomically on `device` (index_put with
    accumulate, index_add, scatter_add of float64 and int64)."""
    return "cl_khr_int64_base_atomics" in _C._device_properties(device)["extensions"].split()


def program_prelude(device: int) -> str:
    """The text every graph program starts with on `device` (kernels_cl/inductor.cl)."""
    if device not in _PRELUDE:
        props = _C._device_properties(device)
        # VEC16: the float16 forms of pointwise_functions.cl's helpers, for the CPU form's vector loop
        # (vectors.py) and the register GEMM template's vector epilogues (gemm.py), which Intel's CPU runtime
        # takes without the vector loop (pointwise_vectors off where work-items are vectorised).
        vec16 = props["pointwise_vectors"] or props["cpu_gemm_vector_width"]
        _PRELUDE[device] = (("#define TOCL_FP64\n" if props["fp64"] else "")
                            + ("#define VEC16 1\n" if vec16 else "")
                            + ("#define TOCL_INT64_ATOMICS 1\n" if has_int64_atomics(device) else "")
                            # The product template's tile (gemm.py, kernels_cl/inductor_gemm.cl).
                            + ("".join(f"#define {name} {props[key]}\n" for name, key in _GEMM_DEFINES)
                               if props["cpu_gemm_vector_width"] else "")
                            + _C._embedded_source("inductor.cl"))
    return _PRELUDE[device]


class GraphProgram:
    """The kernels of one compiled graph; `build` compiles them as one program per device."""

    def __init__(self) -> None:
        self._kernels: List[Tuple[str, str, int]] = []
        self._index_errors: Dict[int, torch.Tensor] = {}
        self._deferred: Set[int] = set()

    def index_errors(self, device: int) -> torch.Tensor:
        """The graph's index-error buffer on `device`: an int flag, then (from int 2) the first index out of
        range its kernels met, as they saw it, and the size of that dimension, as longs (the layout of
        runtime/deferred_errors.h's records)."""
        if device not in self._index_errors:
            if _C._device_properties(device)["deferred_index_checks"]:
                self._deferred.add(device)
            self._index_errors[device] = torch.zeros(8, dtype=torch.int32, device=torch.device("opencl", device))
        return self._index_errors[device]

    def raise_index_errors(self) -> None:
        """Raise IndexError, as eager would have, if a kernel of this run met an index out of range (its
        access was clamped into range, so the run's outputs are not to be used); one small read back. A
        device that defers index checks is not waited for: the run arms its record, and the IndexError
        comes at the next synchronization or copy to the host."""
        for device, errors in self._index_errors.items():
            if device in self._deferred:
                _C._arm_compiled_graph_errors(errors)
                continue
            if not errors[0].item():
                continue
            index, size = errors[2:6].view(torch.int64).tolist()
            errors.zero_()
            if index < 0:  # a negative index had the size added before the check
                index -= size
            raise IndexError(
                f"index {index} is out of bounds for dimension with size {size} (met by a kernel of a "
                f"torch.compile'd graph on opencl; the graph's outputs were not returned)"
            )

    def add(self, name: str, source: str, device: int = 0) -> str:
        self._kernels.append((name, source, device))
        return name  # replaced by the kernel itself in build()

    def build(self, scope: dict) -> None:
        for device in sorted({d for _, _, d in self._kernels}):
            mine = [(n, s) for n, s, d in self._kernels if d == device]
            source = program_prelude(device) + "\n" + "\n".join(s for _, s in mine)
            library = ShaderLibrary(source, require_contiguous=False, device=device)
            for name, _ in mine:
                scope[name] = getattr(library, name)
        self._kernels.clear()
