"""Matrix products by precision on one opencl device: float32 at torch's default matmul precision
("highest": the FMA kernels), float32 at "high" (TF32 on tensor cores where the device has them,
kernels_cl/gemm_mma.cl) and bfloat16 (autocast's products), at the GPT's shapes and n=4096. The reference
is the first column; the others print their speed-up over it. Medians of 5 samples of 20 calls.

    python bench/bench_gemm_precision.py [--quick]   # --quick: one small product (a smoke run, for PoCL)
"""
import statistics
import sys
import time

import torch
import torch_opencl

SHAPES = [(8192, 1152, 384), (8192, 384, 384), (8192, 384, 1536), (8192, 1536, 384), (4096, 4096, 4096)]
MODES = [("float32 highest", torch.float32, "highest"), ("float32 high", torch.float32, "high"),
         ("bfloat16", torch.bfloat16, "highest")]


def per_call_us(fn, calls=20, samples=5):
    fn()
    torch.opencl.synchronize()
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.opencl.synchronize()
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def main():
    shapes = [(256, 192, 128)] if "--quick" in sys.argv else SHAPES
    props = torch_opencl._C._device_properties(0)
    print(f"{props['name']} | tensor-core GEMM {props['tensor_core_gemm']}")
    print(f"{'m x n x k':<20}" + "".join(f"{name:>26}" for name, _, _ in MODES))
    previous = torch.get_float32_matmul_precision()
    try:
        for m, n, k in shapes:
            cells, reference = [], None
            for _, dtype, precision in MODES:
                torch.set_float32_matmul_precision(precision)
                a = torch.randn(m, k, device="opencl").to(dtype)
                b = torch.randn(k, n, device="opencl").to(dtype)
                us = per_call_us(lambda: a @ b)
                reference = reference or us
                tflops = 2 * m * n * k / us / 1e6
                cells.append(f"{us:9.1f} us {tflops:5.1f} TF {reference / us:4.2f}x")
            print(f"{f'{m}x{n}x{k}':<20}" + "".join(f"{c:>26}" for c in cells), flush=True)
    finally:
        torch.set_float32_matmul_precision(previous)


if __name__ == "__main__":
    main()
