"""F.scaled_dot_product_attention, forward + backward (causal): the fused kernels against PyTorch's math
path on the same opencl device (sdpa_kernel(SDPBackend.MATH)), and CPU PyTorch's own choice in the same
process; medians, ratios, and the kernels one opencl call launches.

  transformer  bench_training.py's: batch 16, 4 heads, seq 64, head dim 16, q/k/v transposed views
  gpt          bench_vs_cuda.py's GPT-style step: batch 32 (--gpt-batch), 6 heads, seq 256, head dim 64

    .venv/bin/python bench/bench_attention.py [--repeat 10] [--gpt-batch 32] [--forward-only] [--dropout 0.1]
                                              [--gqa 2]  (k/v heads = heads / 2, enable_gqa=True)
                                              [--sweep]  (head dims 16..128 x seq 64..1024, 8 heads, no CPU:
                                                          where the fused kernels beat the math path)

The kernel class (CPU- or GPU-shaped forms) is the device's unless TORCH_OPENCL_KERNEL_CLASS forces one.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_device_seconds  # noqa: E402


DROPOUT = 0.0  # --dropout: dropout_p of every call
GQA = 1  # --gqa: query heads per k/v head


def views(batch, heads, seq, head_dim, device):
    """q, k, v as a transformer block makes them: transposed views of one (batch, seq, 3 * width) projection
    (k and v narrower with --gqa)."""
    widths = [heads * head_dim] + 2 * [heads // GQA * head_dim]
    x = torch.randn(batch, seq, sum(widths), generator=torch.Generator().manual_seed(0)).to(device)
    return [z.view(batch, seq, -1, head_dim).transpose(1, 2).detach().requires_grad_() for z in x.split(widths, 2)]


def step(q, k, v, grad, forward_only):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=DROPOUT, enable_gqa=GQA > 1)
    if not forward_only:
        out.backward(grad)


def measure(shape, device, backend, repeat, forward_only):
    q, k, v = views(*shape, device)
    grad = torch.randn(q.shape[0], q.shape[1], q.shape[2], v.shape[3]).to(device)
    if backend is None:
        return median_device_seconds(lambda: step(q, k, v, grad, forward_only), device, repeat) * 1e3
    with sdpa_kernel(backend):
        return median_device_seconds(lambda: step(q, k, v, grad, forward_only), device, repeat) * 1e3


def launches(shape, forward_only):
    q, k, v = views(*shape, "opencl")
    grad = torch.randn(q.shape[0], q.shape[1], q.shape[2], v.shape[3], device="opencl")
    C = torch.opencl._C
    C._record_kernel_names(True)
    step(q, k, v, grad, forward_only)
    torch.opencl.synchronize()
    C._record_kernel_names(False)
    return C._recorded_kernel_names()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--gpt-batch", type=int, default=32)
    parser.add_argument("--forward-only", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.0, help="dropout_p (the fused kernels draw the mask)")
    parser.add_argument("--gqa", type=int, default=1, help="query heads per k/v head (enable_gqa=True)")
    parser.add_argument("--sweep", action="store_true", help="head dims x sequence lengths, fused against math")
    args = parser.parse_args()
    global DROPOUT, GQA
    DROPOUT, GQA = args.dropout, args.gqa
    import torch_opencl  # noqa: F401

    form = torch.opencl._C._device_properties(0)["kernel_class"]
    what = "forward" if args.forward_only else "forward + backward"
    print(f"device: {torch.opencl.get_device_name()} | kernel class {form} | torch {torch.__version__} | "
          f"causal SDPA {what}, dropout_p {args.dropout}, gqa {args.gqa}, median of {args.repeat}")
    print(f"{'shape (B, H, L, D)':<24}{'cpu ms':>9}{'math ms':>10}{'fused ms':>10}{'fused/math':>12}{'fused/cpu':>11}"
          f"{'launches math/fused':>21}")
    shapes = {"transformer": (16, 4, 64, 16), "gpt": (args.gpt_batch, 6, 256, 64)}
    if args.sweep:  # 8 heads, 98304 query rows a call
        shapes = {f"d{dim} s{seq}": (max(1, 12288 // seq), 8, seq, dim) for dim in (16, 32, 64, 128)
                  for seq in (64, 256, 1024)}
    for name, shape in shapes.items():
        cpu = float("nan") if args.sweep else measure(shape, "cpu", None, args.repeat, args.forward_only)
        math = measure(shape, "opencl", SDPBackend.MATH, args.repeat, args.forward_only)
        fused = measure(shape, "opencl", SDPBackend.OVERRIDEABLE, args.repeat, args.forward_only)
        with sdpa_kernel(SDPBackend.MATH):
            n_math = len(launches(shape, args.forward_only))
        n_fused = len(launches(shape, args.forward_only))
        label = f"{name} {shape}"
        print(f"{label:<24}{cpu:>9.2f}{math:>10.2f}{fused:>10.2f}{fused / math:>12.2f}{fused / cpu:>11.2f}"
              f"{n_math:>14}/{n_fused}", flush=True)


if __name__ == "__main__":
    main()
