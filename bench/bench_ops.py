"""A survey of everyday operators at one size (1M floats, 16x64x32x32 images), opencl against CPU in one
process: the median of each, their ratio, sorted worst first, and the kernels opencl launched. It finds
the operators whose kernels are far off the device's pace (a form shaped for the wrong device, a path
that loses vectorisation), which per-family benchmarks miss.

    .venv/bin/python bench/bench_ops.py [--repeats 15] [--only cat,flip]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import torch_opencl  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402


def operands(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 1024, generator=g)
    ops = {
        "x": x, "y": torch.randn(1024, 1024, generator=g), "w": torch.randn(1024, generator=g),
        "i": torch.randint(0, 1024, (1024,), generator=g), "img": torch.randn(16, 64, 32, 32, generator=g),
        "big": torch.randn(4 << 20, generator=g),
    }
    ops = {k: v.to(device) for k, v in ops.items()}
    ops["xr"] = ops["x"].clone().requires_grad_()
    ops["ln"] = torch.nn.LayerNorm(1024).to(device)
    ops["bn"] = torch.nn.BatchNorm2d(64).to(device)
    return ops


OPS = {
    "add": lambda d: d["x"] + d["y"],
    "mul by a Python scalar": lambda d: d["x"] * 2.0,
    "add a row (broadcast)": lambda d: d["x"] + d["w"],
    "add a column (broadcast)": lambda d: d["x"] + d["w"][:, None],
    "relu": lambda d: F.relu(d["x"]),
    "gelu": lambda d: F.gelu(d["x"]),
    "exp": lambda d: d["x"].exp(),
    "sigmoid": lambda d: d["x"].sigmoid(),
    "pow 2.5": lambda d: d["x"].abs().pow(2.5),
    "where": lambda d: torch.where(d["x"] > 0, d["x"], d["y"]),
    "clamp": lambda d: d["x"].clamp(-1, 1),
    "masked_fill": lambda d: d["x"].masked_fill(d["x"] > 1, 0.0),
    "transpose copy": lambda d: d["x"].t().contiguous(),
    "zeros_like": lambda d: torch.zeros_like(d["x"]),
    "clone": lambda d: d["x"].clone(),
    "clone of 4M floats": lambda d: d["big"].clone(),
    "cat dim 1": lambda d: torch.cat([d["x"], d["y"]], 1),
    "cat dim 0": lambda d: torch.cat([d["x"], d["y"]], 0),
    "flip": lambda d: d["x"].flip(1),
    "repeat": lambda d: d["w"].repeat(1024, 1),
    "index_select rows": lambda d: d["x"].index_select(0, d["i"]),
    "embedding": lambda d: F.embedding(d["i"], d["x"]),
    "gather": lambda d: d["x"].gather(1, d["i"][None].expand(1024, -1)),
    "index_add": lambda d: torch.zeros_like(d["x"]).index_add_(0, d["i"], d["y"]),
    "sum": lambda d: d["x"].sum(),
    "sum dim 0 (bias gradient)": lambda d: d["x"].sum(0),
    "sum dim 1": lambda d: d["x"].sum(1),
    "norm": lambda d: torch.linalg.vector_norm(d["x"]),
    "var": lambda d: d["x"].var(),
    "amax": lambda d: d["x"].amax(),
    "argmax dim 1": lambda d: d["x"].argmax(1),
    "any": lambda d: (d["x"] > 5).any(),
    "cumsum": lambda d: d["x"].cumsum(1),
    "sort": lambda d: d["x"].sort(1),
    "topk": lambda d: d["x"].topk(5, 1),
    "softmax": lambda d: d["x"].softmax(-1),
    "softmax dim 0": lambda d: d["x"].softmax(0),
    "softmax backward": lambda d: torch.autograd.grad(d["xr"].softmax(-1).sum(), d["xr"]),
    "layer_norm": lambda d: d["ln"](d["x"]),
    "layer_norm backward": lambda d: torch.autograd.grad(d["ln"](d["xr"]).sum(), d["xr"]),
    "batch_norm (train)": lambda d: d["bn"](d["img"]),
    "mse_loss": lambda d: F.mse_loss(d["x"], d["y"]),
    "dropout": lambda d: F.dropout(d["x"], 0.1),
    "randn": lambda d: torch.randn(1024, 1024, device=d["x"].device),
    "mm 1024": lambda d: d["x"] @ d["y"],
    "conv 3x3 64ch": lambda d: F.conv2d(d["img"], d["img"][:64, :, :3, :3]),
    "max_pool2d": lambda d: F.max_pool2d(d["img"], 2),
    "interpolate x2": lambda d: F.interpolate(d["img"], scale_factor=2),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    torch.opencl.set_fallback_mode("silent")
    names = [n for n in OPS if not args.only or n in args.only.split(",")]
    data = {dev: operands(dev) for dev in ("cpu", "opencl")}
    rows = []
    for name in names:
        fn = OPS[name]
        t = {dev: median_device_seconds(lambda: fn(data[dev]), dev, args.repeats, warmup=2) * 1e6
             for dev in ("cpu", "opencl")}
        rows.append((t["opencl"] / t["cpu"], name, t["cpu"], t["opencl"]))
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | medians of {args.repeats}, us")
    print(f"{'operator':<28}{'cpu':>10}{'opencl':>10}{'opencl/cpu':>12}")
    for ratio, name, cpu, ocl in sorted(rows, reverse=True):
        print(f"{name:<28}{cpu:>10.0f}{ocl:>10.0f}{ratio:>11.1f}x")
    print("operators on the CPU fallback:", ", ".join(sorted(torch.opencl.fallback_stats())) or "none")


if __name__ == "__main__":
    main()
