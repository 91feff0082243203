"""Searching, counting, unique and order statistics (searchsorted, bucketize, isin, bincount, histc,
repeat_interleave, unique, unique_consecutive, kthvalue, median, mode), opencl against CPU in one process: the
median of each, their ratio, worst first. 1M elements unless named otherwise.

    .venv/bin/python bench/bench_search_stats.py [--repeats 15] [--only unique,median]
"""
import argparse
import os
import sys

import torch

import torch_opencl  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402


def operands(device):
    g = torch.Generator().manual_seed(0)
    ops = {
        "x": torch.randn(1 << 20, generator=g),
        "rows": torch.randn(1024, 1024, generator=g),
        "small_ints": torch.randint(0, 1000, (1 << 20,), generator=g),
        "tests": torch.randint(0, 100000, (4096,), generator=g),
        "edges": torch.randn(4096, generator=g).sort().values,
        "batched_edges": torch.randn(1024, 64, generator=g).sort(-1).values,
        "repeats": torch.randint(0, 8, (1 << 17,), generator=g),
        "w": torch.rand(1 << 20, generator=g),
    }
    ops["runs"] = ops["small_ints"].sort().values
    return {k: v.to(device) for k, v in ops.items()}


OPS = {
    "searchsorted 1M in 4096": lambda d: torch.searchsorted(d["edges"], d["x"]),
    "searchsorted batched 1024x1024 in 1024x64": lambda d: torch.searchsorted(d["batched_edges"], d["rows"]),
    "bucketize": lambda d: torch.bucketize(d["x"], d["edges"], right=True),
    "isin 1M in 4096": lambda d: torch.isin(d["small_ints"], d["tests"]),
    "bincount": lambda d: torch.bincount(d["small_ints"]),
    "bincount weighted": lambda d: torch.bincount(d["small_ints"], d["w"]),
    "histc 100 bins": lambda d: torch.histc(d["x"], 100, -3, 3),
    "repeat_interleave 128K repeats": lambda d: torch.repeat_interleave(d["repeats"]),
    "unique": lambda d: torch.unique(d["small_ints"]),
    "unique inverse+counts": lambda d: torch.unique(d["small_ints"], return_inverse=True, return_counts=True),
    "unique_consecutive": lambda d: torch.unique_consecutive(d["runs"], return_counts=True),
    "kthvalue dim 1": lambda d: torch.kthvalue(d["rows"], 100, 1),
    "median dim 1": lambda d: torch.median(d["rows"], 1),
    "median of 1M": lambda d: torch.median(d["x"]),
    "mode dim 1 (ints)": lambda d: torch.mode(d["small_ints"].view(1024, 1024), 1),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated parts of names (default: all)")
    args = parser.parse_args()
    torch.opencl.set_fallback_mode("silent")
    names = [n for n in OPS if not args.only or any(p in n for p in args.only.split(","))]
    data = {dev: operands(dev) for dev in ("cpu", "opencl")}
    rows = []
    for name in names:
        fn = OPS[name]
        t = {dev: median_device_seconds(lambda: fn(data[dev]), dev, args.repeats, warmup=2) * 1e6
             for dev in ("cpu", "opencl")}
        rows.append((t["opencl"] / t["cpu"], name, t["cpu"], t["opencl"]))
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | medians of {args.repeats}, us")
    print(f"{'operator':<44}{'cpu':>10}{'opencl':>10}{'opencl/cpu':>12}")
    for ratio, name, cpu, ocl in sorted(rows, reverse=True):
        print(f"{name:<44}{cpu:>10.0f}{ocl:>10.0f}{ratio:>11.1f}x")
    print("operators on the CPU fallback:", ", ".join(sorted(torch.opencl.fallback_stats())) or "none")


if __name__ == "__main__":
    main()
