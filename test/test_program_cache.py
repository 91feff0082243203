"""The program cache: built once per (device, source, options) in memory, binaries kept
on disk in TORCH_OPENCL_CACHE_DIR, corrupt entries rebuilt, compile errors carry the log.

Each case runs in a child process with its own cache directory, so "cold" and "warm"
mean what they say for our cache. A per-run nonce in the source keeps PoCL's own
cache (~/.cache/pocl) cold for the first build too.
"""
import json
import os
import stat
import subprocess
import sys
import uuid

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

NONCE = uuid.uuid4().hex
SOURCE = f"""
// nonce {NONCE}
__kernel void scale(__global float* x, float a) {{ x[get_global_id(0)] *= a; }}
"""

CHILD = r"""
import json, os, sys, time
import torch, torch_opencl
from torch_opencl import _C
source = sys.argv[1]
# Our disk cache on every driver (on PoCL it is off by default: PoCL's own cache does its work).
_C._force_binaries_on_disk(int(os.environ.get("TOCL_TEST_BINARIES", "1")))
t0 = time.perf_counter()
_C._build_program(0, source, "")
first = time.perf_counter() - t0
t0 = time.perf_counter()
_C._build_program(0, source, "")   # same process: the in-memory cache answers
second = time.perf_counter() - t0
print("RESULT " + json.dumps({"first": first, "second": second, "stats": _C._program_cache_stats()}))
"""


def run_child(cache_dir, source=SOURCE, **env_extra):
    env = dict(os.environ)
    env.pop("TORCH_OPENCL_CACHE", None)
    env["TORCH_OPENCL_CACHE_DIR"] = str(cache_dir)
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", CHILD, source], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def entries(cache_dir):
    return sorted(p for p in cache_dir.iterdir() if p.suffix == ".bin") if cache_dir.exists() else []


def test_cold_then_warm_loads_the_binary_from_disk(tmp_path):
    cache_dir = tmp_path / "cache"
    cold = run_child(cache_dir)
    assert cold["stats"]["source_builds"] == 1 and cold["stats"]["disk_loads"] == 0
    assert cold["stats"]["memory_hits"] == 1  # the second request in the same process
    assert len(entries(cache_dir)) == 1

    warm = run_child(cache_dir)
    assert warm["stats"]["source_builds"] == 0 and warm["stats"]["disk_loads"] == 1
    print(f"\nprogram build: cold {cold['first'] * 1e3:.1f} ms (compiled from source), "
          f"warm {warm['first'] * 1e3:.1f} ms (binary from disk), "
          f"in-memory hit {warm['second'] * 1e6:.1f} us")
    # Loading the binary skips PoCL's LLVM; NVIDIA's driver JIT-compiles a loaded binary much as it
    # compiles source (and keeps its own cache), so only a CPU device must load faster than it builds.
    if torch.opencl.get_device_properties(0).type == "cpu":
        assert warm["first"] < cold["first"], (warm["first"], cold["first"])


def test_cache_directory_is_private(tmp_path):
    cache_dir = tmp_path / "a" / "b"
    run_child(cache_dir)
    for d in (tmp_path / "a", cache_dir):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, oct(d.stat().st_mode)
    for f in entries(cache_dir):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600


@pytest.mark.parametrize("damage", ["truncate", "flip_byte", "garbage", "empty"])
def test_corrupt_cache_file_is_removed_and_rebuilt(tmp_path, damage):
    cache_dir = tmp_path / "cache"
    run_child(cache_dir)
    (entry,) = entries(cache_dir)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip_byte":
        broken = bytearray(data)
        broken[-10] ^= 0xFF
        entry.write_bytes(bytes(broken))
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    else:
        entry.write_bytes(b"")

    rebuilt = run_child(cache_dir)
    assert rebuilt["stats"]["source_builds"] == 1 and rebuilt["stats"]["disk_loads"] == 0
    assert rebuilt["stats"]["corrupt_files"] == 1
    # The rebuilt entry is whole again: the next process loads it.
    assert run_child(cache_dir)["stats"]["disk_loads"] == 1


def test_an_entry_holding_another_program_is_rebuilt(tmp_path):
    # An entry whose file holds another program (copied or renamed by hand, or a hash collision) was
    # loaded and its kernel then missing (CL_INVALID_KERNEL_NAME): it is rebuilt from the source asked for.
    other = SOURCE.replace("scale", "shift").replace("*= a", "+= a")
    cache_dir = tmp_path / "cache"
    run_child(cache_dir)
    (ours,) = entries(cache_dir)
    run_child(cache_dir, source=other)
    (theirs,) = [p for p in entries(cache_dir) if p != ours]
    ours.write_bytes(theirs.read_bytes())
    rebuilt = run_child(cache_dir)
    assert rebuilt["stats"]["corrupt_files"] == 1
    assert rebuilt["stats"]["source_builds"] == 1 and rebuilt["stats"]["disk_loads"] == 0
    assert run_child(cache_dir)["stats"]["disk_loads"] == 1


def test_disk_cache_disabled_writes_nothing(tmp_path):
    cache_dir = tmp_path / "cache"
    result = run_child(cache_dir, TORCH_OPENCL_CACHE="0")
    assert result["stats"]["source_builds"] == 1
    assert not cache_dir.exists()


def test_pocl_keeps_no_binaries_of_ours(tmp_path):
    # Reading a program's binary makes PoCL compile all its kernels once more (a cold first epoch's compile
    # work doubled); PoCL's own disk cache keeps programs and kernels instead.
    cache_dir = tmp_path / "cache"
    result = run_child(cache_dir, TOCL_TEST_BINARIES="-1")
    assert result["stats"]["source_builds"] == 1
    pocl = "Portable Computing Language" in torch.opencl.get_device_properties().platform
    assert len(entries(cache_dir)) == (0 if pocl else 1)


def test_options_and_source_are_part_of_the_key(tmp_path):
    from torch_opencl import _C

    before = _C._program_cache_stats()
    _C._build_program(0, SOURCE, "-DVARIANT=1")
    _C._build_program(0, SOURCE, "-DVARIANT=2")
    _C._build_program(0, SOURCE, "-DVARIANT=1")
    after = _C._program_cache_stats()
    assert after["source_builds"] + after["disk_loads"] - before["source_builds"] - before["disk_loads"] == 2
    assert after["memory_hits"] - before["memory_hits"] == 1


def test_threads_build_different_programs_at_once_and_one_program_once():
    import threading

    from torch_opencl import _C

    nonce = uuid.uuid4().hex
    shared = f"// shared {nonce}\n__kernel void k(__global float* x) {{ x[0] = 1.0f; }}\n"
    own = [f"// own {nonce} {i}\n__kernel void k(__global float* x) {{ x[0] = {i}.0f; }}\n" for i in range(4)]
    before = _C._program_cache_stats()
    errors = []

    def work(i):
        try:
            _C._build_program(0, shared, "")
            _C._build_program(0, own[i], "")
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    after = _C._program_cache_stats()
    built = after["source_builds"] + after["disk_loads"] - before["source_builds"] - before["disk_loads"]
    assert built == 5  # the shared program once, each thread's own once
    assert after["memory_hits"] - before["memory_hits"] == 3


def test_compile_error_carries_the_build_log():
    from torch_opencl import _C

    bad = f"// nonce {NONCE}\n__kernel void broken(__global float* x) {{ x[0] = undefined_name_xyz; }}\n"
    with pytest.raises(torch.opencl.OpenCLError) as info:
        _C._build_program(0, bad, "")
    message = str(info.value)
    assert "failed to build" in message
    assert "CL_BUILD_PROGRAM_FAILURE" in message
    assert "undefined_name_xyz" in message  # the compiler's own words, from the build log
    # Asking again raises the same error without compiling again.
    builds = _C._program_cache_stats()["source_builds"]
    with pytest.raises(torch.opencl.OpenCLError) as again:
        _C._build_program(0, bad, "")
    assert str(again.value) == message
    assert _C._program_cache_stats()["source_builds"] == builds
    # The device keeps working after a failed build.
    x = torch.arange(4.0, device="opencl")
    assert torch.equal((x + 1).cpu(), torch.arange(4.0) + 1)
