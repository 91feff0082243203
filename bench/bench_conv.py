"""conv2d forward + backward (input, weight and bias gradients): opencl (im2col + CLBlast GEMM)
against CPU PyTorch in one run. Medians of --reps; ratio = cpu time / opencl time (>1: opencl faster).

    python bench/bench_conv.py [--reps 5]
"""
import argparse

import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

from _timing import median_seconds

SHAPES = [
    # name, input (N, C, H, W), weight (O, C, KH, KW), padding
    ("digits conv1", (64, 1, 8, 8), (16, 1, 3, 3), 1),
    ("digits conv2", (64, 16, 8, 8), (32, 16, 3, 3), 1),
    ("bigger", (32, 32, 32, 32), (64, 32, 3, 3), 1),
]


def step_time(device, xs, ws, padding, reps):
    x = torch.randn(xs, device=device, requires_grad=True)
    w = torch.randn(ws, device=device, requires_grad=True)
    b = torch.randn(ws[0], device=device, requires_grad=True)
    g = torch.randn(F.conv2d(x.detach(), w.detach(), padding=padding).shape, device=device)

    def step():
        y = F.conv2d(x, w, b, padding=padding)
        x.grad = w.grad = b.grad = None
        y.backward(g)
        if device != "cpu":
            torch.opencl.synchronize()

    return median_seconds(step, reps)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    torch.opencl.set_fallback_mode("silent")
    print(f"conv2d forward+backward, float32, median of {args.reps} (ms); {torch.get_num_threads()} CPU threads")
    print(f"{'shape':<14} {'cpu':>9} {'opencl':>9} {'cpu/opencl':>11}")
    for name, xs, ws, pad in SHAPES:
        cpu = step_time("cpu", xs, ws, pad, args.reps)
        ocl = step_time("opencl", xs, ws, pad, args.reps)
        print(f"{name:<14} {cpu * 1e3:>9.2f} {ocl * 1e3:>9.2f} {cpu / ocl:>11.2f}")
    stats = torch.opencl.fallback_stats()
    print("fallbacks during the run:", stats or "none")


if __name__ == "__main__":
    main()
