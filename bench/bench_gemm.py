"""GEMM GFLOP/s: opencl (CLBlast, untuned and tuned) against torch.mm on the CPU, in one run.

    python bench/bench_gemm.py [--sizes 256 512 1024 2048] [--reps 5] [--dtype float32] [--shapes 128x256x784 ...]

"untuned" runs in a child process with TORCH_OPENCL_GEMM_TUNING=0 (CLBlast's own
defaults), since CLBlast's parameters are per process; "tuned" is CLBlast in this process
with the built-in set and any saved tuning file; both with the small-GEMM kernel off
(TORCH_OPENCL_SMALL_GEMM_LIMIT=0). "opencl" is the backend as shipped (on CPU devices the
small-GEMM kernel, kernels_cl/gemm.cl, up to its limit). Medians; ratios against CPU.
--shapes adds rectangular products MxNxK ((M, K) @ (K, N)), e.g. the training
benchmark's: 128x256x784 (MLP), 1024x192x64 and 1024x64x256 (transformer).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch


def parse_shape(text):
    if text.isdigit():
        return int(text), int(text), int(text)
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def median_gflops(fn, flops, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return flops / times[len(times) // 2] / 1e9


def run_opencl(sizes, reps, dtype, small_limit=None):
    import torch_opencl  # noqa: F401
    from torch_opencl import _C
    old = _C._small_gemm_limit(small_limit)
    out = {}
    for s in sizes:
        m, n, k = parse_shape(s)
        a = torch.randn(m, k, dtype=dtype, device="opencl")
        b = torch.randn(k, n, dtype=dtype, device="opencl")
        out[s] = median_gflops(lambda: torch.mm(a, b), 2 * m * n * k, reps, torch.opencl.synchronize)
    _C._small_gemm_limit(old)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--shapes", nargs="*", default=[], help="rectangular products MxNxK, after the square sizes")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    sizes = [str(n) for n in args.sizes] + list(args.shapes)
    if args.child:
        print(json.dumps(run_opencl(sizes, args.reps, dtype)))
        return
    env = dict(os.environ, TORCH_OPENCL_GEMM_TUNING="0", TORCH_OPENCL_SMALL_GEMM_LIMIT="0")
    child = subprocess.run([sys.executable, __file__, "--child", "--reps", str(args.reps), "--dtype", args.dtype,
                            "--sizes", *map(str, args.sizes), "--shapes", *args.shapes], env=env, capture_output=True,
                           text=True, check=True)
    untuned = json.loads(child.stdout.strip().splitlines()[-1])
    tuned = run_opencl(sizes, args.reps, dtype, small_limit=0)
    shipped = run_opencl(sizes, args.reps, dtype)
    from torch_opencl import _C
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, {args.dtype}, median of {args.reps}; "
          f"tuning: {_C._gemm_tuning_source(0)}")
    print(f"{'n':>12} {'cpu':>9} {'untuned':>9} {'tuned':>9} {'opencl':>9} {'untuned/cpu':>12} {'tuned/cpu':>10}"
          f" {'opencl/cpu':>11}")
    for s in sizes:
        m, n, k = parse_shape(s)
        a = torch.randn(m, k, dtype=dtype)
        b = torch.randn(k, n, dtype=dtype)
        cpu = median_gflops(lambda: torch.mm(a, b), 2 * m * n * k, args.reps, lambda: None)
        print(f"{s:>12} {cpu:>9.1f} {untuned[s]:>9.1f} {tuned[s]:>9.1f} {shipped[s]:>9.1f} {untuned[s] / cpu:>12.2f}"
              f" {tuned[s] / cpu:>10.2f} {shipped[s] / cpu:>11.2f}")


if __name__ == "__main__":
    main()
