"""conv2d forward + backward (input, weight and bias gradients): opencl (im2col + CLBlast GEMM)
against CPU PyTorch in one run. Medians of --reps; ratio = cpu time / opencl time (>1: opencl faster).

    python bench/bench_conv.py [--reps 5]

--winograd instead compares, on opencl only, the two paths for 3x3 stride-1 convolutions: im2col + GEMM
(the batch folded into the GEMMs' columns in the GPU class) against Winograd, F(2x2, 3x3) for the forward
and the input gradient and F(3x3, 2x2) for the weight gradient (aten/native/conv_winograd.h), which both
classes take from 16 channels, for the CNN shapes of
bench_vs_cuda.py at a smaller batch. TORCH_OPENCL_KERNEL_CLASS=gpu on PoCL runs the GPU forms (a sanity
check: what they gain on a GPU wants a GPU to measure).

    python bench/bench_conv.py --winograd [--batch 16] [--reps 5]
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


# bench_vs_cuda.py's CNN: its 3x3 stride-1 convolutions (channels, side) and the single-operator shape.
CNN_SHAPES = [(64, 32), (128, 16), (256, 8), (512, 4)]


def winograd_comparison(batch, reps):
    from torch_opencl import _C
    enabled, min_channels = _C._winograd_min_channels(0)
    if not enabled:
        raise SystemExit("this device does not take Winograd (runtime/kernel_forms.h's conv_winograd)")
    print(f"conv2d 3x3 stride 1 padding 1, float32, batch {batch}, median of {reps} (ms) on "
          f"{torch.opencl.get_device_name()}: im2col + GEMM vs Winograd")
    print(f"{'channels x side':<16} {'pass':<18} {'gemm':>9} {'winograd':>9} {'gemm/winograd':>14}")
    for channels, side in CNN_SHAPES:
        x = torch.randn(batch, channels, side, side, device="opencl")
        w = torch.randn(channels, channels, 3, 3, device="opencl")
        g = torch.randn(batch, channels, side, side, device="opencl")

        def forward():
            F.conv2d(x, w, padding=1)
            torch.opencl.synchronize()

        def input_grad():
            torch.ops.aten.convolution_backward(g, x, w, [0], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                [True, False, False])
            torch.opencl.synchronize()

        def weight_grad():
            torch.ops.aten.convolution_backward(g, x, w, [0], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                [False, True, False])
            torch.opencl.synchronize()

        for name, run in (("forward", forward), ("input gradient", input_grad), ("weight gradient", weight_grad)):
            times = []
            for threshold in (1 << 30, min_channels):  # above every channel count: Winograd off
                _C._winograd_min_channels(0, threshold)
                times.append(median_seconds(run, reps))
            _C._winograd_min_channels(0, min_channels)
            print(f"{channels:>4} x {side:<9} {name:<18} {times[0] * 1e3:>9.2f} {times[1] * 1e3:>9.2f} "
                  f"{times[0] / times[1]:>14.2f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--winograd", action="store_true", help="GPU form: im2col + GEMM against Winograd (opencl only)")
    p.add_argument("--batch", type=int, default=16, help="batch of --winograd's shapes")
    args = p.parse_args()
    torch.opencl.set_fallback_mode("silent")
    if args.winograd:
        return winograd_comparison(args.batch, args.reps)
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
