"""Device selection by TORCH_OPENCL_PLATFORM, TORCH_OPENCL_DEVICE_TYPE and
TORCH_OPENCL_VISIBLE_DEVICES, and the ``python -m torch_opencl`` report.

Selection is computed once per process, so every case runs in a fresh
subprocess. The subprocesses of all cases are started together by one
module-scoped fixture (they take ~2 s each, mostly ``import torch``) and each
test checks its own outcome.

The expectations are those of the CI machine (PoCL: one platform, "Portable
Computing Language" by "The pocl project", with one CPU device and no GPU); the
module skips elsewhere.
"""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SELECTION_VARS = ("TORCH_OPENCL_PLATFORM", "TORCH_OPENCL_DEVICE_TYPE", "TORCH_OPENCL_VISIBLE_DEVICES")

# The full child imports torch and torch_opencl (which must not raise, whatever the
# variables say), then reports the first use: device_count() and the reason, or the error.
FULL_CHILD = r"""
import json, sys
import torch
import torch_opencl
out = {"imported": True}
try:
    out["count"] = torch.opencl.device_count()
    out["reason"] = torch_opencl._C._selection_reason()
    out["names"] = [torch.opencl.get_device_name(i) for i in range(out["count"])]
except RuntimeError as exc:
    out["error"] = str(exc)
    out["error_type"] = type(exc).__name__
    # The outcome is computed once: asking again gives the same error, not a different answer.
    try:
        torch.opencl.device_count()
        out["second"] = "no error"
    except RuntimeError as again:
        out["second"] = str(again)
print("RESULT " + json.dumps(out))
"""

# The light child loads only the extension module (no `import torch`, whose ~1.5 s of CPU
# per process would dominate this file on a 2-core machine) and asks the same questions of
# the same native selection code. If the extension cannot be loaded on its own, it falls
# back to the full import.
LIGHT_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
try:
    import _C
except ImportError:
    sys.path.pop(0)
    import torch, torch_opencl
    from torch_opencl import _C
out = {"imported": True}
try:
    out["count"] = _C._device_count()
    out["reason"] = _C._selection_reason()
    out["names"] = [_C._device_properties(i)["name"] for i in range(out["count"])]
except RuntimeError as exc:
    out["error"] = str(exc)
    out["error_type"] = type(exc).__name__
    try:
        _C._device_count()
        out["second"] = "no error"
    except RuntimeError as again:
        out["second"] = str(again)
print("RESULT " + json.dumps(out))
"""


def child_env(**variables):
    import torch

    env = {k: v for k, v in os.environ.items() if k not in SELECTION_VARS}
    # For the light child: libtorch*.so, which the extension links against.
    torch_lib = str(Path(torch.__file__).parent / "lib")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (torch_lib, env.get("LD_LIBRARY_PATH")) if p)
    env["TORCH_OPENCL_FALLBACK"] = "silent"
    env.update(variables)
    return env


def run_child(args, env):
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120,
                          cwd=str(REPO_ROOT / "test"))
    return proc


def parse(proc):
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"child failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


# Cases that go through `import torch; import torch_opencl; torch.opencl...`.
FULL = {"visible_x", "combined"}

# (id, variables)
CASES = {
    "default": {},
    "platform_index": {"TORCH_OPENCL_PLATFORM": "0"},
    "platform_name_lower": {"TORCH_OPENCL_PLATFORM": "portable"},
    "platform_vendor_upper": {"TORCH_OPENCL_PLATFORM": "POCL"},
    "platform_bad_index": {"TORCH_OPENCL_PLATFORM": "3"},
    "platform_huge_index": {"TORCH_OPENCL_PLATFORM": "99999999999999999999999"},
    "platform_bad_name": {"TORCH_OPENCL_PLATFORM": "nvidia"},
    "type_cpu": {"TORCH_OPENCL_DEVICE_TYPE": "cpu"},
    "type_all_upper": {"TORCH_OPENCL_DEVICE_TYPE": "ALL"},
    "type_gpu": {"TORCH_OPENCL_DEVICE_TYPE": "gpu"},
    "type_accelerator": {"TORCH_OPENCL_DEVICE_TYPE": "accelerator"},
    "type_garbage": {"TORCH_OPENCL_DEVICE_TYPE": "tpu"},
    "visible_0": {"TORCH_OPENCL_VISIBLE_DEVICES": "0"},
    "visible_5": {"TORCH_OPENCL_VISIBLE_DEVICES": "5"},
    "visible_x": {"TORCH_OPENCL_VISIBLE_DEVICES": "x"},
    "visible_dup": {"TORCH_OPENCL_VISIBLE_DEVICES": "0,0"},
    "combined": {"TORCH_OPENCL_PLATFORM": "pocl", "TORCH_OPENCL_DEVICE_TYPE": "cpu",
                 "TORCH_OPENCL_VISIBLE_DEVICES": "0"},
}

MAIN_CASES = {
    "main_ok": {},
    "main_bad": {"TORCH_OPENCL_VISIBLE_DEVICES": "7"},
    # An ICD loader that finds no vendor files: no platform at all (and, independently, no disk cache).
    "main_no_platform": {"OCL_ICD_VENDORS": "/nonexistent/torch_opencl_test_vendors",
                         "OCL_ICD_FILENAMES": "", "TORCH_OPENCL_CACHE": "0"},
}


def _machine_is_ci_like():
    import torch_opencl  # noqa: F401  (an import failure is a failure, not a skip)
    from torch_opencl import _C

    if any(os.environ.get(v) for v in SELECTION_VARS):
        return "selection variables are set in the test environment"
    platforms = _C._platforms()
    if len(platforms) != 1 or "portable" not in platforms[0]["name"].lower() or len(platforms[0]["devices"]) != 1:
        return f"expectations are for a single-device PoCL platform, found {platforms}"
    if platforms[0]["devices"][0]["type"] != "cpu":
        return "expectations are for PoCL's CPU device"
    return None


_reason = _machine_is_ci_like()
pytestmark = pytest.mark.skipif(_reason is not None, reason=_reason or "")


@pytest.fixture(scope="module")
def outcomes():
    from torch_opencl import _C

    extension_dir = str(Path(_C.__file__).parent)
    jobs = {
        name: (["-c", FULL_CHILD] if name in FULL else ["-c", LIGHT_CHILD, extension_dir], child_env(**env))
        for name, env in CASES.items()
    }
    jobs.update({name: (["-m", "torch_opencl"], child_env(**env)) for name, env in MAIN_CASES.items()})
    # The report, then the properties that process's device gives (PoCL's CPU device sizes its memory from
    # what is free when the process starts: another process, this one included, may see other figures).
    jobs["main_ok"] = (["-c", REPORT_AND_PROPERTIES], child_env(**MAIN_CASES["main_ok"]))
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(run_child, args, env) for name, (args, env) in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


REPORT_AND_PROPERTIES = """
import sys
import torch
from torch_opencl.__main__ import main
code = main()
p = torch.opencl.get_device_properties(0)
print("device properties:", p.max_alloc_size, p.total_memory)
sys.exit(code)
"""

PLATFORM_NAME = "Portable Computing Language"


def assert_selected(result, count=1):
    assert result["imported"]
    assert "error" not in result, result.get("error")
    assert result["count"] == count
    assert len(result["names"]) == count


def assert_selection_error(result, variable, value, *fragments):
    assert result["imported"], "importing torch and torch_opencl must not raise"
    assert "error" in result, f"expected an error for {variable}={value!r}, got {result}"
    message = result["error"]
    # The message quotes what was asked ...
    assert f"{variable}='{value}'" in message, message
    # ... and lists what exists.
    assert "OpenCL platforms and devices on this machine" in message, message
    assert f"platform 0: {PLATFORM_NAME}" in message, message
    assert "device 0:" in message and "[cpu]" in message, message
    for fragment in fragments:
        assert fragment in message, message
    assert result["second"] == message, "the selection error must be the same on every call"


def test_default_selects_every_device_of_the_platform(outcomes):
    result = parse(outcomes["default"])
    assert_selected(result)
    assert result["reason"] == f"platform 0 ({PLATFORM_NAME}), all its devices (it has no GPU)"


@pytest.mark.parametrize("case", ["platform_index", "platform_name_lower", "platform_vendor_upper"])
def test_platform_good_values(outcomes, case):
    result = parse(outcomes[case])
    assert_selected(result)
    assert result["reason"].startswith(f"platform 0 ({PLATFORM_NAME}) from TORCH_OPENCL_PLATFORM"), result["reason"]


def test_platform_index_out_of_range(outcomes):
    result = parse(outcomes["platform_bad_index"])
    assert_selection_error(result, "TORCH_OPENCL_PLATFORM", "3", "there are 1 platform(s)")


def test_platform_index_too_large_for_an_integer(outcomes):
    value = CASES["platform_huge_index"]["TORCH_OPENCL_PLATFORM"]
    result = parse(outcomes["platform_huge_index"])
    assert_selection_error(result, "TORCH_OPENCL_PLATFORM", value, "is not a platform index")


def test_platform_name_that_matches_nothing(outcomes):
    result = parse(outcomes["platform_bad_name"])
    assert_selection_error(result, "TORCH_OPENCL_PLATFORM", "nvidia", "matches no platform")


def test_device_type_cpu(outcomes):
    result = parse(outcomes["type_cpu"])
    assert_selected(result)
    assert "device type 'cpu' from TORCH_OPENCL_DEVICE_TYPE" in result["reason"]


def test_device_type_all_is_case_insensitive(outcomes):
    result = parse(outcomes["type_all_upper"])
    assert_selected(result)
    assert "device type 'all' from TORCH_OPENCL_DEVICE_TYPE" in result["reason"]


@pytest.mark.parametrize("case,value", [("type_gpu", "gpu"), ("type_accelerator", "accelerator")])
def test_device_type_absent_here_is_an_error(outcomes, case, value):
    result = parse(outcomes[case])
    assert_selection_error(result, "TORCH_OPENCL_DEVICE_TYPE", value, "names no device")


def test_device_type_garbage(outcomes):
    result = parse(outcomes["type_garbage"])
    assert_selection_error(result, "TORCH_OPENCL_DEVICE_TYPE", "tpu", "gpu, cpu, accelerator, all")


def test_visible_devices_good(outcomes):
    result = parse(outcomes["visible_0"])
    assert_selected(result)
    assert "devices 0 from TORCH_OPENCL_VISIBLE_DEVICES" in result["reason"]


def test_visible_devices_index_out_of_range(outcomes):
    result = parse(outcomes["visible_5"])
    assert_selection_error(result, "TORCH_OPENCL_VISIBLE_DEVICES", "5", "device 5 does not exist", "1 device(s)")


def test_visible_devices_garbage(outcomes):
    result = parse(outcomes["visible_x"])
    assert_selection_error(result, "TORCH_OPENCL_VISIBLE_DEVICES", "x", "'x' is not a device index")


def test_visible_devices_duplicates(outcomes):
    result = parse(outcomes["visible_dup"])
    assert_selection_error(result, "TORCH_OPENCL_VISIBLE_DEVICES", "0,0", "twice")


def test_all_variables_together(outcomes):
    result = parse(outcomes["combined"])
    assert_selected(result)
    reason = result["reason"]
    assert "from TORCH_OPENCL_PLATFORM" in reason and "'cpu'" in reason and "devices 0" in reason, reason


def test_bad_value_errors_on_first_use_not_at_import(outcomes):
    # This child ran `import torch; import torch_opencl` with TORCH_OPENCL_VISIBLE_DEVICES=x:
    # both imports succeeded and the error came from torch.opencl.device_count().
    assert "visible_x" in FULL
    result = parse(outcomes["visible_x"])
    assert result["imported"] is True
    assert result["error_type"] == "OpenCLError"  # a RuntimeError subclass
    assert result["error"].startswith("TORCH_OPENCL_VISIBLE_DEVICES='x'")


# --- python -m torch_opencl


def test_main_reports_the_setup(outcomes):
    proc = outcomes["main_ok"]
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    import torch

    assert f"torch:          {torch.__version__}" in out
    assert "torch_opencl:   0.1.0" in out
    assert f"platform 0: {PLATFORM_NAME} (vendor: The pocl project)" in out
    assert "Selected 1 device(s): platform 0" in out
    for field in ("vendor:", "driver:", "OpenCL C version:", "global memory:", "max allocation:",
                  "compute units:", "fp64:", "fp16:"):
        assert field in out, field
    import re

    import torch

    # What the device reports, as the report gives it (two decimals of GiB), against the properties of the
    # report's own process: PoCL's CPU device sizes its global memory (and the max allocation, a quarter of
    # it) from the memory free when the process starts, which differs between processes on a busy machine.
    max_alloc, total = (int(v) for v in re.search(r"device properties: (\d+) (\d+)", out).groups())
    for label, theirs in (("max allocation:", max_alloc), ("global memory:", total)):
        reported = re.search(re.escape(label) + r"\s+([\d.]+) GiB", out)
        assert reported, f"{label} not in GiB in {out!r}"
        assert abs(float(reported.group(1)) * 2**30 - theirs) <= 0.006 * 2**30, (label, reported.group(0), theirs)
    assert "fp16:              no" in out and "fp64:              yes" in out
    assert "Program cache:  " in out and "disabled" not in out
    assert "CLBlast:" in out and "unknown" not in out.split("CLBlast:")[1].splitlines()[0]
    assert "Fallback mode:  silent" in out  # the children run with TORCH_OPENCL_FALLBACK=silent
    autoload = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "0"
    assert ("Autoload:       on" if autoload else "Autoload:       off") in out


def test_main_with_disk_cache_disabled(outcomes):
    proc = outcomes["main_no_platform"]
    assert proc.returncode == 0, proc.stderr
    assert "disk cache disabled (TORCH_OPENCL_CACHE=0)" in proc.stdout


def test_main_with_a_bad_variable_exits_1_without_traceback(outcomes):
    proc = outcomes["main_bad"]
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "TORCH_OPENCL_VISIBLE_DEVICES='7'" in proc.stderr
    assert f"platform 0: {PLATFORM_NAME}" in proc.stderr  # the error lists the platforms


def test_main_without_platform_says_not_available(outcomes):
    proc = outcomes["main_no_platform"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "OpenCL is not available" in proc.stdout
    assert "Platforms:      none" in proc.stdout
