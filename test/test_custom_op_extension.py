"""A C++ extension with an opencl kernel of its own, built as a user's package would be:
examples/custom_op/ (myops::myadd, PyTorch's dispatcher tutorial operator) against the installed
public headers and CMake package (find_package(TorchOpenCL)); its op must match CPU, forward and backward."""
import os
import pathlib
import runpy
import shutil
import subprocess
import sys

import pytest
import torch

import torch_opencl
import torch_opencl.cpp_extension
from torch_opencl import _C

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "custom_op"


@pytest.fixture(scope="module")
def myops_library(tmp_path_factory):
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.fail("cmake and ninja are needed to build the example (scripts/setup.sh installs them)")
    build = tmp_path_factory.mktemp("myops_build")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    configure = ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-G", "Ninja",
                 f"-DCMAKE_PREFIX_PATH={torch_opencl.cpp_extension.cmake_prefix_path}"]
    for command in (configure, ["cmake", "--build", str(build)]):
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stdout}\n{proc.stderr}"
    library = build / "libmyops.so"
    torch.ops.load_library(str(library))
    return library


def test_installed_headers_and_cmake_package_are_in_the_wheel():
    (include,) = torch_opencl.cpp_extension.include_paths()
    public = pathlib.Path(include) / "torch_opencl"
    assert (public / "extension.h").is_file()
    # The runtime half uses OpenCL only: no ATen include reaches an extension through it.
    for header in (public / "runtime").glob("*.h"):
        text = header.read_text()
        includes = [line for line in text.splitlines() if line.startswith("#include")]
        assert not [i for i in includes if "ATen/" in i or "c10/" in i or "torch/" in i], (header, includes)
        assert '#include "runtime/' not in text, f"{header}: includes must name torch_opencl/runtime/"
    config = pathlib.Path(torch_opencl.cpp_extension.cmake_prefix_path) / "TorchOpenCL" / "TorchOpenCLConfig.cmake"
    assert config.is_file()
    (lib,) = torch_opencl.cpp_extension.library_paths()
    assert (pathlib.Path(lib) / "libtorch_opencl.so").is_file()


@pytest.mark.parametrize("make", [
    lambda: (torch.randn(1000), torch.randn(1000)),
    lambda: (torch.randn(7, 9)[1:, ::2], torch.randn(6, 5)),       # a strided view with a storage offset
    lambda: (torch.randn(()), torch.randn(())),
    lambda: (torch.randn(0, 3), torch.randn(0, 3)),
], ids=["vector", "view", "scalar", "empty"])
def test_forward_matches_cpu(myops_library, make):
    a, b = make()
    expected = torch.ops.myops.myadd(a, b)
    torch.testing.assert_close(expected, a + b)
    got = torch.ops.myops.myadd(a.to("opencl"), b.to("opencl"))
    assert got.device.type == "opencl"
    torch.testing.assert_close(got.cpu(), expected)


def test_view_inside_a_device_block(myops_library):
    # Views taken on the device start inside an allocator block: the kernel sees their element offset.
    base_a, base_b = torch.randn(4, 33), torch.randn(4, 33)
    dev_a, dev_b = base_a.to("opencl"), base_b.to("opencl")
    got = torch.ops.myops.myadd(dev_a[2, 1:], dev_b[1, :-1])
    torch.testing.assert_close(got.cpu(), base_a[2, 1:] + base_b[1, :-1])


def test_backward_matches_cpu(myops_library):
    a, b = torch.randn(64, 10, requires_grad=True), torch.randn(64, 10, requires_grad=True)
    w = torch.randn(64, 10)
    a_dev = a.detach().to("opencl").requires_grad_()
    b_dev = b.detach().to("opencl").requires_grad_()
    (torch.ops.myops.myadd(a, b) * w).sum().backward()
    (torch.ops.myops.myadd(a_dev, b_dev) * w.to("opencl")).sum().backward()
    torch.testing.assert_close(a_dev.grad.cpu(), a.grad)
    torch.testing.assert_close(b_dev.grad.cpu(), b.grad)


def test_runs_on_the_current_stream_through_the_launch_path(myops_library):
    a, b = torch.randn(4096), torch.randn(4096)
    dev_a, dev_b = a.to("opencl"), b.to("opencl")
    torch.opencl.synchronize()
    stream = torch.opencl.Stream()
    launches = _C._launch_count()
    with torch.opencl.stream(stream):
        got = torch.ops.myops.myadd(dev_a, dev_b)
    assert _C._launch_count() == launches + 1  # the extension's kernel, enqueued by tocl::enqueue_1d
    stream.synchronize()
    torch.testing.assert_close(got.cpu(), a + b)


def test_bad_input_is_a_clear_error_and_the_device_keeps_working(myops_library):
    with pytest.raises(RuntimeError, match="myadd: a and b must be float32, got Double and Double"):
        torch.ops.myops.myadd(torch.ones(3, dtype=torch.double, device="opencl"),
                              torch.ones(3, dtype=torch.double, device="opencl"))
    with pytest.raises(RuntimeError, match=r"myadd: a and b must have the same shape, got \[3\] and \[4\]"):
        torch.ops.myops.myadd(torch.ones(3, device="opencl"), torch.ones(4, device="opencl"))
    with pytest.raises(RuntimeError, match="myadd: a and b must be on the same device, got cpu and opencl:0"):
        torch.ops.myops.myadd(torch.ones(3), torch.ones(3, device="opencl"))
    got = torch.ops.myops.myadd(torch.ones(3, device="opencl"), torch.ones(3, device="opencl"))
    assert torch.equal(got.cpu(), torch.full((3,), 2.0))


def test_example_script_runs(myops_library):
    runpy.run_path(str(EXAMPLE / "example.py"), run_name="example").get("main")(str(myops_library))
