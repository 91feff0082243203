"""The suite imports torch_opencl itself, and may demand devices.

In a CUDA or ROCm build of torch, `import torch` does not load torch_opencl
(python/torch_opencl_autoload says why), and the tests must run there too.

Test modules skip where no OpenCL device is found. So that a machine whose driver failed to install
cannot pass CI on skips, CI=true (set by CI services) fails the run when no device is selected, and
TORCH_OPENCL_TEST_DEVICES=N fails it unless at least N are (scripts/test.sh's two-device pass)."""
import os

import pytest
import torch

import torch_opencl  # noqa: F401


def required_devices() -> int:
    wanted = os.environ.get("TORCH_OPENCL_TEST_DEVICES")
    if wanted:
        return int(wanted)
    return 1 if os.environ.get("CI", "").lower() == "true" else 0


def pytest_sessionstart(session):
    need = required_devices()
    if not need:
        return
    try:
        have, why = torch.opencl.device_count(), ""
    except RuntimeError as exc:
        have, why = 0, f" ({str(exc).splitlines()[0]})"
    if have < need:
        pytest.exit(f"torch-opencl tests: {need} OpenCL device(s) required (CI=true or TORCH_OPENCL_TEST_DEVICES), "
                    f"{have} found{why}; `python -m torch_opencl` shows what the machine has.", returncode=1)


@pytest.fixture(scope="module")
def silent_fallback():
    """The CPU fallback without its per-operator warnings, for a module that uses it on purpose
    (`pytestmark = pytest.mark.usefixtures("silent_fallback")`); the previous mode comes back after."""
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    yield
    torch.opencl.set_fallback_mode(previous)
