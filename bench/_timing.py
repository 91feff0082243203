"""Timing shared by the benchmarks: a median over repetitions after one untimed call."""
import time


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
