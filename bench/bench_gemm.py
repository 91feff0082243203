"""GEMM GFLOP/s: opencl (CLBlast, untuned and tuned) against torch.mm on the CPU, in one run.

    python bench/bench_gemm.py [--sizes 256 512 1024 2048] [--reps 5] [--dtype float32]

"untuned" runs in a child process with TORCH_OPENCL_GEMM_TUNING=0 (CLBlast's own
defaults), since CLBlast's parameters are per process; "tuned" is this process
with the built-in set and any saved tuning file. Medians; ratios against CPU.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch


def median_gflops(fn, n, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return 2 * n ** 3 / times[len(times) // 2] / 1e9


def run_opencl(sizes, reps, dtype):
    import torch_opencl  # noqa: F401
    out = {}
    for n in sizes:
        a = torch.randn(n, n, dtype=dtype, device="opencl")
        b = torch.randn(n, n, dtype=dtype, device="opencl")
        out[n] = median_gflops(lambda: torch.mm(a, b), n, reps, torch.opencl.synchronize)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.child:
        print(json.dumps(run_opencl(args.sizes, args.reps, dtype)))
        return
    env = dict(os.environ, TORCH_OPENCL_GEMM_TUNING="0")
    child = subprocess.run([sys.executable, __file__, "--child", "--reps", str(args.reps), "--dtype", args.dtype,
                            "--sizes", *map(str, args.sizes)], env=env, capture_output=True, text=True, check=True)
    untuned = {int(k): v for k, v in json.loads(child.stdout.strip().splitlines()[-1]).items()}
    tuned = run_opencl(args.sizes, args.reps, dtype)
    from torch_opencl import _C
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, {args.dtype}, median of {args.reps}; "
          f"tuning: {_C._gemm_tuning_source(0)}")
    print(f"{'n':>6} {'cpu':>9} {'untuned':>9} {'tuned':>9} {'untuned/cpu':>12} {'tuned/cpu':>10}")
    for n in args.sizes:
        a = torch.randn(n, n, dtype=dtype)
        b = torch.randn(n, n, dtype=dtype)
        cpu = median_gflops(lambda: torch.mm(a, b), n, args.reps, lambda: None)
        print(f"{n:>6} {cpu:>9.1f} {untuned[n]:>9.1f} {tuned[n]:>9.1f} {untuned[n] / cpu:>12.2f} {tuned[n] / cpu:>10.2f}")


if __name__ == "__main__":
    main()
