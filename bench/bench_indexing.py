"""Indexing and assembly: gather, scatter_add (many collisions), x[idx], index_put_ with
accumulate, x[mask], nonzero, masked_select: opencl against CPU PyTorch in one run.
Medians of --reps; ratio = cpu time / opencl time (>1: opencl faster).

    python bench/bench_indexing.py [--reps 5] [--n 1000000]
"""
import argparse

import torch

import torch_opencl  # noqa: F401

from _timing import median_seconds


def workloads(n):
    rows = n // 64
    g = torch.Generator().manual_seed(0)
    x = torch.randn(rows, 64, generator=g)
    flat = torch.randn(n, generator=g)
    gidx = torch.randint(0, rows, (rows, 64), generator=g)
    bins = torch.randint(0, 1000, (n,), generator=g)
    ridx = torch.randint(0, rows, (rows // 2,), generator=g)
    mask = flat > 0.5
    return [
        ("gather dim 0", lambda d: torch.gather(d[x], 0, d[gidx])),
        ("scatter_add 1000 bins", lambda d: torch.zeros(1000, device=d["dev"]).scatter_add_(0, d[bins], d[flat])),
        ("x[idx] rows", lambda d: d[x][d[ridx]]),
        ("index_put_ acc rows", lambda d: torch.zeros_like(d[x]).index_put_((d[ridx],), d[x][: rows // 2], accumulate=True)),
        ("x[mask]", lambda d: d[flat][d[mask]]),
        ("nonzero", lambda d: torch.nonzero(d[mask])),
        ("masked_select", lambda d: torch.masked_select(d[flat], d[mask])),
    ], [x, flat, gidx, bins, ridx, mask]


class On(dict):
    """Maps each CPU input to its copy on one device (d[t]); d["dev"] is the device."""

    def __init__(self, device, tensors):
        super().__init__({id(t): t.to(device) for t in tensors})
        self.device = device

    def __getitem__(self, t):
        return self.device if isinstance(t, str) else super().__getitem__(id(t))


def median_time(fn, on, reps):
    def run():
        fn(on)
        if on.device != "cpu":
            torch.opencl.synchronize()

    return median_seconds(run, reps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--n", type=int, default=1_000_000)
    args = p.parse_args()
    torch.opencl.reset_fallback_stats()
    loads, inputs = workloads(args.n)
    cpu, dev = On("cpu", inputs), On("opencl", inputs)
    print(f"indexing, float32, n={args.n}, median of {args.reps} (ms); {torch.get_num_threads()} CPU threads")
    print(f"{'workload':<22} {'cpu':>9} {'opencl':>9} {'cpu/opencl':>11}")
    for name, fn in loads:
        c = median_time(fn, cpu, args.reps)
        o = median_time(fn, dev, args.reps)
        print(f"{name:<22} {c * 1e3:>9.2f} {o * 1e3:>9.2f} {c / o:>11.2f}")
    print("fallbacks during the run:", torch.opencl.fallback_stats() or "none")


if __name__ == "__main__":
    main()
