"""Timing shared by the benchmarks: a median over repetitions after untimed warm-up calls."""
import statistics
import time

import torch


def median_seconds(run, reps):
    """Median wall time of run() over reps calls; the first, untimed call compiles the kernels.

    run() must wait for the device itself (torch.opencl.synchronize()) so the time covers the work.
    """
    run()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def synchronize(device):
    """Waits for the opencl device's queued work; CPU work is already done."""
    if str(device).startswith("opencl"):
        torch.opencl.synchronize()


def median_device_seconds(fn, device, repeats, warmup=1):
    """Median wall time of fn() plus the wait for the device's work, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    samples = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)
