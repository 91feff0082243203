"""torch.distributed with opencl tensors: the opencl_gloo backend, with two ranks.

Each scenario of _distributed_ranks.py runs once in two processes, rank r on opencl:r (PoCL shows
two devices with POCL_DEVICES="pthread pthread", set here for the ranks unless the environment sets
it); the tests below read what each rank recorded. Every launch has a time limit, and so does every
process group inside it, so a failure ends as an error rather than a hang.
"""
import json
import os
import subprocess
import sys
import time

import pytest

import _distributed_ranks as ranks

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORLD = 2
LAUNCH_TIMEOUT_S = 300  # bounds a hang; a cold cache on a loaded 2-core machine needs a few minutes


def rank_env():
    env = dict(os.environ)
    env.setdefault("POCL_DEVICES", "pthread pthread")
    env["TORCH_OPENCL_FALLBACK"] = "error"  # collectives and the training steps run on the device
    env["OMP_NUM_THREADS"] = "1"
    env.pop("TORCH_OPENCL_DIST_CHECK", None)
    return env


def launch(tmp_path, scenario, timeout=LAUNCH_TIMEOUT_S):
    """Runs a scenario on WORLD ranks; returns ({rank: results}, {rank: exit code}, output).

    A launch that does not finish in time is killed and returns no results, so that the module-scoped
    fixtures below fail each of their tests at once instead of launching again for each."""
    store = tmp_path / f"{scenario}.store"
    procs, outs = [], []
    for rank in range(WORLD):
        out = tmp_path / f"{scenario}.{rank}.json"
        outs.append(out)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "_distributed_ranks.py"), scenario, str(rank), str(WORLD),
             str(store), str(out)],
            env=rank_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout
    logs, codes = [], {}
    for rank, p in enumerate(procs):
        try:
            log, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
                q.wait()
            log, _ = p.communicate()
            logs.append(f"--- rank {rank} (killed after {timeout} s)\n{log}")
            return {}, {}, f"scenario {scenario} did not finish within {timeout} s:\n" + "\n".join(logs)
        logs.append(f"--- rank {rank} (exit {p.returncode})\n{log}")
        codes[rank] = p.returncode
    results = {r: json.loads(o.read_text()) for r, o in enumerate(outs) if o.exists()}
    return results, codes, "\n".join(logs)


def scenario_fixture(name):
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        return launch(tmp_path_factory.mktemp(name), name)
    return fixture


collectives = scenario_fixture("collectives")
training = scenario_fixture("training")
faults = scenario_fixture("faults")


def check_passed(launched, check, ranks_expected=range(WORLD)):
    results, codes, log = launched
    for rank in ranks_expected:
        assert rank in results, f"rank {rank} wrote no results (exit {codes.get(rank)}):\n{log[-4000:]}"
        assert check in results[rank], f"rank {rank} did not run {check}"
        outcome = results[rank][check]
        assert outcome["ok"], f"rank {rank}, {check}:\n{outcome['detail']}"


COLLECTIVE_CHECKS = [name for name, _ in ranks.collective_checks(0, WORLD, None)]


@pytest.mark.parametrize("check", COLLECTIVE_CHECKS)
def test_collective(collectives, check):
    check_passed(collectives, check)


def test_collective_ranks_exit_cleanly(collectives):
    results, codes, log = collectives
    assert codes == {r: 0 for r in range(WORLD)}, log[-4000:]
    assert all(set(COLLECTIVE_CHECKS) <= set(results[r]) for r in range(WORLD))


@pytest.mark.parametrize("form", list(ranks.BACKEND_FORMS))
def test_backend_string(collectives, form):
    check_passed(collectives, f"form_{form}")


@pytest.mark.parametrize("check", ["ddp", "fsdp2"])
def test_training_matches_one_process(training, check):
    check_passed(training, check)


def test_rank_that_stops_calling(faults):
    check_passed(faults, "error_after_the_timeout", ranks_expected=[0])


def test_rank_that_dies(faults):
    results, codes, log = faults
    assert codes[1] == 3, log[-4000:]
    check_passed(faults, "error_when_a_rank_dies", ranks_expected=[0])


def test_train_ddp_example_under_torchrun(tmp_path):
    steps = 20
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           os.path.join(ROOT, "examples", "train_ddp.py"), "--steps", str(steps)]
    try:
        p = subprocess.run(cmd, env=rank_env(), capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S, cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"torchrun did not finish within {LAUNCH_TIMEOUT_S} s:\n{e.stdout}\n{e.stderr}")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "rank 0 on opencl:0" in out and "rank 1 on opencl:1" in out, out[-4000:]
    assert "replicas identical: True" in out, out[-4000:]
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == steps, out[-4000:]
    assert losses[-1] < 0.8 * losses[0], f"the loss did not fall: {losses}"
