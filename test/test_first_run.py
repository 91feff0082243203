"""The first run as a newcomer sees it: drivers' warnings stay off the terminal (TORCH_OPENCL_VERBOSE=1
shows them with each build's log), the first second of compiling prints one line that says why the
wait, and ``python -m torch_opencl warmup`` compiles the training hot set ahead of time.

Each case runs in a child process, whose stderr is the terminal a user would see."""
import json
import os
import subprocess
import sys
import uuid

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

# A warning every OpenCL C compiler gives: an assignment used as a condition.
WARNING_SOURCE = """// nonce {nonce}
__kernel void noisy(__global int* x) {{ int a = x[0]; if (a = 2) x[1] = a; }}
"""


def run(code, *args, **env_extra):
    env = dict(os.environ)
    for name in ("TORCH_OPENCL_VERBOSE", "TORCH_OPENCL_CACHE"):
        env.pop(name, None)
    env.update(env_extra)
    return subprocess.run([sys.executable, *(["-c", code] if code else []), *args], env=env, capture_output=True,
                          text=True, timeout=900)


BUILD = "import sys, torch, torch_opencl\ntorch_opencl._C._build_program(0, sys.argv[1], '')\nprint('built')"


def test_driver_warnings_never_reach_the_terminal():
    proc = run(BUILD, WARNING_SOURCE.format(nonce=uuid.uuid4().hex))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "built"
    assert "warning" not in proc.stderr, proc.stderr  # PoCL's "1 warning generated." among them


def test_verbose_shows_each_build_with_its_log():
    proc = run(BUILD, WARNING_SOURCE.format(nonce=uuid.uuid4().hex), TORCH_OPENCL_VERBOSE="1")
    assert proc.returncode == 0, proc.stderr
    assert "torch_opencl: built kernels noisy (options" in proc.stderr, proc.stderr  # named by its kernel
    assert "build log:" in proc.stderr and "assignment" in proc.stderr, proc.stderr  # the driver's own words


def test_verbose_tells_programs_apart(tmp_path):
    # Every generated program starts with the same prelude: each is named by its kernels, a pointwise one by
    # its expression too, and by its operand types, so two builds of one family read differently.
    code = "import torch\nx = torch.ones(8, device='opencl')\nx.exp(); x.double().exp()\ntorch.opencl.synchronize()"
    proc = run(code, TORCH_OPENCL_VERBOSE="1", TORCH_OPENCL_CACHE_DIR=str(tmp_path / "ours"),
               POCL_CACHE_DIR=str(tmp_path / "pocl"))
    assert proc.returncode == 0, proc.stderr
    built = [line for line in proc.stderr.splitlines() if line.startswith("torch_opencl: built ")]
    exp = [line for line in built if "pointwise_contiguous" in line and "of (exp(a))" in line]
    assert any("C_T float," in line for line in exp) and any("C_T double," in line for line in exp), built
    assert not any("Definitions every generated program" in line for line in built), built


SLOW_COMPILES = r"""
import json, sys, uuid, torch, torch_opencl
from torch_opencl import _C
# Distinct programs until a second has gone into compiling, then two more; their sources go to argv[1]. A macro
# tells them apart (PoCL knows a program by its preprocessed text, which keeps no comment).
body = "".join(f"__kernel void k{i}(__global float* x, int n) {{ for (int j = 0; j < n; ++j) x[j] = sin(x[j]) * {i}.0f; }}\n"
               for i in range(20))
sources = []
for extra in range(200):
    sources.append(f"#define NONCE_{uuid.uuid4().hex}\n" + body)
    _C._build_program(0, sources[-1], "")
    if _C._program_cache_stats()["build_seconds"] >= 1.0:
        break
for extra in range(2):
    sources.append(f"#define NONCE_{uuid.uuid4().hex}\n" + body)
    _C._build_program(0, sources[-1], "")
json.dump(sources, open(sys.argv[1], "w"))
print("location", _C._program_cache_location(0))
print("stats", json.dumps(_C._program_cache_stats()))
"""

# The same programs in a new process: loaded from the disk caches (PoCL's own on PoCL, ours on other drivers),
# again and again (the memory cache emptied each round) until loading has taken the second after which
# compiling would be announced.
WARM_LOADS = r"""
import json, sys, torch, torch_opencl
from torch_opencl import _C
sources = json.load(open(sys.argv[1]))
for round in range(500):
    for source in sources:
        _C._build_program(0, source, "")
    _C._clear_program_memory_cache()
    if _C._program_cache_stats()["build_seconds"] >= 1.0:
        break
print("stats", json.dumps(_C._program_cache_stats()))
"""


def stats_of(proc):
    return json.loads(proc.stdout.split("stats ", 1)[1])


def test_the_first_second_of_compiling_says_why_once_and_a_warm_start_says_nothing(tmp_path):
    from torch_opencl.warmup import _compiled, _loaded

    caches = dict(POCL_CACHE_DIR=str(tmp_path / "pocl"), TORCH_OPENCL_CACHE_DIR=str(tmp_path / "ours"))
    sources = str(tmp_path / "sources.json")
    cold = run(SLOW_COMPILES, sources, **caches)
    assert cold.returncode == 0, cold.stderr
    lines = [line for line in cold.stderr.splitlines() if "compiling OpenCL kernels" in line]
    assert len(lines) == 1, cold.stderr
    location = cold.stdout.split("location ", 1)[1].splitlines()[0].strip()
    assert torch.opencl.get_device_name() in lines[0] and f"(cached in {location} after this run;" in lines[0]
    assert "python -m torch_opencl warmup" in lines[0]
    built = len(json.load(open(sources)))
    assert _compiled(stats_of(cold)) == built and _loaded(stats_of(cold)) == 0, cold.stdout

    warm = run(WARM_LOADS, sources, **caches)
    assert warm.returncode == 0, warm.stderr
    stats = stats_of(warm)
    assert stats["build_seconds"] >= 1.0, stats  # as long as the cold process took to announce its compiling
    assert _compiled(stats) == 0 and _loaded(stats) >= built, stats
    assert "compiling OpenCL kernels" not in warm.stderr, warm.stderr


def test_build_errors_still_carry_the_log_under_quiet_builds():
    bad = f"// nonce {uuid.uuid4().hex}\n__kernel void broken(__global float* x) {{ x[0] = no_such_name; }}\n"
    proc = run(BUILD, bad)
    assert proc.returncode != 0
    assert "failed to build" in proc.stderr and "no_such_name" in proc.stderr, proc.stderr


def test_warmup_compiles_the_hot_set_with_a_progress_bar():
    proc = run(None, "-m", "torch_opencl", "warmup", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert "compiling OpenCL kernels" in proc.stderr  # tqdm's bar
    assert "5/5" in proc.stderr, proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("warmup: ") and "with 2 process(es)" in summary, proc.stdout
    assert torch.opencl.get_device_name() in summary


def test_warmup_names_its_workloads():
    proc = run(None, "-m", "torch_opencl", "warmup", "--only", "digits,resnet")
    assert proc.returncode == 2
    assert "no workload named 'resnet'; the workloads are digits, transformer" in proc.stderr, proc.stderr


def test_warmup_in_process_reports_each_workload():
    from torch_opencl import warmup

    summary = warmup.warmup("opencl", jobs=1, progress=False)
    assert summary["jobs"] == 1  # this process has used the device: never forked
    assert [w["name"] for w in summary["workloads"]] == [name for _, name, _ in warmup.WORKLOADS]
    # The programs are in this process's memory now: running a workload again compiles nothing.
    again = warmup._run(0, "opencl:0")
    assert again["compiled"] == 0 and again["loaded"] == 0
