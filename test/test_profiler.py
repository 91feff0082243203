"""Profiler: per-operator opencl device time from OpenCL profiling events (the
PrivateUse1 ProfilerStubs), and torch.profiler.profile with the PrivateUse1 activity."""
import json
import time

import pytest
import torch
from torch.profiler import ProfilerActivity

import torch_opencl  # noqa: F401

DEV = torch.device("opencl")


def _work(x):
    for _ in range(5):
        x = x * 1.0001 + 0.5
    return x


def test_legacy_profiler_reports_device_time_per_operator(tmp_path):
    x = torch.ones(1 << 20, device=DEV)
    _work(x)  # build the programs outside the profile
    torch.opencl.synchronize()
    t0 = time.perf_counter()
    with torch.autograd.profiler.profile(use_device="opencl", use_kineto=False) as prof:
        y = _work(x)
        torch.opencl.synchronize()
    wall_us = (time.perf_counter() - t0) * 1e6
    events = [e for e in prof.function_events if e.name in ("aten::mul", "aten::add")]
    assert len(events) == 10
    device_us = [e.self_device_time_total for e in events]
    assert all(t > 0 for t in device_us), device_us
    # Device time is the kernels' time, bounded by the wall time of the whole region.
    assert sum(device_us) <= wall_us
    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=5)
    assert "OPENCL" in table.upper()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert "aten::mul" in names
    assert torch.allclose(y.cpu(), _work(torch.ones(1 << 20)))


def test_profiler_with_privateuse1_activity_records_the_operators(tmp_path):
    x = torch.ones(1000, device=DEV)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        y = _work(x)
        torch.opencl.synchronize()
    names = {e.name for e in prof.events()}
    assert {"aten::mul", "aten::add"} <= names
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    assert "aten::mul" in {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert torch.allclose(y.cpu(), _work(torch.ones(1000)))


# --- Kineto: the device's own activities (aten/kineto_profiler.cpp) -------------------------------

# Built only against a torch with the PrivateUse1 profiler registry (2.12 and later; not 2.11).
needs_kineto_plugin = pytest.mark.skipif(not torch_opencl._C._has_kineto_plugin(),
                                         reason="built against a torch without the PrivateUse1 profiler registry")

def _kineto_profile(fn, activities=(ProfilerActivity.CPU, ProfilerActivity.PrivateUse1), **kwargs):
    with torch.profiler.profile(activities=list(activities), **kwargs) as prof:
        out = fn()
        torch.opencl.synchronize()
    return prof, out


def _trace_events(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())["traceEvents"]


def _workload():
    x = torch.linspace(-1, 1, 1 << 16, device=DEV)
    y = _work(x)
    a = torch.randn(64, 48, device=DEV)
    b = torch.randn(48, 32, device=DEV)
    c = a @ b  # our GEMM kernel on CPU devices, CLBlast's elsewhere
    return y.cpu(), (a.cpu(), b.cpu(), c.cpu())


@needs_kineto_plugin
def test_kineto_trace_has_device_kernels_linked_to_their_operators(tmp_path):
    _workload()  # build the programs outside the profile
    prof, (y, (a, b, c)) = _kineto_profile(_workload)
    assert torch.allclose(y, _work(torch.linspace(-1, 1, 1 << 16)))
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    events = _trace_events(prof, tmp_path)
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    # 5 mul + 5 add, the GEMM, and linspace/randn's kernels at least.
    assert len(kernels) >= 11, [k["name"] for k in kernels]
    assert any(ops[k["args"]["External id"]]["name"] == "aten::mm" for k in kernels)
    assert len([k for k in kernels if ops[k["args"]["External id"]]["name"] in ("aten::mul", "aten::add")]) == 10
    assert "Memcpy DtoH" in {c["name"] for c in copies}
    for k in kernels + copies:
        assert k["name"] and k["dur"] > 0, k
        op = ops[k["args"]["External id"]]  # each is linked to the CPU operator that enqueued it
        # Device work cannot start before its operator began (the clocks agree within a few us).
        assert k["ts"] + k["dur"] >= op["ts"] - 100, (k, op)
    # A flow arrow from each enqueue call (PRIVATEUSE1_RUNTIME) to its device activity.
    starts = {e["id"] for e in events if e.get("cat") == "ac2g" and e.get("ph") == "s"}
    finishes = {e["id"] for e in events if e.get("cat") == "ac2g" and e.get("ph") == "f"}
    assert len(finishes) == len(kernels) + len(copies) and finishes == starts
    assert any(e.get("cat") == "privateuse1_runtime" and e["name"] == "clEnqueueNDRangeKernel" for e in events)


@needs_kineto_plugin
def test_kineto_trace_shows_a_clblast_routine_as_one_kernel(tmp_path):
    from torch_opencl import _C
    old = _C._small_gemm_limit(0)  # CLBlast for every size
    try:
        _workload()
        prof, _ = _kineto_profile(_workload)
    finally:
        _C._small_gemm_limit(old)
    kernels = [e for e in _trace_events(prof, tmp_path) if e.get("cat") == "kernel"]
    assert any(k["name"].startswith("clblast::") for k in kernels), [k["name"] for k in kernels]


@needs_kineto_plugin
def test_kineto_key_averages_report_device_time_of_opencl_operators():
    _workload()
    prof, _ = _kineto_profile(_workload)
    averages = {e.key: e for e in prof.key_averages()}
    for name in ("aten::mul", "aten::add", "aten::mm"):
        assert averages[name].device_time_total > 0, name
        assert averages[name].self_device_time_total > 0, name
    assert averages["aten::mul"].count == 5
    kernel_rows = [e for e in averages.values() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert kernel_rows and all(e.device_time_total > 0 for e in kernel_rows)
    # An operator's device time is its kernels' time: all of it appears on the operators' rows.
    total_kernels = sum(e.self_device_time_total for e in kernel_rows)
    total_ops = sum(e.self_device_time_total for e in averages.values() if e.key.startswith("aten::"))
    assert abs(total_kernels - total_ops) <= 1e-3 * total_kernels + 1
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=10)
    assert "OPENCL" in table.upper() and "aten::mul" in table


@needs_kineto_plugin
def test_kineto_links_backward_kernels_run_on_the_autograd_device_thread():
    w = torch.randn(16, 8, device=DEV, requires_grad=True)
    x = torch.randn(4, 16, device=DEV)

    def step():
        loss = (x @ w).tanh().sum()
        loss.backward()
        return w.grad.cpu()

    step()
    w.grad = None
    prof, grad = _kineto_profile(step)
    xc, wc = x.cpu(), w.detach().cpu().requires_grad_()
    (xc @ wc).tanh().sum().backward()
    assert torch.allclose(grad, wc.grad, rtol=1e-4, atol=1e-5)
    events = list(prof.events())
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    backward = [e for e in events if e.name == "aten::tanh_backward"]
    assert backward and all(e.device_time_total > 0 for e in backward)
    assert len(kernels) >= 4


@needs_kineto_plugin
def test_kineto_records_only_inside_the_profile(tmp_path):
    x = torch.ones(1000, device=DEV)
    _work(x)
    counts = []
    for _ in range(2):  # a second profile sees its own kernels, none left over from the first
        prof, _ = _kineto_profile(lambda: _work(x))
        _work(x)  # after the profile: not recorded anywhere
        torch.opencl.synchronize()
        counts.append(len([e for e in _trace_events(prof, tmp_path) if e.get("cat") == "kernel"]))
    assert counts == [10, 10]
    # CPU activity alone: operators, no device activities.
    prof, _ = _kineto_profile(lambda: _work(x), activities=[ProfilerActivity.CPU])
    cats = {e.get("cat") for e in _trace_events(prof, tmp_path)}
    assert "cpu_op" in cats and "kernel" not in cats


@needs_kineto_plugin
def test_kineto_schedule_records_the_active_steps_only(tmp_path):
    x = torch.ones(1000, device=DEV)
    _work(x)
    traces = []
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)

    def on_ready(p):
        traces.append([e for e in _trace_events(p, tmp_path) if e.get("cat") == "kernel"])

    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                                schedule=schedule, on_trace_ready=on_ready) as prof:
        for _ in range(5):
            _work(x)
            torch.opencl.synchronize()
            prof.step()
    assert len(traces) == 1 and len(traces[0]) == 2 * 10
