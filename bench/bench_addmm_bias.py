"""addmm with a broadcast self (a linear layer's bias), and addmv, on opencl, against the same product done the way it
was before the GEMM kernels read self in place (self copied into the result, then C = A @ B + C), and
against CPU, in one process.

    .venv/bin/python bench/bench_addmm_bias.py [--reps 200]

Shapes are the linear layers of bench/bench_training.py (forward, weight transposed as nn.Linear has it),
then addmv of a few sizes (before: the copy, then CLBlast's Gemv; now one launch of our GEMM on CPU devices).
Prints medians in microseconds and the ratios.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _timing import median_device_seconds  # noqa: E402

SHAPES = [  # (batch rows, in features, out features)
    (128, 784, 256), (128, 256, 256), (128, 256, 10),  # MLP
    (64, 512, 64), (64, 64, 10),  # digits CNN's head
    (1024, 64, 192), (1024, 64, 64), (1024, 64, 256), (1024, 256, 64), (1024, 64, 256),  # transformer
]

MV_SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 1024), (10, 784)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    import torch_opencl  # noqa: F401

    print(f"device: {torch.opencl.get_device_name()} | median of {args.reps}")
    print(f"{'m x k -> n':<18}{'cpu us':>9}{'copy+gemm us':>14}{'fused us':>10}{'fused/copy':>12}{'fused/cpu':>11}")
    for m, k, n in SHAPES:
        x, w, bias = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        cpu = median_device_seconds(lambda: torch.addmm(bias, x, w.t()), "cpu", args.reps, warmup=3)
        xd, wd, bd = x.to("opencl"), w.to("opencl"), bias.to("opencl")
        out = torch.empty(m, n, device="opencl")

        def copy_then_gemm():  # what addmm did before: one copy launch, then the GEMM with beta = 1 on C
            out.copy_(bd.expand(m, n))
            out.addmm_(xd, wd.t())

        copy = median_device_seconds(copy_then_gemm, "opencl", args.reps, warmup=3)
        fused = median_device_seconds(lambda: torch.addmm(bd, xd, wd.t(), out=out), "opencl", args.reps, warmup=3)
        print(f"{f'{m} x {k} -> {n}':<18}{cpu * 1e6:>9.1f}{copy * 1e6:>14.1f}{fused * 1e6:>10.1f}"
              f"{fused / copy:>12.2f}{fused / cpu:>11.2f}", flush=True)
    for m, k in MV_SHAPES:
        a, x, y = torch.randn(m, k), torch.randn(k), torch.randn(m)
        cpu = median_device_seconds(lambda: torch.addmv(y, a, x), "cpu", args.reps, warmup=3)
        ad, xd, yd = a.to("opencl"), x.to("opencl"), y.to("opencl")
        out = torch.empty(m, device="opencl")

        def copy_then_gemv():
            out.copy_(yd)
            out.addmv_(ad, xd)

        copy = median_device_seconds(copy_then_gemv, "opencl", args.reps, warmup=3)
        fused = median_device_seconds(lambda: torch.addmv(yd, ad, xd, out=out), "opencl", args.reps, warmup=3)
        print(f"{f'addmv {m} x {k}':<18}{cpu * 1e6:>9.1f}{copy * 1e6:>14.1f}{fused * 1e6:>10.1f}"
              f"{fused / copy:>12.2f}{fused / cpu:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
