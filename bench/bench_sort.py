"""sort, topk, flip and repeat: opencl against CPU PyTorch in one run. Medians of --reps;
ratio = cpu time / opencl time (>1: opencl faster).

    python bench/bench_sort.py [--reps 5]
"""
import argparse

import torch

import torch_opencl  # noqa: F401

from _timing import median_seconds

CASES = [
    # name, shape, op
    ("sort 10000x16", (10000, 16), lambda x: torch.sort(x, dim=1)),
    ("sort 1000x100", (1000, 100), lambda x: torch.sort(x, dim=1)),
    ("sort 64x4096", (64, 4096), lambda x: torch.sort(x, dim=1, descending=True)),
    ("sort 4x65536", (4, 65536), lambda x: torch.sort(x, dim=1)),
    ("sort 1x1M", (1, 1 << 20), lambda x: torch.sort(x, dim=1)),
    ("sort dim0 512x512", (512, 512), lambda x: torch.sort(x, dim=0, stable=True)),
    ("topk 1000x1000 k=10", (1000, 1000), lambda x: torch.topk(x, 10, dim=1)),
    ("flip 1024x1024", (1024, 1024), lambda x: torch.flip(x, [0, 1])),
    ("repeat 256x256 x(4,4)", (256, 256), lambda x: x.repeat(4, 4)),
]


def median_time(device, shape, op, reps):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(device)

    def run():
        op(x)
        if device != "cpu":
            torch.opencl.synchronize()

    return median_seconds(run, reps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    torch.opencl.set_fallback_mode("silent")
    print(f"float32, median of {args.reps} (ms); {torch.get_num_threads()} CPU threads")
    print(f"{'case':<24} {'cpu':>9} {'opencl':>9} {'cpu/opencl':>11}")
    for name, shape, op in CASES:
        cpu = median_time("cpu", shape, op, args.reps)
        ocl = median_time("opencl", shape, op, args.reps)
        print(f"{name:<24} {cpu * 1e3:>9.2f} {ocl * 1e3:>9.2f} {cpu / ocl:>11.2f}")
    stats = torch.opencl.fallback_stats()
    print("fallbacks during the run:", stats or "none")


if __name__ == "__main__":
    main()
