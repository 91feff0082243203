"""Elementwise math functions over 1M floats (and the activations and losses built on them), opencl
against CPU PyTorch in one process: medians in ms and the ratio. On PoCL's CPU device the float
logarithms, expm1, pow, sin, cos and tan come from kernels_cl/float_math.cl; TORCH_OPENCL_OWN_FLOAT_MATH=0
measures the driver's instead (the header line says which).

    .venv/bin/python bench/bench_math.py [--n 1048576] [--repeats 9] [--only log,expm1]
"""
import argparse

import torch
import torch_opencl  # noqa: F401
from torch.nn import functional as F

from _timing import median_device_seconds

FUNCTIONS = {
    "exp": torch.exp,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "softplus": F.softplus,
    "logsigmoid": F.logsigmoid,
    "elu": F.elu,
    "mish": F.mish,
    "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, torch.sigmoid(x).detach(), reduction="none"),
    "logaddexp": lambda x: torch.logaddexp(x, 0.5 * x),
    "pow_1.5": lambda x: x.abs().pow(1.5),
    "sin": torch.sin,
    "atan": torch.atan,
    "erf": torch.erf,
    "gelu": F.gelu,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--only", default=",".join(FUNCTIONS))
    args = parser.parse_args()
    props = torch_opencl._C._device_properties(0)
    math = "own (kernels_cl/float_math.cl)" if props["own_float_math"] else "the driver's"
    print(f"device: {props['name']} | float math: {math} | torch {torch.__version__} | "
          f"{args.n} floats, medians of {args.repeats}, ms")
    print(f"{'function':18s}{'cpu':>9s}{'opencl':>9s}{'opencl/cpu':>12s}")
    x = torch.randn(args.n, generator=torch.Generator().manual_seed(0)) * 4
    xd = x.to("opencl")
    for name in args.only.split(","):
        fn = FUNCTIONS[name]
        cpu = median_device_seconds(lambda: fn(x), "cpu", args.repeats) * 1e3
        ocl = median_device_seconds(lambda: fn(xd), "opencl", args.repeats) * 1e3
        print(f"{name:18s}{cpu:9.2f}{ocl:9.2f}{ocl / cpu:12.2f}")


if __name__ == "__main__":
    main()
