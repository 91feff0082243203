"""The per-launch host path (kernel lookup by name, stream queues read without a lock, events
requested only for profilers) stays correct while made cheaper: results, launch counts, streams
created from several threads, events and the profiler's kernels.
"""
import threading

import pytest
import torch

import torch_opencl  # noqa: F401
from _device_helpers import native_only

DEV = torch.device("opencl")


@pytest.fixture
def native():
    """The test's operators must all be native (the fallback refuses)."""
    with native_only():
        yield


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_contiguous_and_strided_kernels_of_one_program_interleave(native, dtype):
    # Both kernels come from one program (same dtypes and expression): each lookup by name must
    # return its own kernel, also when calls alternate.
    base = torch.arange(64, dtype=dtype).reshape(8, 8)
    other = (torch.arange(64, dtype=dtype) * 3 - 50).reshape(8, 8)
    a, b = base.to(DEV), other.to(DEV)
    for _ in range(3):
        torch.testing.assert_close((a + b).cpu(), base + other)
        torch.testing.assert_close((a.t() + b).cpu(), base.t() + other)
        torch.testing.assert_close((a[:, ::2] + b[:, 1::2]).cpu(), base[:, ::2] + other[:, 1::2])


def test_one_launch_per_small_add(native):
    a = torch.randn(1024, device=DEV)
    b = torch.randn(1024, device=DEV)
    out = torch.empty(1024, device=DEV)
    torch.add(a, b, out=out)
    a + b
    a.add_(b)
    before = torch_opencl._C._launch_count()
    for _ in range(10):
        torch.add(a, b, out=out)
        a + b
        a.add_(b)
    assert torch_opencl._C._launch_count() - before == 30


def test_streams_first_used_from_many_threads():
    # Pool streams not yet used by this process get their queues created concurrently.
    errors, results = [], {}
    x_cpu = torch.arange(4096, dtype=torch.float32)

    def work(i):
        try:
            stream = torch.opencl.Stream()
            with torch.opencl.stream(stream):
                x = x_cpu.to(DEV)
                y = x
                for _ in range(20):
                    y = y + 1
                stream.synchronize()
                results[i] = y.cpu()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(8):
        torch.testing.assert_close(results[i], x_cpu + 20)


def test_events_record_wait_and_time_small_ops():
    a = torch.randn(1024, device=DEV)
    b = torch.randn(1024, device=DEV)
    start = torch.opencl.Event(enable_timing=True)
    end = torch.opencl.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        a.add_(b)
    end.record()
    side = torch.opencl.Stream()
    side.wait_event(end)
    with torch.opencl.stream(side):
        c = a * 2
    side.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0
    expected = a.cpu() * 2
    torch.testing.assert_close(c.cpu(), expected)


@pytest.mark.skipif(not torch_opencl._C._has_kineto_plugin(),
                    reason="built against a torch without the PrivateUse1 profiler registry")
def test_profiler_still_sees_the_kernels_of_small_ops():
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(1024, device=DEV)
    b = torch.randn(1024, device=DEV)
    a + b
    torch.opencl.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        for _ in range(5):
            a.add_(b)
        torch.opencl.synchronize()
    kernels = [e for e in prof.events() if e.name == "pointwise_contiguous"]
    assert len(kernels) == 5, sorted({e.name for e in prof.events()})
