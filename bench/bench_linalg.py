"""Dense linear algebra (lu_factor, lu_solve, solve, inv, det, slogdet, solve_triangular, cholesky), opencl against
CPU (LAPACK) in one process: the median of each, their ratio, worst first. float32.

    .venv/bin/python bench/bench_linalg.py [--repeats 9] [--only inv,det] [--large]

--large adds the single 1024 x 1024 matrices (seconds on PoCL: a work-group per matrix runs on one core).
"""
import argparse
import os
import sys

import torch

import torch_opencl  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402


def operands(device, large):
    g = torch.Generator().manual_seed(0)

    def wc(*shape):
        n = shape[-1]
        return torch.randn(shape, generator=g) + n ** 0.5 * torch.eye(n)

    ops = {
        "small": wc(4096, 4, 4),
        "mid": wc(256, 32, 32),
        "one128": wc(128, 128),
        "one256": wc(256, 256),
        "rhs256": torch.randn(256, 16, generator=g),
    }
    ops["spd128"] = ops["one128"] @ ops["one128"].mT
    ops["tri256"] = ops["one256"].triu()
    if large:
        ops["one1024"] = wc(1024, 1024)
    out = {k: v.to(device) for k, v in ops.items()}
    out["lu256"] = torch.linalg.lu_factor(out["one256"])
    return out


OPS = {
    "lu_factor 4096 x 4x4": lambda d: torch.linalg.lu_factor(d["small"]),
    "lu_factor 256 x 32x32": lambda d: torch.linalg.lu_factor(d["mid"]),
    "lu_factor 256x256": lambda d: torch.linalg.lu_factor(d["one256"]),
    "lu_solve 256x256, 16 rhs": lambda d: torch.linalg.lu_solve(*d["lu256"], d["rhs256"]),
    "solve 256 x 32x32": lambda d: torch.linalg.solve(d["mid"], d["mid"][..., :1]),
    "inv 4096 x 4x4": lambda d: torch.linalg.inv(d["small"]),
    "inv 256 x 32x32": lambda d: torch.linalg.inv(d["mid"]),
    "inv 128x128": lambda d: torch.linalg.inv(d["one128"]),
    "det 4096 x 4x4": lambda d: torch.linalg.det(d["small"]),
    "det 256x256": lambda d: torch.linalg.det(d["one256"]),
    "slogdet 256 x 32x32": lambda d: torch.linalg.slogdet(d["mid"]),
    "solve_triangular 256x256, 16 rhs": lambda d: torch.linalg.solve_triangular(d["tri256"], d["rhs256"], upper=True),
    "cholesky 128x128": lambda d: torch.linalg.cholesky(d["spd128"]),
    "lu_factor 1024x1024": lambda d: torch.linalg.lu_factor(d["one1024"]),
    "inv 1024x1024": lambda d: torch.linalg.inv(d["one1024"]),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--only", default="", help="comma-separated parts of names (default: all)")
    parser.add_argument("--large", action="store_true", help="also the 1024 x 1024 matrices")
    args = parser.parse_args()
    torch.opencl.set_fallback_mode("silent")
    names = [n for n in OPS if (not args.only or any(p in n for p in args.only.split(",")))
             and (args.large or "1024" not in n)]
    data = {dev: operands(dev, args.large) for dev in ("cpu", "opencl")}
    rows = []
    for name in names:
        fn = OPS[name]
        t = {dev: median_device_seconds(lambda: fn(data[dev]), dev, args.repeats, warmup=2) * 1e6
             for dev in ("cpu", "opencl")}
        rows.append((t["opencl"] / t["cpu"], name, t["cpu"], t["opencl"]))
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | medians of {args.repeats}, us")
    print(f"{'operator':<40}{'cpu':>10}{'opencl':>10}{'opencl/cpu':>12}")
    for ratio, name, cpu, ocl in sorted(rows, reverse=True):
        print(f"{name:<40}{cpu:>10.0f}{ocl:>10.0f}{ratio:>11.1f}x")
    print("operators on the CPU fallback:", ", ".join(sorted(torch.opencl.fallback_stats())) or "none")


if __name__ == "__main__":
    main()
