"""PoCL's own kernel cache under a user's machine's faults (runtime/pocl_cache.h).

PoCL reads its cache directory when its platform starts and trusts what it finds: a damaged entry killed
the process (a bus error from a truncated kernel .so, an assertion from an empty or truncated program.bc),
and a directory it could not use made every build fail, or PoCL report no device. Each case runs in a
child process (a crash is the failure) with its own POCL_CACHE_DIR.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(
    not torch.opencl.is_available() or "Portable Computing Language" not in torch.opencl.get_device_properties().platform,
    reason="PoCL's own cache: the device is not PoCL's")

CHILD = r"""
import json, torch
x = torch.arange(8.0, device="opencl")
values = (x * 3 + 1).cpu().tolist()
from torch_opencl import _C
report = _C._pocl_cache_report() if hasattr(_C, "_pocl_cache_report") else {}
print("RESULT " + json.dumps({"values": values, "report": report}))
"""
EXPECTED = [i * 3.0 + 1 for i in range(8)]


def run_child(**env_changes):
    env = dict(os.environ)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the process died (rc {proc.returncode}):\n{proc.stderr[-3000:]}"
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["values"] == EXPECTED
    return result, proc.stderr


def warnings_in(stderr):
    return [l for l in stderr.splitlines() if "torch_opencl: warning" in l]


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A PoCL cache holding the child's programs, each with its program.bc and a kernel .so."""
    cache = tmp_path_factory.mktemp("pocl") / "kcache"
    run_child(POCL_CACHE_DIR=cache)
    assert list(cache.glob("*/*/program.bc")) and list(cache.glob("*/*/*/*/*.so"))
    return cache


def damage(cache, kind):
    if kind == "truncated_so":
        for f in cache.glob("*/*/*/*/*.so"):
            os.truncate(f, 2000)
    elif kind == "empty_so":
        for f in cache.glob("*/*/*/*/*.so"):
            f.write_bytes(b"")
    elif kind == "empty_program_bc":
        for f in cache.glob("*/*/program.bc"):
            f.write_bytes(b"")
    elif kind == "truncated_program_bc":
        for f in cache.glob("*/*/program.bc"):
            os.truncate(f, f.stat().st_size // 2)


@pytest.mark.parametrize("kind", ["truncated_so", "empty_so", "empty_program_bc", "truncated_program_bc"])
def test_damaged_entries_after_a_power_cut_are_compiled_again(built_cache, tmp_path, kind):
    cache = tmp_path / "kcache"
    shutil.copytree(built_cache, cache)
    damage(cache, kind)
    # The entries are checked once per boot: a power cut is followed by one (the stamp names another boot).
    (cache / ".torch_opencl_checked").write_text("the boot before the power cut")
    result, stderr = run_child(POCL_CACHE_DIR=cache)
    assert result["report"]["checked"] and result["report"]["removed"] >= 1
    assert "removed" in stderr and str(cache) in stderr
    # Compiled again, whole, in place of the removed programs.
    assert list(cache.glob("*/*/program.bc")) and list(cache.glob("*/*/*/*/*.so"))


def test_a_whole_cache_is_kept_and_checked_once_per_boot(built_cache, tmp_path):
    cache = tmp_path / "kcache"
    shutil.copytree(built_cache, cache)
    programs = sorted(p.relative_to(cache) for p in cache.glob("*/*/program.bc"))
    (cache / ".torch_opencl_checked").unlink(missing_ok=True)
    first, _ = run_child(POCL_CACHE_DIR=cache)
    assert first["report"]["checked"] and first["report"]["removed"] == 0
    assert sorted(p.relative_to(cache) for p in cache.glob("*/*/program.bc")) == programs
    second, _ = run_child(POCL_CACHE_DIR=cache)  # the same boot: no scan of a big cache at every start
    assert not second["report"]["checked"]


def unusable_directories(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    return {
        "a_file": ({"POCL_CACHE_DIR": a_file}, a_file),
        "under_a_file": ({"POCL_CACHE_DIR": a_file / "kcache"}, a_file / "kcache"),
        # /proc takes no new directory, for root too: a read-only $HOME.
        "read_only_home": ({"POCL_CACHE_DIR": None, "XDG_CACHE_HOME": None, "HOME": "/proc"},
                           Path("/proc/.cache/pocl/kcache")),
    }


@pytest.mark.parametrize("case", ["a_file", "under_a_file", "read_only_home"])
def test_an_unusable_cache_directory_warns_once_and_the_work_goes_on(tmp_path, case):
    env, directory = unusable_directories(tmp_path)[case]
    result, stderr = run_child(**env)
    (warning,) = warnings_in(stderr)
    assert str(directory) in warning and "cannot be used" in warning and "POCL_CACHE_DIR" in warning
    used = result["report"]["used"]
    assert used != str(directory) and used in warning
    assert not os.path.exists(used), "the private temporary cache outlived its process"


def test_no_usable_directory_at_all_says_what_to_check(tmp_path):
    # Neither the cache directory nor a temporary one can be made: PoCL reports no device, and the error
    # says so and what to check, instead of "device index 0 is out of range (opencl:0..-1)".
    env = dict(os.environ, HOME="/proc", TMPDIR="/proc")
    for name in ("POCL_CACHE_DIR", "XDG_CACHE_HOME"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "RuntimeError: OpenCL device index 0 cannot be used: no OpenCL device is available" in proc.stderr
    assert "/proc/.cache/pocl/kcache" in proc.stderr and "POCL_CACHE_DIR" in proc.stderr
    assert "out of range" not in proc.stderr
