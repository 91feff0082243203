"""The GEMMs the training benchmark (bench/bench_training.py) issues, timed on cpu and opencl in one process.

    .venv/bin/python bench/bench_gemm_shapes.py [--reps 9] [--only mlp tf cnn]

Each case builds its operands in the layout the training step uses (weights transposed for the
forward pass of nn.Linear, transposed activations for weight gradients, strided views of q/k/v for
attention) and times torch.mm / torch.bmm on cpu, on opencl through CLBlast only (the small-GEMM
kernel switched off) and on opencl as shipped, round-robin. Prints per-case medians (and minima) in
microseconds, GFLOP/s and the ratios to cpu, and per workload the summed medians.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))


def mat(rows, cols, trans, device):
    """A (rows, cols) matrix, stored column-major (a transposed view) when trans."""
    if trans:
        return torch.randn(cols, rows, device=device).t()
    return torch.randn(rows, cols, device=device)


def mm_case(m, n, k, ta=False, tb=False):
    def make(device):
        a, b = mat(m, k, ta, device), mat(k, n, tb, device)
        return lambda: torch.mm(a, b)
    return make, 2 * m * n * k


def attention_case(batch, m, n, k, ta=False, tb=False, heads=4, width=64):
    """bmm over (B, heads) as SDPA's math path issues it: q/k/v are strided head views of one qkv tensor."""
    def make(device):
        def operand(rows, cols, trans):
            # (B, T, 3C) -> one head slice, viewed as (B*heads, T, C/heads) after a transpose(1, 2) + reshape copy
            x = torch.randn(batch, rows, cols, device=device) if not trans else \
                torch.randn(batch, cols, rows, device=device).transpose(1, 2)
            return x
        a, b = operand(m, k, ta), operand(k, n, tb)
        return lambda: torch.bmm(a, b)
    return make, 2 * batch * m * n * k


CASES = {
    "mlp": [
        ("fc1 fwd 128x256x784 NT", *mm_case(128, 256, 784, tb=True)),
        ("fc2 fwd 128x256x256 NT", *mm_case(128, 256, 256, tb=True)),
        ("fc3 fwd 128x10x256 NT", *mm_case(128, 10, 256, tb=True)),
        ("fc2 dx 128x256x256 NN", *mm_case(128, 256, 256)),
        ("fc1 dW 256x784x128 TN", *mm_case(256, 784, 128, ta=True)),
        ("fc2 dW 256x256x128 TN", *mm_case(256, 256, 128, ta=True)),
    ],
    "tf": [
        ("qkv fwd 1024x192x64 NT", *mm_case(1024, 192, 64, tb=True)),
        ("fc1 fwd 1024x256x64 NT", *mm_case(1024, 256, 64, tb=True)),
        ("fc2 fwd 1024x64x256 NT", *mm_case(1024, 64, 256, tb=True)),
        ("proj fwd 1024x64x64 NT", *mm_case(1024, 64, 64, tb=True)),
        ("qkv dx 1024x64x192 NN", *mm_case(1024, 64, 192)),
        ("qkv dW 192x64x1024 TN", *mm_case(192, 64, 1024, ta=True)),
        ("fc2 dW 64x256x1024 TN", *mm_case(64, 256, 1024, ta=True)),
        ("att q@kT 64x[64x64x16] NT", *attention_case(64, 64, 64, 16, tb=True)),
        ("att p@v 64x[64x16x64] NN", *attention_case(64, 64, 16, 64)),
        ("att dv 64x[64x16x64] TN", *attention_case(64, 64, 16, 64, ta=True)),
    ],
    "cnn": [
        ("conv1 fwd 4096x16x9 NT", *mm_case(4096, 16, 9, tb=True)),
        ("conv2 fwd 4096x32x144 NT", *mm_case(4096, 32, 144, tb=True)),
        ("conv2 dcol 4096x144x32 NN", *mm_case(4096, 144, 32)),
        ("conv2 dW 32x144x4096 TN", *mm_case(32, 144, 4096, ta=True)),
        ("conv1 dW 16x9x4096 TN", *mm_case(16, 9, 4096, ta=True)),
        ("fc1 fwd 64x64x512 NT", *mm_case(64, 64, 512, tb=True)),
    ],
    "square": [
        ("256", *mm_case(256, 256, 256)),
        ("512", *mm_case(512, 512, 512)),
        ("1024", *mm_case(1024, 1024, 1024)),
    ],
}


def interleaved(runs, reps):
    """Median and minimum seconds of each (fn, device) in runs, timed round-robin so that load from
    other processes falls on all of them alike; one untimed call each first (compiles)."""
    from _timing import synchronize
    samples = [[] for _ in runs]
    for fn, device in runs:
        fn()
        synchronize(device)
    for _ in range(reps):
        for (fn, device), out in zip(runs, samples):
            synchronize(device)
            t = time.perf_counter()
            fn()
            synchronize(device)
            out.append(time.perf_counter() - t)
    return [(statistics.median(x), min(x)) for x in samples]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--only", nargs="*", default=["mlp", "tf", "cnn"], choices=list(CASES))
    args = p.parse_args()
    import torch_opencl  # noqa: F401
    from torch_opencl import _C
    torch.manual_seed(0)
    limit = _C._small_gemm_limit()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, float32, median (min) of {args.reps} "
          f"round-robin; clblast: the small-GEMM kernel off (limit 0); ocl: as shipped (limit {limit})")
    print(f"{'case':<28}{'cpu us':>14}{'clblast us':>15}{'ocl us':>15}{'ocl GF/s':>10}{'clblast/cpu':>12}{'ocl/cpu':>9}")

    def clblast(fn):
        def run():
            _C._small_gemm_limit(0)
            try:
                fn()
            finally:
                _C._small_gemm_limit(limit)
        return run

    for group in args.only:
        tot = [0.0, 0.0, 0.0]
        for name, make, flops in CASES[group]:
            dev = make("opencl")
            times = interleaved([(make("cpu"), "cpu"), (clblast(dev), "opencl"), (dev, "opencl")], args.reps)
            (cpu, cpu_min), (old, old_min), (new, new_min) = times
            tot = [tot[0] + cpu, tot[1] + old, tot[2] + new]
            print(f"{name:<28}{cpu * 1e6:>8.0f} ({cpu_min * 1e6:>4.0f}){old * 1e6:>8.0f} ({old_min * 1e6:>5.0f})"
                  f"{new * 1e6:>8.0f} ({new_min * 1e6:>5.0f}){flops / new / 1e9:>10.1f}{old / cpu:>12.2f}{new / cpu:>9.2f}")
        print(f"{'total ' + group:<28}{tot[0] * 1e6:>8.0f}{'':>7}{tot[1] * 1e6:>8.0f}{'':>8}{tot[2] * 1e6:>8.0f}"
              f"{'':>18}{tot[1] / tot[0]:>12.2f}{tot[2] / tot[0]:>9.2f}")


if __name__ == "__main__":
    main()
