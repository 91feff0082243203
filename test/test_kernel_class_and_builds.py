"""The kernel class (runtime/kernel_forms.h) and what a CUDA or ROCm build of torch gets
(python/torch_opencl_autoload). Both are decided once per process, so each case runs in a
subprocess."""
import os
import subprocess
import sys

import pytest
import torch

import torch_opencl
from torch_opencl_autoload import accelerator_build


def _run(code, **env_updates):
    env = dict(os.environ)
    env.pop("TORCH_OPENCL_KERNEL_CLASS", None)
    env.update(env_updates)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


CLASS_CHILD = r"""
import torch, torch_opencl
p = torch_opencl._C._device_properties(0)
print(p["type"], p["kernel_class"], "|", p["kernel_class_reason"])
"""


def test_kernel_class_follows_the_device_type_unless_forced():
    p = _run(CLASS_CHILD)
    assert p.returncode == 0, p.stderr
    device_type, kernel_class, _, reason = p.stdout.split(maxsplit=3)
    assert kernel_class == ("cpu" if device_type == "cpu" else "gpu")
    assert reason.strip() == f"device type {device_type}"
    for forced in ("gpu", "cpu", "GPU"):
        p = _run(CLASS_CHILD, TORCH_OPENCL_KERNEL_CLASS=forced)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split()[1] == forced.lower()
        assert f"TORCH_OPENCL_KERNEL_CLASS={forced.lower()}" in p.stdout


def test_a_kernel_class_that_names_nothing_is_a_clear_error():
    p = _run("import torch, torch_opencl\ntorch.ones(2, device='opencl').sum().item()",
             TORCH_OPENCL_KERNEL_CLASS="tpu")
    assert p.returncode != 0
    assert "TORCH_OPENCL_KERNEL_CLASS='tpu' names no kernel class" in p.stderr
    assert "'cpu'" in p.stderr and "'gpu'" in p.stderr


def test_gpu_forms_compute_what_cpu_computes():
    # A row-wise kernel and a GEMM under the forced GPU class (the families' own tests run in that
    # class too: scripts/test.sh's second pass).
    code = r"""
import torch, torch_opencl
torch.manual_seed(0)
x = torch.randn(37, 300)
a, b = torch.randn(65, 70), torch.randn(70, 33)
got = torch.softmax(x.to("opencl"), -1).cpu()
torch.testing.assert_close(got, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
torch.testing.assert_close((a.to("opencl") @ b.to("opencl")).cpu(), a @ b, rtol=1e-4, atol=1e-4)
print(torch_opencl._C._device_properties(0)["kernel_class"])
"""
    p = _run(code, TORCH_OPENCL_KERNEL_CLASS="gpu")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "gpu"


SMALL_GROUP_CHILD = r"""
import torch, torch_opencl, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(37, 300)
checks = {
    "strided add": lambda t: t.t() + 1,
    "cast copy": lambda t: t.double(),
    "softmax": lambda t: torch.softmax(t, -1),
    "softmax over columns": lambda t: torch.softmax(t, 0),
    "layer_norm": lambda t: F.layer_norm(t, (300,)),
    "sum": lambda t: t.sum(0),
    "sum and argmax of a long row": lambda t: torch.stack([t.reshape(-1).sum(), t.reshape(-1).argmax().double()]),
    "winograd conv": lambda t: F.conv2d(t[:, :256].reshape(1, 37, 16, 16)[:, :16].contiguous(),
                                        t[:16, :144].reshape(16, 16, 3, 3), padding=1),
    "cumsum": lambda t: t.cumsum(1),
    "sort": lambda t: t.sort(1).values,
    "conv2d": lambda t: F.conv2d(t[:2, :162].reshape(2, 2, 9, 9), t[2:6, :18].reshape(4, 2, 3, 3), stride=2),
    "mm": lambda t: t[:, :37].t() @ t[:, 70:103],
    "attention": lambda t: F.scaled_dot_product_attention(*[t[:35, :64].reshape(1, 2, 35, 32)] * 3, is_causal=True),
}
for name, f in checks.items():
    torch.testing.assert_close(f(x.to("opencl")).cpu(), f(x), rtol=1e-4, atol=1e-4, msg=name)
lib = torch.opencl.compile_shader("__kernel void noop(__global float* y) { }")
try:
    lib.noop(torch.empty(1, device="opencl"), threads=128, group_size=128)
except RuntimeError as e:
    print("too wide:", e)
print(torch_opencl._C._device_properties(0)["row_group"])
"""


def test_a_gpu_of_64_item_groups_runs_every_family():
    # Launches used a constant 256 items per group (pointwise, copies, strided tiles, layout kernels); a GPU of
    # 128 (Oclgrind's --max-wgsize) failed them all with CL_INVALID_WORK_ITEM_SIZE. The debug cap makes PoCL
    # such a device, launches past it included.
    p = _run(SMALL_GROUP_CHILD, TORCH_OPENCL_KERNEL_CLASS="gpu", TORCH_OPENCL_DEBUG_MAX_GROUP="64")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert lines[-1] == "64"
    assert "kernel noop: a work-group of 128 work-items exceeds the device's limit of 64 per group" in lines[-2]


# --- A CUDA or ROCm build of torch: no autoload; an explicit import works and warns once --------

FAKE_CUDA_BUILD = r"""
import sys, warnings
import torch
torch.version.cuda = "13.0"   # what a CUDA build of torch reports
import torch_opencl_autoload as _autoload
_autoload.load()              # what `import torch` runs through the torch.backends entry point
print("autoload registered:", "torch_opencl" in sys.modules, torch._C._get_privateuse1_backend_name())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import torch_opencl
messages = [str(w.message) for w in caught if "161129" in str(w.message)]
print("warnings:", len(messages))
print(messages[0] if messages else "")
print("sum:", torch.ones(3, device="opencl").sum().item())
"""


def test_a_cuda_build_of_torch_is_not_autoloaded_and_an_explicit_import_says_what_it_costs():
    p = _run(FAKE_CUDA_BUILD, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "autoload registered: False privateuseone"
    assert lines[1] == "warnings: 1"
    assert "CUDA 13.0 build" in lines[2] and "separate processes" in lines[2]
    assert lines[3] == "sum: 3.0"


@pytest.mark.skipif(accelerator_build() is not None, reason="this torch is a CUDA or ROCm build")
def test_a_cpu_build_of_torch_is_autoloaded_without_a_warning():
    p = _run("import warnings\nwarnings.simplefilter('error')\nimport torch\n"
             "print(torch._C._get_privateuse1_backend_name(), torch.ones(2, device='opencl').sum().item())",
             TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["opencl", "2.0"]


def test_the_report_names_the_kernel_class():
    p = _run("import runpy, sys\nsys.argv = ['torch_opencl']\nrunpy.run_module('torch_opencl', run_name='__main__')")
    assert p.returncode == 0, p.stderr
    assert "kernel class:" in p.stdout
    assert torch_opencl.__version__ in p.stdout
