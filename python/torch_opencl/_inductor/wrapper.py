"""The Python wrapper Inductor generates around a graph's kernels, for opencl: the graph's OpenCL C
kernels are gathered into one GraphProgram (runtime.py), built once when the module loads, and
called like torch.opencl.compile_shader's kernels."""
import torch
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen


class OpenCLDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from torch_opencl._inductor.device_interface import OpenCLInterface as _OpenCLInterface\n" \
               f"{name} = _OpenCLInterface.get_raw_stream"

    def set_device(self, device_idx: int) -> str:
        return f"torch.opencl.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.opencl.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.opencl.device({device_idx})"


class OpenCLPythonWrapperCodegen(PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return OpenCLPythonWrapperCodegen()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.index_error_devices: dict[int, str] = {}

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline("from torch_opencl._inductor.runtime import GraphProgram")
        self.imports.writeline("from torch_opencl._C import _gemm_pack_b as opencl_gemm_pack_b")
        self.imports.writeline("from torch_opencl._C import _philox_seeds as opencl_philox_seeds")  # seeds.py
        self.header.writeline("opencl_program = GraphProgram()")

    def index_errors_buffer(self, device: torch.device) -> str:
        """The module-level name of the buffer where this graph's kernels on `device` record an index out
        of range (kernels_cl/inductor.cl); the run checks it before it returns."""
        index = device.index or 0
        if index not in self.index_error_devices:
            name = f"opencl_index_errors_{index}"
            self.index_error_devices[index] = name
            self.header.writeline(f"{name} = opencl_program.index_errors({index})")
        return self.index_error_devices[index]

    def generate_return(self, output_refs: list[str]) -> None:
        if self.index_error_devices:
            self.wrapper_call.writeline("opencl_program.raise_index_errors()")
        super().generate_return(output_refs)

    def define_opencl_kernel(self, name: str, source: str, device: int, comment: str) -> None:
        self.header.writeline("")
        for line in comment.splitlines():
            self.header.writeline(f"# {line}" if line and not line.startswith("#") else line)
        self.header.writeline(f"{name} = opencl_program.add({name!r}, '''")
        for line in source.rstrip().splitlines():
            self.header.writeline(line)
        self.header.writeline(f"''', {device})")

    def write_async_compile_wait(self) -> None:
        # Every kernel of the graph was added by now: one program for them all.
        self.prefix.writeline("opencl_program.build(globals())")
        super().write_async_compile_wait()

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True, **kwargs):
        device = device or torch._inductor.virtualized.V.graph.get_current_device_or_throw()
        if device.type == "opencl" and not triton:
            self.writeline(f"{kernel_name}({', '.join(str(a) for a in call_args)})")
            return
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)
