"""Inductor's heuristics that opencl answers differently (InductorChoices, its hook for out-of-tree devices).

Split reductions: Inductor splits a reduction with few outputs into two kernels (partial sums over slices of
the reduced dim, then their sum) so that a GPU has enough work-groups. The CPU form has no such need below a
size: a work-item walks 8 columns or a row's 8 lanes (kernel.py) and PoCL runs a work-group per core, so a
small reduction gains less from the cores than the second launch costs. The small transformer's layer norm
weight and bias gradients and the bias gradients of 64 outputs (1024 rows each) were 14 second launches a
step. Above CPU_SPLIT_MIN_ELEMENTS, and on GPU-class devices, Inductor's own rule.
"""
from torch._inductor.choices import InductorChoices

CPU_SPLIT_MIN_ELEMENTS = 1 << 16  # reduced elements of all outputs together


def _cpu_form(device) -> bool:
    from .. import device_module

    return device.type == "opencl" and device_module.get_device_properties(device).kernel_class != "gpu"


class OpenCLChoices(InductorChoices):
    def uuid(self) -> str:  # part of Inductor's cache key
        return f"torch_opencl.OpenCLChoices:{CPU_SPLIT_MIN_ELEMENTS}"

    @staticmethod
    def reduction_split_factor(device, reduction_numel_hint: int, numel_hint: int, inner_reduction: bool) -> int:
        if _cpu_form(device) and reduction_numel_hint * numel_hint <= CPU_SPLIT_MIN_ELEMENTS:
            return 1
        return InductorChoices.reduction_split_factor(device, reduction_numel_hint, numel_hint, inner_reduction)


def install() -> None:
    """OpenCLChoices as Inductor's choices handler, unless the user has set one of their own (it then answers
    for opencl too)."""
    from torch._inductor import config
    from torch._inductor.virtualized import V

    # (A torch without this config key takes the handler alone.)
    if getattr(config, "inductor_choices_class", OpenCLChoices) is None:
        config.inductor_choices_class = OpenCLChoices
    # A handler made before this (Inductor compiled for another device first) is replaced in this thread.
    if type(V.choices) is InductorChoices:
        V.set_choices_handler(OpenCLChoices())
