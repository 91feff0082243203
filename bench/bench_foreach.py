"""Optimizer steps over many parameters: the _foreach_* kernels (aten/native/foreach.cpp).

An AdamW step (and an SGD-momentum step, and clip_grad_norm_) over --params parameters of
mixed sizes (weights and biases of a stack of layers), on cpu and opencl in one run:
foreach=True (multi-tensor kernels on opencl, 16 tensors per launch) against foreach=False
(one launch per tensor per operation). Medians in ms per step, the opencl/cpu ratio, and
the kernel launches one opencl step enqueues.

    .venv/bin/python bench/bench_foreach.py [--params 100] [--repeats 15] [--scale 1]
"""
import argparse

import torch
import torch_opencl  # noqa: F401
from torch import nn

from _timing import median_device_seconds


def make_params(n, scale, device):
    g = torch.Generator().manual_seed(0)
    shapes = []
    widths = [64, 128, 256, 96, 32]
    for i in range(n):
        w = widths[i % len(widths)] * scale
        shapes.append((w, w // 2) if i % 2 == 0 else (w,))  # a weight, then a bias
    params = [nn.Parameter(torch.randn(s, generator=g).to(device)) for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g).to(device)
    return params


def step_fn(kind, params, foreach):
    if kind == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=foreach)
        return opt.step
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
        return opt.step
    return lambda: nn.utils.clip_grad_norm_(params, 1.0, foreach=foreach)


def launches(fn):
    before = torch_opencl._C._launch_count()
    fn()
    return torch_opencl._C._launch_count() - before


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--params", type=int, default=100)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    numel = sum(t.numel() for t in make_params(args.params, args.scale, "cpu"))
    print(f"opencl device: {torch.opencl.get_device_name()}")
    print(f"{args.params} parameters, {numel} elements; medians of {args.repeats} steps, ms")
    print(f"{'step':<24}{'cpu':>10}{'opencl':>10}{'ratio':>8}{'launches':>10}")
    for kind in ("adamw", "sgd", "clip_grad_norm"):
        for foreach in (True, False):
            row = {}
            for device in ("cpu", "opencl"):
                fn = step_fn(kind, make_params(args.params, args.scale, device), foreach)
                row[device] = median_device_seconds(fn, device, args.repeats, warmup=2) * 1e3
                if device == "opencl":
                    n = launches(fn)
            name = f"{kind} {'foreach' if foreach else 'loop'}"
            print(f"{name:<24}{row['cpu']:>10.2f}{row['opencl']:>10.2f}{row['opencl'] / row['cpu']:>8.2f}{n:>10}")


if __name__ == "__main__":
    main()
