"""torch.compile for opencl: an Inductor backend that writes OpenCL C (modelled on Inductor's Metal
backend, torch/_inductor/codegen/mps.py).

Imported lazily, the first time Inductor asks torch.opencl for its code generators (importing
Inductor costs seconds): ``register()`` adds the device interface, the device op overrides and the
backend, and keeps the operators the code generator cannot take on ATen's kernels (fallback.py).
"""
import functools

__all__ = ["register", "Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen"]


@functools.lru_cache(None)
def register() -> None:
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

    from . import choices, combo, fallback, lowerings
    from .device_interface import OpenCLInterface
    from .scheduling import OpenCLScheduling
    from .wrapper import OpenCLDeviceOpOverrides, OpenCLPythonWrapperCodegen

    register_interface_for_device("opencl", OpenCLInterface)
    register_device_op_overrides("opencl", OpenCLDeviceOpOverrides())
    register_backend_for_device(
        "opencl", OpenCLScheduling, OpenCLPythonWrapperCodegen, device_custom_pass=_codegen_version()
    )
    choices.install()
    combo.install()
    lowerings.install()  # before fallback.install, which wraps every lowering
    fallback.install()


def _codegen_version():
    """The device's post-grad pass (gemm.pair_layer_gradients: a layer's gradients for one product kernel),
    whose uuid is a hash of this code generator and of the devices' kernel forms: Inductor puts it into its FX
    graph cache key, so neither a changed torch_opencl nor another kernel class reuses code generated for
    the other."""
    import hashlib
    import pathlib

    from torch._inductor.custom_graph_pass import CustomGraphModulePass

    from .. import _C

    digest = hashlib.sha256(_C._embedded_source("inductor.cl").encode())
    for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    # The kernels' form depends on the devices (runtime/kernel_forms.h), so the code does too.
    for index in range(_C._device_count()):
        p = _C._device_properties(index)
        digest.update(repr([p[k] for k in ("name", "kernel_class", "row_group", "compute_units", "fp64", "pointwise_vectors",
                                           "cpu_gemm_vector_width", "cpu_gemm_rows", "cpu_gemm_nt_rows", "cpu_gemm_nt_cols")]
                           + ["cl_khr_int64_base_atomics" in p["extensions"].split()]).encode())

    class CodegenVersion(CustomGraphModulePass):
        def __call__(self, gm) -> None:
            from . import gemm

            gemm.pair_layer_gradients(gm.graph)

        def uuid(self):
            from . import combo, gemm

            return f"torch_opencl-{digest.hexdigest()}-gemm{int(gemm.enabled)}-combo{int(combo.enabled)}"

    return CodegenVersion()


def __getattr__(name):
    if name in ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen"):
        register()
        from .scheduling import OpenCLScheduling
        from .wrapper import OpenCLPythonWrapperCodegen

        return {"Scheduling": OpenCLScheduling, "PythonWrapperCodegen": OpenCLPythonWrapperCodegen,
                "CppWrapperCodegen": None}[name]  # no C++ wrapper (AOTInductor) for opencl
    raise AttributeError(name)
