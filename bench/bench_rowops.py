"""Row-wise nn kernels, forward + backward, on cpu and opencl in one process: softmax and
log_softmax over the last dim, layer_norm; medians and the ratio. With --profile, also the
opencl device time per kernel (torch.profiler) over the timed repetitions.

    python bench/bench_rowops.py [--repeat N] [--profile]
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
import torch_opencl  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402

SHAPES_SOFTMAX = [(1024, 64), (4096, 64), (1024, 256)]
SHAPES_LAYER_NORM = [(1024, 64), (4096, 768)]


def workloads(device):
    g = torch.Generator().manual_seed(0)
    out = {}
    for rows, n in SHAPES_SOFTMAX:
        x = torch.randn(rows, n, generator=g).to(device).requires_grad_()
        grad = torch.randn(rows, n, generator=g).to(device)
        for name, f in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
            out[f"{name} {rows}x{n}"] = (lambda x=x, grad=grad, f=f: f(x, -1).backward(grad))
    for rows, n in SHAPES_LAYER_NORM:
        x = torch.randn(rows, n, generator=g).to(device).requires_grad_()
        grad = torch.randn(rows, n, generator=g).to(device)
        w = torch.randn(n, generator=g).to(device).requires_grad_()
        b = torch.randn(n, generator=g).to(device).requires_grad_()
        out[f"layer_norm {rows}x{n}"] = (
            lambda x=x, grad=grad, w=w, b=b, n=n: F.layer_norm(x, (n,), w, b).backward(grad))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="also print opencl device time per kernel")
    args = parser.parse_args()
    cpu, dev = workloads("cpu"), workloads("opencl")
    print(f"{'workload (fwd+bwd)':26s} {'cpu ms':>9s} {'opencl ms':>10s} {'opencl/cpu':>10s}")
    for name in cpu:
        c = median_device_seconds(cpu[name], "cpu", args.repeat) * 1e3
        d = median_device_seconds(dev[name], "opencl", args.repeat) * 1e3
        print(f"{name:26s} {c:9.3f} {d:10.3f} {d / c:10.2f}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        for name, fn in dev.items():
            fn()
            torch.opencl.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as p:
                for _ in range(args.repeat):
                    fn()
                torch.opencl.synchronize()
            kernels = [e for e in p.key_averages() if e.device_type.name == "PrivateUse1" or
                       (getattr(e, "self_device_time_total", 0) > 0 and not e.key.startswith("aten::"))]
            parts = ", ".join(f"{e.key} {e.self_device_time_total / e.count / 1e3:.3f}" for e in kernels
                              if e.self_device_time_total > 0)
            print(f"  {name}: device ms per call: {parts}")
    stats = torch.opencl.fallback_stats()
    print("fallback ops during the run:", dict(stats) if stats else "none")


if __name__ == "__main__":
    main()
