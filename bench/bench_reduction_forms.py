"""The shapes of the reduction, scan and segmented-sum families that training leans on, on any
devices: the bias gradient (sum over the batch of [8192, 384]), row statistics ([8192, 384] over
the last dim), AdamW's and clip_grad_norm_'s full norms, the loss mean, argmax over a vocabulary,
batch-norm-like var over dim 0, scans (long rows, many short rows, cummax), embedding backward
(8192 indices of width 384 into 512 and into 50257 rows), index_add_ and index_put_(accumulate=True)
of the same, and adaptive average pooling to 1x1 (forward and backward).

Each device runs the same work; the median of --repeats after a warm-up is printed per device, and
with two or more devices the ratio of each to the first. Runs with opencl alone, so it can be taken
to a GPU machine; with a CUDA build of torch run cuda in its own process (autoload off, PyTorch issue
161129) and compare the printed medians:

    python bench/bench_reduction_forms.py --device opencl [--device cpu] [--repeats 20]
    TORCH_DEVICE_BACKEND_AUTOLOAD=0 python bench/bench_reduction_forms.py --device cuda
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def cases():
    g = torch.Generator().manual_seed(0)
    act = torch.randn(8192, 384, generator=g)
    logits = torch.randn(8192, 512, generator=g)
    params = torch.randn(11_000_000, generator=g)
    batch = torch.randn(65536, 256, generator=g)
    long_rows = torch.randn(16, 65536, generator=g)
    short_rows = torch.randn(8192, 128, generator=g)
    tokens = torch.randint(0, 512, (8192,), generator=g)
    vocab_tokens = torch.randint(0, 50257, (8192,), generator=g)
    grad = torch.randn(8192, 384, generator=g)
    feature = torch.randn(128, 512, 4, 4, generator=g)
    pooled_grad = torch.randn(128, 512, 1, 1, generator=g)
    ebw = torch.ops.aten.embedding_dense_backward
    return [
        ("sum(0) [8192,384] (bias grad)", (act,), lambda x: x.sum(0)),
        ("mean(-1) [8192,384]", (act,), lambda x: x.mean(-1)),
        ("vector_norm 11M (clip_grad_norm_)", (params,), lambda x: torch.linalg.vector_norm(x)),
        ("sum 11M", (params,), lambda x: x.sum()),
        ("mean [8192] (loss)", (act[:, 0].contiguous(),), lambda x: x.mean()),
        ("argmax(-1) [8192,512]", (logits,), lambda x: x.argmax(-1)),
        ("amax(0) [8192,512]", (logits,), lambda x: x.amax(0)),
        ("var(0) [65536,256]", (batch,), lambda x: x.var(0)),
        ("logsumexp(-1) [8192,512]", (logits,), lambda x: torch.logsumexp(x, -1)),
        ("cumsum(-1) [16,65536]", (long_rows,), lambda x: x.cumsum(-1)),
        ("cumsum(-1) [8192,128]", (short_rows,), lambda x: x.cumsum(-1)),
        ("cumsum(0) [8192,128]", (short_rows,), lambda x: x.cumsum(0)),
        ("cummax(-1) [16,65536]", (long_rows,), lambda x: torch.cummax(x, -1)),
        ("embedding bw 8192x384 -> 512", (grad, tokens), lambda g, i: ebw(g, i, 512, -1, False)),
        ("embedding bw 8192x384 -> 50257", (grad, vocab_tokens), lambda g, i: ebw(g, i, 50257, -1, False)),
        ("index_add_ 8192x384 -> 512", (grad, tokens),
         lambda g, i: torch.zeros(512, 384, device=g.device).index_add_(0, i, g)),
        ("index_put_ acc 8192x384 -> 512", (grad, tokens),
         lambda g, i: torch.zeros(512, 384, device=g.device).index_put_((i,), g, accumulate=True)),
        ("adaptive_avg_pool2d 1x1 [128,512,4,4]", (feature,), lambda x: F.adaptive_avg_pool2d(x, 1)),
        ("adaptive_avg_pool2d 1x1 backward", (pooled_grad, feature),
         lambda go, x: torch.ops.aten._adaptive_avg_pool2d_backward(go, x)),
    ]


def synchronize(device):
    if device.startswith("opencl"):
        torch.opencl.synchronize()
    elif device.startswith("cuda"):
        torch.cuda.synchronize()


def median_ms(fn, inputs, device, repeats):
    fn(*inputs)
    synchronize(device)
    times = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn(*inputs)
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", action="append", help="repeatable; default: opencl")
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    devices = args.device or ["opencl"]
    if any(d.startswith("opencl") for d in devices):
        import torch_opencl  # noqa: F401

        props = torch_opencl._C._device_properties(0)
        print(f"opencl: {props['name']} | kernel class {props['kernel_class']} ({props['kernel_class_reason']})")
    print(f"torch {torch.__version__} | median of {args.repeats} (ms)")
    header = f"{'case':<40}" + "".join(f"{d:>12}" for d in devices)
    if len(devices) > 1:
        header += "".join(f"{d + '/' + devices[0]:>18}" for d in devices[1:])
    print(header)
    for name, inputs, fn in cases():
        ms = []
        for d in devices:
            on = tuple(t.to(d) for t in inputs)
            ms.append(median_ms(fn, on, d, args.repeats))
        row = f"{name:<40}" + "".join(f"{m:>12.3f}" for m in ms)
        row += "".join(f"{m / ms[0]:>18.2f}" for m in ms[1:])
        print(row, flush=True)


if __name__ == "__main__":
    main()
