"""Reductions on cpu and opencl in one process: sum of 16M float32 (full, along the inner dim
and along the outer dim of a 4096 x 4096 matrix), mean over the last dim of a [B, T, C]
activation (layer norm's statistics), var over dim 0 of a [N, C] batch (batch norm's), and
amax over the outer / max (values and indices) over the inner dim of the matrix.
Prints median times, effective GB/s (input bytes read once) and the opencl/cpu time ratio.

    .venv/bin/python bench/bench_reduce.py [--repeats N]
"""
import argparse
import statistics
import time

import torch

import torch_opencl  # noqa: F401


def median_seconds(fn, sync, repeats):
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    n = 4096
    square = torch.rand(n, n)
    btc = torch.randn(32, 512, 768)
    batch = torch.randn(65536, 256)
    cases = {
        "sum (all 16M)": (square, lambda x: x.sum()),
        "sum(dim=1) 4096x4096": (square, lambda x: x.sum(1)),
        "sum(dim=0) 4096x4096": (square, lambda x: x.sum(0)),
        "mean(-1) 32x512x768": (btc, lambda x: x.mean(-1)),
        "var(0) 65536x256": (batch, lambda x: x.var(0)),
        "amax(0) 4096x4096": (square, lambda x: x.amax(0)),
        "max(1) 4096x4096": (square, lambda x: x.max(1).values),
    }
    sync_dev = torch.opencl.synchronize
    print(f"torch {torch.__version__}, opencl device: {torch.opencl.get_device_name(0)}, "
          f"cpu threads: {torch.get_num_threads()}")
    print(f"{'case':<24}{'cpu ms':>10}{'cpu GB/s':>10}{'opencl ms':>11}{'ocl GB/s':>10}{'ocl/cpu':>9}")
    for name, (x_cpu, fn) in cases.items():
        x_dev = x_cpu.to("opencl")
        gbytes = x_cpu.numel() * x_cpu.element_size() / 1e9
        c = median_seconds(lambda: fn(x_cpu), lambda: None, args.repeats)
        d = median_seconds(lambda: fn(x_dev), sync_dev, args.repeats)
        got, want = fn(x_dev).cpu(), fn(x_cpu)
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), name
        print(f"{name:<24}{c * 1e3:>10.2f}{gbytes / c:>10.1f}{d * 1e3:>11.2f}{gbytes / d:>10.1f}{d / c:>9.2f}")


if __name__ == "__main__":
    main()
