"""Do non_blocking copies from pinned memory overlap compute?

Runs N steps of (copy a batch host->device, compute on the previous batch) two ways:
  pageable: the batch is ordinary host memory and the copy blocks (.to(dev));
  pinned:   the batch is pinned and the copy is non_blocking on a side stream,
            the compute stream waits for it with an event (the usual prefetch pattern).
Prints the median time per step of each and the ratio. On a CPU OpenCL device
(PoCL) copy and compute share the same cores, so little overlap is expected there;
on a discrete GPU the pinned path should approach max(copy, compute).

  python bench/bench_pinned_copy.py [--mb 32] [--steps 10] [--repeats 5]
"""
import argparse
import statistics
import time

import torch

import torch_opencl  # noqa: F401


def compute(x, iters):
    for _ in range(iters):
        x = x * 1.0001 + 0.5
    return x


def run_pageable(batches, dev, iters):
    prev = None
    for b in batches:
        cur = b.to(dev)  # blocking copy
        if prev is not None:
            compute(prev, iters)
        prev = cur
    compute(prev, iters)
    torch.opencl.synchronize()


def run_pinned(batches, dev, iters, copy_stream):
    main = torch.opencl.current_stream()
    prev = None
    for b in batches:
        with torch.opencl.stream(copy_stream):
            copy_stream.wait_stream(main)
            cur = b.to(dev, non_blocking=True)
            ready = copy_stream.record_event()
        if prev is not None:
            compute(prev, iters)
        main.wait_event(ready)
        cur.record_stream(main)
        prev = cur
    compute(prev, iters)
    torch.opencl.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=32, help="batch size in MiB")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--iters", type=int, default=1, help="elementwise ops per step")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    dev = torch.device("opencl")
    n = args.mb * (1 << 20) // 4
    pageable = [torch.randn(n) for _ in range(args.steps)]
    pinned = [b.pin_memory() for b in pageable]
    copy_stream = torch.opencl.Stream()

    # Warm up (program builds, allocator segments).
    run_pageable(pageable[:2], dev, args.iters)
    run_pinned(pinned[:2], dev, args.iters, copy_stream)

    def timed(fn):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) / args.steps)
        return statistics.median(times)

    t_copy = timed(lambda: [b.to(dev) for b in pageable] and torch.opencl.synchronize())
    t_pinned_copy = timed(lambda: [b.to(dev, non_blocking=True) for b in pinned] and torch.opencl.synchronize())
    t_page = timed(lambda: run_pageable(pageable, dev, args.iters))
    t_pin = timed(lambda: run_pinned(pinned, dev, args.iters, copy_stream))
    name = torch.opencl.get_device_name()
    print(f"device: {name}; batch {args.mb} MiB, {args.steps} steps, {args.iters} ops/step, median of {args.repeats}")
    print(f"copy only, pageable blocking:       {t_copy * 1e3:8.2f} ms/step")
    print(f"copy only, pinned non_blocking:     {t_pinned_copy * 1e3:8.2f} ms/step")
    print(f"copy+compute, pageable blocking:    {t_page * 1e3:8.2f} ms/step")
    print(f"copy+compute, pinned non_blocking:  {t_pin * 1e3:8.2f} ms/step")
    print(f"ratio pageable/pinned (copy+compute): {t_page / t_pin:.2f}x")


if __name__ == "__main__":
    main()
