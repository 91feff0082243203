"""What PyTorch users expect of a device, checked as they do it for cuda:
autoload, torch.accelerator, torch.Stream/torch.Event and torch.opencl's streams and
events, record_stream, RNG state, save/load with map_location, fork safety.

Subprocess cases run from test/ (where the source tree's python/ is not on
sys.path), so the installed package is what loads.
"""
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import gc

import torch

import torch_opencl  # noqa: F401
from torch_opencl_autoload import accelerator_build

DEV = torch.device("opencl")
TEST_DIR = Path(__file__).resolve().parent


def _env(**variables):
    env = dict(os.environ)
    env["TORCH_OPENCL_FALLBACK"] = "silent"
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    env.update(variables)
    return env


def _start(code, **variables):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=_env(**variables),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(TEST_DIR))


def _finish(proc, timeout=120):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"subprocess hung; stdout={out!r} stderr={err[-2000:]!r}")
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), proc, err
    pytest.fail(f"no RESULT line (rc={proc.returncode}); stdout={out!r} stderr={err[-3000:]!r}")


def _long_work(x, n=30):
    """Enough native elementwise work on the current stream to keep it busy a while."""
    for _ in range(n):
        x = x * 1.0001 + 0.5
    return x


def _long_work_cpu(x, n=30):
    for _ in range(n):
        x = x * 1.0001 + 0.5
    return x


# --- Autoload: plain `import torch` makes torch.device("opencl") usable; AUTOLOAD=0 turns it off.

AUTOLOAD_CHILD = """
    import json, sys
    import torch
    out = {"loaded": "torch_opencl" in sys.modules}
    try:
        x = torch.ones(3, device="opencl") * 2
        out["device"] = str(x.device)
        out["sum"] = float(x.sum().cpu())
        out["module_file"] = sys.modules["torch_opencl"].__file__
        out["has_torch_opencl"] = hasattr(torch, "opencl")
    except Exception as exc:
        out["error"] = type(exc).__name__ + ": " + str(exc)
    print("RESULT " + json.dumps(out))
"""


@pytest.mark.skipif(accelerator_build() is not None,
                    reason="a CUDA or ROCm build of torch does not autoload (test_kernel_class_and_builds.py)")
def test_autoload_on_and_off():
    on = _start(AUTOLOAD_CHILD)
    off = _start(AUTOLOAD_CHILD, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    res_on, _, err = _finish(on)
    res_off, _, _ = _finish(off)
    assert res_on["loaded"], err
    assert res_on["device"] == "opencl:0" and res_on["sum"] == 6.0
    assert res_on["has_torch_opencl"]
    assert "site-packages" in res_on["module_file"], res_on["module_file"]  # the installed package
    assert not res_off["loaded"]
    assert "opencl" in res_off["error"] and "device" not in res_off


# --- torch.accelerator


def test_accelerator_is_opencl():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("opencl")
    assert torch.accelerator.device_count() == torch.opencl.device_count() >= 1
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0 == torch.opencl.current_device()
    with pytest.raises(RuntimeError, match="opencl"):
        torch.accelerator.set_device_index(torch.opencl.device_count())
    torch.accelerator.synchronize()


def test_accelerator_streams():
    default = torch.accelerator.current_stream()
    assert default.device == torch.device("opencl", 0) and default.stream_id == 0
    s = torch.Stream(device="opencl")
    assert s.stream_id != 0
    torch.accelerator.set_stream(s)
    try:
        assert torch.accelerator.current_stream() == s
        assert torch.opencl.current_stream() == s
        y = _long_work(torch.ones(1000, device=DEV), 3)  # runs on s
    finally:
        torch.accelerator.set_stream(default)
    assert torch.opencl.current_stream().stream_id == 0
    s.synchronize()
    assert torch.allclose(y.cpu(), _long_work_cpu(torch.ones(1000), 3))


def test_accelerator_memory_functions():
    gc.collect()  # tensors of earlier tests held in reference cycles (raised exceptions' frames) go now
    torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    before = torch.accelerator.memory_allocated()
    assert before == torch.opencl.memory_allocated()
    x = torch.empty(1 << 20, dtype=torch.uint8, device=DEV)
    assert torch.accelerator.memory_allocated() >= before + (1 << 20)
    assert torch.accelerator.max_memory_allocated() >= before + (1 << 20)
    assert torch.accelerator.memory_reserved() >= torch.accelerator.memory_allocated()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.accelerator.memory_allocated()
    del x
    assert torch.accelerator.memory_allocated() == before
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == before


# --- torch.Stream / torch.Event on opencl (the DeviceGuardImplInterface)


def test_generic_stream_and_event_methods():
    s1 = torch.Stream(device="opencl")
    s2 = torch.Stream(device="opencl:0")
    assert s1.device == torch.device("opencl", 0) and s1 != s2
    start = torch.Event(device="opencl", enable_timing=True)
    end = torch.Event(device="opencl", enable_timing=True)
    assert start.query()  # not recorded yet: counts as done
    x = torch.ones(1 << 20, device=DEV)
    # x is filled on the default stream: s1 must wait for it before reading it (as on CUDA).
    s1.wait_stream(torch.accelerator.current_stream())
    with s1:  # torch.Stream is a context manager that sets the current stream
        assert torch.accelerator.current_stream() == s1
        start.record(s1)
        y = _long_work(x)
        end.record(s1)
    assert torch.accelerator.current_stream().stream_id == 0
    end.wait(s2)
    s2.wait_event(end)
    with s2:
        z = y + 1
    end.synchronize()
    assert end.query() and start.query()
    ms = start.elapsed_time(end)
    assert ms > 0
    s2.synchronize()
    assert s1.query() and s2.query()
    assert torch.allclose(z.cpu(), _long_work_cpu(torch.ones(1 << 20)) + 1)
    torch.accelerator.synchronize()


def test_generic_event_elapsed_time_needs_recorded_events():
    a = torch.Event(device="opencl", enable_timing=True)
    b = torch.Event(device="opencl", enable_timing=True)
    with pytest.raises((RuntimeError, ValueError), match="recorded"):
        a.elapsed_time(b)
    c, d = torch.opencl.Event(enable_timing=True), torch.opencl.Event(enable_timing=True)
    c.record()
    with pytest.raises((RuntimeError, ValueError), match="recorded"):
        c.elapsed_time(d)


# --- torch.opencl.Stream / Event / stream()


def test_opencl_stream_api_shapes():
    s = torch.opencl.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device("opencl", 0) and s.stream_id != 0
    assert torch.opencl.Stream(device="opencl:0").stream_id != 0
    assert torch.opencl.default_stream().stream_id == 0
    assert torch.opencl.current_stream() == torch.opencl.default_stream()
    assert isinstance(torch.opencl.current_stream(), torch.opencl.Stream)
    assert s == torch.opencl.Stream(stream_id=s.stream_id, device_index=0, device_type=s.device_type)
    assert len({s, torch.opencl.Stream(stream_id=s.stream_id, device_index=0, device_type=s.device_type)}) == 1
    assert "torch.opencl.Stream" in repr(s)
    e = torch.opencl.Event(enable_timing=True)
    assert isinstance(e, torch.Event)
    with pytest.raises(RuntimeError, match="Interprocess"):
        torch.opencl.Event(interprocess=True)
    with pytest.raises(ValueError):
        torch.opencl.Stream(device="cpu")


def test_stream_context_sets_and_restores_even_on_error():
    s = torch.opencl.Stream()
    with torch.opencl.stream(s) as entered:
        assert entered == s
        assert torch.opencl.current_stream() == s
        assert torch.accelerator.current_stream() == s  # what the C++ kernels read
        assert torch_opencl._C._current_stream_id(0) == s.stream_id
    assert torch.opencl.current_stream().stream_id == 0
    with pytest.raises(KeyError):
        with torch.opencl.stream(s):
            raise KeyError("boom")
    assert torch.opencl.current_stream().stream_id == 0
    with torch.opencl.stream(None):  # a no-op, as for cuda
        assert torch.opencl.current_stream().stream_id == 0
    torch.opencl.set_stream(s)
    assert torch.opencl.current_stream() == s
    torch.opencl.set_stream(torch.opencl.default_stream())
    assert torch.opencl.current_stream().stream_id == 0


def test_ops_run_on_the_current_stream():
    # s1 is held (a barrier on a user event): work that went to s1 cannot finish before the release,
    # while the default stream stays free. Whatever the device's speed, s1 is busy until released.
    torch.opencl.synchronize()
    s1 = torch.opencl.Stream()
    x = torch.ones(1 << 21, device=DEV)
    torch.opencl.synchronize()
    hold = torch_opencl._C._hold_stream(s1.device_index, s1.stream_id)
    try:
        with torch.opencl.stream(s1):
            y = _long_work(x, 60)
        torch.opencl.default_stream().synchronize()
        busy = not s1.query()
    finally:
        torch_opencl._C._release_stream_hold(hold)
    s1.synchronize()
    assert s1.query()
    assert busy, "the work was not enqueued on the current stream"
    assert torch.allclose(y.cpu(), _long_work_cpu(torch.ones(1 << 21), 60))


def test_two_streams_ordered_by_an_event():
    n = 1 << 21
    s1, s2 = torch.opencl.Stream(), torch.opencl.Stream()
    x = torch.ones(n, device=DEV)
    s1.wait_stream(torch.opencl.current_stream())
    with torch.opencl.stream(s1):
        y = _long_work(x, 40)
        done = s1.record_event()
    assert isinstance(done, torch.opencl.Event)
    s2.wait_event(done)
    with torch.opencl.stream(s2):
        z = y * 2
        w = torch.empty_like(z)
        w.copy_(z)
    torch.opencl.current_stream().wait_stream(s2)
    expected = _long_work_cpu(torch.ones(n), 40) * 2
    assert torch.allclose(w.cpu(), expected)


def test_opencl_event_methods():
    s = torch.opencl.Stream()
    start, end = torch.opencl.Event(enable_timing=True), torch.opencl.Event(enable_timing=True)
    with torch.opencl.stream(s):
        start.record()  # the current stream: s
        y = _long_work(torch.ones(1 << 20, device=DEV))
        end.record()
    other = torch.opencl.Stream()
    end.wait(other)
    with torch.opencl.stream(other):
        z = y + 1
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) > 0
    assert end.elapsed_time(start) <= 0
    other.synchronize()
    assert torch.allclose(z.cpu(), _long_work_cpu(torch.ones(1 << 20)) + 1)
    # The generic and the opencl classes time each other.
    g = torch.Event(device="opencl", enable_timing=True)
    g.record(s)
    g.synchronize()
    assert start.elapsed_time(g) >= start.elapsed_time(end)


def test_record_stream_keeps_the_block_until_the_stream_is_done():
    n = 3 << 20  # 12 MiB: a segment of its own, which the allocator reuses at once when free
    side = torch.opencl.Stream()

    def use_on_side_stream(record):
        torch.opencl.synchronize()
        torch.opencl.empty_cache()  # no other cached block of this size to pick instead
        x = torch.full((n,), 3.0, device=DEV)
        side.wait_stream(torch.opencl.current_stream())
        # The side stream is held (its work waits on a user event) until the reuse was tried, so a fast
        # device cannot finish the work first and free the block legitimately.
        hold = torch_opencl._C._hold_stream(side.device_index, side.stream_id)
        try:
            with torch.opencl.stream(side):
                y = _long_work(x, 40)
            if record:
                x.record_stream(side)
            ptr = x.data_ptr()
            del x
            reuse = torch.empty(n, device=DEV)  # same size, current (default) stream
            reuse.fill_(-1.0)
            reused = reuse.data_ptr() == ptr
        finally:
            torch_opencl._C._release_stream_hold(hold)
        torch.opencl.current_stream().wait_stream(side)
        return y, reused

    torch.opencl.synchronize()
    y, reused = use_on_side_stream(record=False)
    assert reused  # the control: without record_stream the block is reused at once
    torch.opencl.synchronize()
    y, reused = use_on_side_stream(record=True)
    assert not reused
    assert torch.allclose(y.cpu(), _long_work_cpu(torch.full((n,), 3.0), 40))
    torch.opencl.synchronize()


# --- RNG state


def test_manual_seed_and_rng_state_roundtrip():
    torch.opencl.manual_seed(1234)
    assert torch.opencl.initial_seed() == 1234
    a = torch.rand(100, device=DEV).cpu()
    torch.opencl.manual_seed(1234)
    assert torch.equal(torch.rand(100, device=DEV).cpu(), a)
    state = torch.opencl.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    b = torch.rand(100, device=DEV).cpu()
    c = torch.rand(100, device=DEV).cpu()
    assert not torch.equal(b, c)
    torch.opencl.set_rng_state(state)
    assert torch.equal(torch.rand(100, device=DEV).cpu(), b)
    torch.opencl.manual_seed(99)
    assert not torch.equal(torch.rand(100, device=DEV).cpu(), a)
    torch.opencl.manual_seed_all(1234)
    assert torch.equal(torch.rand(100, device=DEV).cpu(), a)
    torch.manual_seed(1234)  # seeds every backend, opencl included
    assert torch.equal(torch.rand(100, device=DEV).cpu(), a)
    torch.opencl.seed()
    assert torch.opencl.initial_seed() != 1234


def test_rng_state_all():
    states = torch.opencl.get_rng_state_all()
    assert len(states) == torch.opencl.device_count()
    a = torch.rand(50, device=DEV).cpu()
    torch.opencl.set_rng_state_all(states)
    assert torch.equal(torch.rand(50, device=DEV).cpu(), a)
    with pytest.raises(ValueError):
        torch.opencl.set_rng_state_all(states * (torch.opencl.device_count() + 1))


def test_generator_state_roundtrip():
    g = torch.Generator("opencl")
    assert g.device == torch.device("opencl", 0)
    g.manual_seed(7)
    assert g.initial_seed() == 7
    state = g.get_state()
    a = torch.rand(64, device=DEV, generator=g).cpu()
    b = torch.rand(64, device=DEV, generator=g).cpu()
    assert not torch.equal(a, b)
    g.set_state(state)
    assert torch.equal(torch.rand(64, device=DEV, generator=g).cpu(), a)
    g2 = torch.Generator("opencl")
    g2.set_state(state)
    assert torch.equal(torch.rand(64, device=DEV, generator=g2).cpu(), a)
    # A private generator leaves the default one alone.
    torch.opencl.manual_seed(5)
    ref = torch.rand(8, device=DEV).cpu()
    torch.opencl.manual_seed(5)
    torch.rand(8, device=DEV, generator=g)
    assert torch.equal(torch.rand(8, device=DEV).cpu(), ref)


def test_fork_rng_restores_the_opencl_state():
    torch.opencl.manual_seed(3)
    expected = torch.rand(20, device=DEV).cpu()
    torch.opencl.manual_seed(3)
    with torch.random.fork_rng(device_type="opencl"):
        torch.rand(20, device=DEV)
        torch.opencl.manual_seed(11)
        torch.rand(20, device=DEV)
    assert torch.equal(torch.rand(20, device=DEV).cpu(), expected)


# --- torch.save / torch.load


def _trained_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(5, 4, device=DEV)).pow(2).mean().backward()
        opt.step()
    tensor = torch.arange(12.0, device=DEV).view(3, 4)[:, 1:]  # a view of a larger storage
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "t": tensor}, buf)
    return buf, model, opt, tensor


@pytest.mark.parametrize("where", ["none", "cpu", "opencl", "opencl:0", "device", "function", "dict"])
def test_save_load_map_location(where):
    buf, model, opt, tensor = _trained_checkpoint()
    map_location = {
        "none": None,
        "cpu": "cpu",
        "opencl": "opencl",
        "opencl:0": "opencl:0",
        "device": torch.device("opencl", 0),
        "function": lambda storage, loc: storage,  # keep on the CPU, as the docs' example does
        "dict": {"opencl:0": "cpu"},
    }[where]
    expect = "cpu" if where in ("cpu", "function", "dict") else "opencl"
    buf.seek(0)
    ck = torch.load(buf, map_location=map_location)
    assert ck["t"].device.type == expect
    assert torch.equal(ck["t"].cpu(), tensor.cpu()) and ck["t"].shape == (3, 3)
    for k, v in model.state_dict().items():
        assert ck["model"][k].device.type == expect
        assert torch.equal(ck["model"][k].cpu(), v.cpu())
    for idx, st in opt.state_dict()["state"].items():
        for name in ("exp_avg", "exp_avg_sq"):
            assert ck["opt"]["state"][idx][name].device.type == expect
            assert torch.equal(ck["opt"]["state"][idx][name].cpu(), st[name].cpu())
    # The checkpoint restores a fresh model and optimizer on the device, and training continues.
    fresh = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(DEV)
    fresh.load_state_dict(ck["model"])
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.01)
    fresh_opt.load_state_dict(ck["opt"])
    assert fresh_opt.state_dict()["state"][0]["exp_avg"].device.type == "opencl"
    x = torch.randn(3, 4)
    assert torch.allclose(fresh(x.to(DEV)).cpu(), model(x.to(DEV)).cpu())
    fresh(x.to(DEV)).sum().backward()
    fresh_opt.step()


def test_save_load_file_and_cpu_to_opencl(tmp_path):
    path = tmp_path / "t.pt"
    torch.save(torch.arange(5, device=DEV), path)
    assert torch.load(path).device == torch.device("opencl", 0)
    torch.save(torch.arange(5), path)
    assert torch.load(path, map_location="opencl").device == torch.device("opencl", 0)


LOAD_WITHOUT_BACKEND = """
    import json, torch
    out = {}
    try:
        torch.load(PATH)
        out["error"] = None
    except Exception as exc:
        out["error"] = type(exc).__name__ + ": " + str(exc)
    t = torch.load(PATH, map_location="cpu")
    out["cpu"] = t.tolist()
    print("RESULT " + json.dumps(out))
"""


def test_loading_an_opencl_checkpoint_without_the_backend(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save(torch.arange(4, device=DEV), path)
    res, _, err = _finish(_start(LOAD_WITHOUT_BACKEND.replace("PATH", repr(str(path))),
                                 TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert res["error"] is not None and "opencl" in res["error"], res
    assert res["cpu"] == [0, 1, 2, 3]


# --- Fork safety

FORK_CHILD = """
    import json, os, torch, torch_opencl
    initialized_at_import = torch.opencl.is_initialized()
    TOUCH
    initialized = torch.opencl.is_initialized()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = {"bad_fork": torch.opencl._is_in_bad_fork()}
        try:
            out["value"] = float((torch.ones(3, device="opencl") + 1).sum().cpu())
        except RuntimeError as exc:
            out["error"] = str(exc)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    child = json.loads(os.read(r, 65536).decode())
    os.waitpid(pid, 0)
    parent = {"bad_fork": torch.opencl._is_in_bad_fork(), "value": float((torch.ones(3, device="opencl") * 2).sum().cpu())}
    print("RESULT " + json.dumps({"child": child, "parent": parent, "initialized_at_import": initialized_at_import,
                                  "initialized": initialized}))
"""


def test_fork_after_first_use_gives_cudas_error():
    used = _start(FORK_CHILD.replace("TOUCH", 'torch.ones(1, device="opencl").cpu()'))
    unused = _start(FORK_CHILD.replace("TOUCH", "pass"))
    res, _, err = _finish(used, timeout=90)
    assert res["initialized_at_import"] is False and res["initialized"] is True
    child = res["child"]
    assert child["bad_fork"] is True
    assert "Cannot re-initialize OpenCL in forked subprocess" in child["error"], child
    assert "'spawn' start method" in child["error"]
    assert res["parent"] == {"bad_fork": False, "value": 6.0}
    # Importing torch (and torch_opencl) touches no device: a fork before first use works.
    res, _, err = _finish(unused, timeout=90)
    assert res["initialized_at_import"] is False and res["initialized"] is False
    assert res["child"] == {"bad_fork": False, "value": 6.0}, err[-2000:]
    assert res["parent"] == {"bad_fork": False, "value": 6.0}


# A block given to record_stream and freed in a forked child: free() must record an event, which the
# fork check refuses. The deleter never throws (an exception there aborted the child): the failure
# is kept and raised by the child's next allocation; at the child's exit nothing is raised at all.
FREE_IN_FORK_CHILD = """
    import json, os, sys, torch, torch_opencl  # explicit: CUDA builds of torch do not autoload it
    x = torch.ones(1000, device="opencl")
    x.record_stream(torch.opencl.Stream())
    torch.opencl.synchronize()
    statuses = {}
    for how in ("del", "exit"):
        pid = os.fork()
        if pid == 0:
            if how == "exit":
                sys.exit(0)  # x is freed while the interpreter shuts down
            del x
            try:
                torch.empty(10, device="opencl")
                os._exit(3)
            except RuntimeError as e:
                os._exit(0 if "An earlier release of OpenCL device memory failed" in str(e) else 4)
        statuses[how] = os.waitpid(pid, 0)[1]
    print("RESULT " + json.dumps({"statuses": statuses, "parent": float((x * 2).sum().cpu())}))
"""


def test_freeing_a_recorded_block_in_a_forked_child_does_not_abort():
    res, _, err = _finish(_start(FREE_IN_FORK_CHILD), timeout=90)
    assert res["statuses"] == {"del": 0, "exit": 0}, (res, err[-2000:])  # 6 << 8 or 134 was SIGABRT
    assert res["parent"] == 2000.0
