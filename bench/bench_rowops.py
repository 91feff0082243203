"""Row-wise nn kernels (softmax/log_softmax, layer_norm, cross_entropy, batch_norm), forward and
backward: medians on the measured device, and by default on CPU in the same process with the ratio.

  --set pocl (default): small shapes, forward + backward through autograd (the PoCL table).
  --set gpu: the shapes of issue 13 as single operators (aten calls, no autograd): softmax
             [192,256,256] and over a non-last dim, log_softmax and cross_entropy 8192x512 (fused, and
             as the composite log_softmax + nll_loss),
             layer_norm 8192x384, batch_norm 128x128x16x16 (training, backward, eval) and
             training forward + backward at the CNN's shapes (batch 128, 64..512 channels).
  --device opencl (default), opencl:N, or cuda (a reference run; in a CUDA build of torch run
           it as its own process, with TORCH_DEVICE_BACKEND_AUTOLOAD=0).
  --compare cpu (default) or none: none measures the device alone (large shapes on a GPU).
  --calls N: back-to-back calls per timed sample (default 1; on a GPU 20 or more hides the
             host's wait for each call).
  --profile: also the device time per kernel over the timed calls (torch.profiler where
             torch_opencl has its Kineto plugin, else the legacy profiler's per-operator time).

    python bench/bench_rowops.py [--set pocl|gpu] [--device opencl] [--compare cpu|none]
                                 [--repeat N] [--calls N] [--profile]

The kernel class (CPU- or GPU-shaped forms) is the device's unless TORCH_OPENCL_KERNEL_CLASS
forces one; the header says which ran.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402

SHAPES_SOFTMAX = [(1024, 64), (4096, 64), (1024, 256)]
SHAPES_LAYER_NORM = [(1024, 64), (4096, 768)]
CNN_BATCH_NORM = [(128, 64, 32, 32), (128, 128, 16, 16), (128, 256, 8, 8), (128, 512, 4, 4)]


def pocl_workloads(device):
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


def gpu_workloads(device):
    g = torch.Generator().manual_seed(0)
    aten = torch.ops.aten

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(device)

    out = {}
    s = rnd(192, 256, 256)
    sy = torch.softmax(s, -1)
    out["softmax fwd [192,256,256] dim -1"] = lambda: aten._softmax(s, -1, False)
    out["softmax bwd [192,256,256] dim -1"] = lambda: aten._softmax_backward_data(s, sy, -1, s.dtype)
    c = rnd(64, 256, 256)
    cy = torch.softmax(c, 1)
    out["softmax fwd [64,256,256] dim 1"] = lambda: aten._softmax(c, 1, False)
    out["softmax bwd [64,256,256] dim 1"] = lambda: aten._softmax_backward_data(c, cy, 1, c.dtype)
    logits = rnd(8192, 512)
    ly = torch.log_softmax(logits, -1)
    out["log_softmax fwd 8192x512"] = lambda: aten._log_softmax(logits, -1, False)
    out["log_softmax bwd 8192x512"] = lambda: aten._log_softmax_backward_data(logits, ly, -1, logits.dtype)
    tgt = torch.randint(0, 512, (8192,), generator=g).to(device)
    out["cross_entropy fwd 8192x512"] = lambda: F.cross_entropy(logits, tgt)
    lg = logits.clone().requires_grad_()
    out["cross_entropy fwd+bwd 8192x512"] = lambda: F.cross_entropy(lg, tgt).backward()
    # What cross_entropy ran before its fused kernels (aten/native/cross_entropy.cpp): the composite.
    out["log_softmax+nll_loss fwd 8192x512"] = lambda: F.nll_loss(F.log_softmax(logits, -1), tgt)
    out["log_softmax+nll_loss fwd+bwd 8192x512"] = lambda: F.nll_loss(F.log_softmax(lg, -1), tgt).backward()
    x, w, b, grad = rnd(8192, 384), rnd(384), rnd(384), rnd(8192, 384)
    out["layer_norm fwd 8192x384"] = lambda: aten.native_layer_norm(x, [384], w, b, 1e-5)
    _, mean, rstd = aten.native_layer_norm(x, [384], w, b, 1e-5)
    out["layer_norm bwd 8192x384"] = lambda: aten.native_layer_norm_backward(grad, x, [384], mean, rstd, w, b,
                                                                             [True, True, True])
    for shape in CNN_BATCH_NORM:
        C = shape[1]
        bx, bw, bb, go = rnd(*shape), rnd(C), rnd(C), rnd(*shape)
        rm, rv = torch.zeros(C, device=device), torch.ones(C, device=device)
        _, smean, sinv = aten.native_batch_norm(bx, bw, bb, rm, rv, True, 0.1, 1e-5)
        tag = "x".join(map(str, shape))

        def fwd(bx=bx, bw=bw, bb=bb, rm=rm, rv=rv):
            return aten.native_batch_norm(bx, bw, bb, rm, rv, True, 0.1, 1e-5)

        def bwd(go=go, bx=bx, bw=bw, rm=rm, rv=rv, smean=smean, sinv=sinv):
            return aten.native_batch_norm_backward(go, bx, bw, rm, rv, smean, sinv, True, 1e-5, [True, True, True])

        if shape == (128, 128, 16, 16):
            out[f"batch_norm train fwd {tag}"] = fwd
            out[f"batch_norm train bwd {tag}"] = bwd
            out[f"batch_norm eval fwd {tag}"] = (
                lambda bx=bx, bw=bw, bb=bb, rm=rm, rv=rv: aten.native_batch_norm(bx, bw, bb, rm, rv, False, 0.1, 1e-5))
        out[f"batch_norm train fwd+bwd {tag}"] = lambda fwd=fwd, bwd=bwd: (fwd(), bwd())
    return out


def synchronize(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elif device.startswith("opencl"):
        torch.opencl.synchronize()


def per_call_ms(fn, device, repeat, calls):
    """Median over `repeat` samples of the time of `calls` back-to-back calls (and the wait for the
    device), divided by `calls`."""
    def run():
        for _ in range(calls):
            fn()
        synchronize(device)
    return median_device_seconds(run, "cpu", repeat) * 1e3 / calls


def profile_lines(fns, device, repeat):
    """Per workload: the device time per call of each kernel (or operator) it ran."""
    import torch_opencl
    kineto = torch_opencl._C._has_kineto_plugin()
    for name, fn in fns.items():
        fn()
        synchronize(device)
        if kineto:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as p:
                for _ in range(repeat):
                    fn()
                synchronize(device)
            rows = [e for e in p.key_averages() if e.device_type != torch.autograd.DeviceType.CPU]
        else:  # torch without the PrivateUse1 profiler registry: device time per operator
            with torch.autograd.profiler.profile(use_device="opencl", use_kineto=False) as p:
                for _ in range(repeat):
                    fn()
                synchronize(device)
            rows = list(p.key_averages())
        parts = ", ".join(f"{e.key} {e.self_device_time_total / repeat:.1f}" for e in rows
                          if e.self_device_time_total > 0)
        print(f"  {name}: device us per call: {parts}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["pocl", "gpu"], default="pocl")
    parser.add_argument("--device", default="opencl")
    parser.add_argument("--compare", choices=["cpu", "none"], default="cpu")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also print device time per kernel")
    args = parser.parse_args()
    device = args.device
    if device.startswith("opencl"):
        import torch_opencl
        props = torch_opencl._C._device_properties(torch.device(device).index or 0)
        print(f"device: {props['name']} | kernel class {props['kernel_class']} ({props['kernel_class_reason']}) | "
              f"torch {torch.__version__}")
    elif device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name()} | torch {torch.__version__}")
    make = gpu_workloads if args.set == "gpu" else pocl_workloads
    dev = make(device)
    ref = make("cpu") if args.compare == "cpu" else None
    unit, scale = ("us", 1e3) if args.set == "gpu" else ("ms", 1.0)
    head = f"{'workload':36s} {device + ' ' + unit:>14s}"
    print(head + (f" {'cpu ' + unit:>12s} {'ratio':>8s}" if ref else ""))
    for name, fn in dev.items():
        d = per_call_ms(fn, device, args.repeat, args.calls) * scale
        line = f"{name:36s} {d:14.1f}" if unit == "us" else f"{name:36s} {d:14.3f}"
        if ref:
            c = per_call_ms(ref[name], "cpu", args.repeat, args.calls) * scale
            line += f" {c:12.3f} {d / c:8.2f}"
        print(line)
    if args.profile and device.startswith("opencl"):
        profile_lines(dev, device, args.repeat)
    if device.startswith("opencl"):
        stats = torch.opencl.fallback_stats()
        print("fallback ops during the run:", dict(stats) if stats else "none")


if __name__ == "__main__":
    main()
