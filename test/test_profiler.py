"""Profiler: per-operator opencl device time from OpenCL profiling events (the
PrivateUse1 ProfilerStubs), and torch.profiler.profile with the PrivateUse1 activity."""
import json
import time

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
