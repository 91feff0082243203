"""Forward + backward of the native nn operators (softmax/cross_entropy, layer_norm,
batch_norm, max_pool2d, dropout, embedding) on cpu and opencl in one process: medians and ratio.

    python bench/bench_nn.py [--repeat N]
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
import torch_opencl  # noqa: F401


def sync(device):
    if device == "opencl":
        torch.opencl.synchronize()


def workloads(device):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(256, 10, generator=g).to(device).requires_grad_()
    target = torch.randint(0, 10, (256,), generator=g).to(device)
    tokens = torch.randn(64, 128, 64, generator=g).to(device).requires_grad_()
    lw, lb = torch.ones(64, device=device, requires_grad=True), torch.zeros(64, device=device, requires_grad=True)
    images = torch.randn(64, 16, 8, 8, generator=g).to(device).requires_grad_()
    hidden = torch.randn(128, 256, generator=g).to(device).requires_grad_()
    emb = torch.randn(1000, 64, generator=g).to(device).requires_grad_()
    ids = torch.randint(0, 1000, (64, 32), generator=g).to(device)
    return {
        "cross_entropy 256x10": lambda: F.cross_entropy(logits, target).backward(),
        "softmax 8192x64": lambda: F.softmax(tokens, -1).backward(
            torch.ones_like(tokens)),
        "layer_norm 8192x64": lambda: F.layer_norm(tokens, (64,), lw, lb).backward(torch.ones_like(tokens)),
        "batch_norm 64x16x8x8": lambda: F.batch_norm(images, None, None, training=True).backward(
            torch.ones_like(images)),
        "max_pool2d 64x16x8x8": lambda: F.max_pool2d(images, 2).backward(torch.ones(64, 16, 4, 4, device=device)),
        "max_pool2d 3x3 s1 64x16x8x8": lambda: F.max_pool2d(images, 3, 1, 1).backward(torch.ones_like(images)),
        "dropout 128x256": lambda: F.dropout(hidden, 0.1, training=True).backward(torch.ones_like(hidden)),
        "embedding 2048 of 1000x64": lambda: F.embedding(ids, emb).backward(torch.ones(64, 32, 64, device=device)),
    }


def median_ms(fn, device, repeat):
    fn()
    sync(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    cpu, dev = workloads("cpu"), workloads("opencl")
    print(f"{'workload':28s} {'cpu ms':>9s} {'opencl ms':>10s} {'opencl/cpu':>10s}")
    for name in cpu:
        c, d = median_ms(cpu[name], "cpu", args.repeat), median_ms(dev[name], "opencl", args.repeat)
        print(f"{name:28s} {c:9.3f} {d:10.3f} {d / c:10.2f}")
    stats = torch.opencl.fallback_stats()
    print("fallback ops during the run:", dict(stats) if stats else "none")


if __name__ == "__main__":
    main()
