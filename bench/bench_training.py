"""Training-step time of three workloads on opencl and on CPU, in one process.

  MLP          784-256-256-10, ReLU, dropout, AdamW, batch 128
  digits CNN   the examples/train_digits.py model (conv 1->16->32, max-pool, linear), Adam, batch 64
  transformer  embeddings, 2 layers of causal self-attention (scaled_dot_product_attention),
               LayerNorm, GELU, AdamW, clip_grad_norm_; vocab 256, seq 64, width 64, batch 16

Prints the median step time of each on both devices, the ratio opencl/cpu, the kernels
an opencl step launches (our kernels; CLBlast's own launches are not counted), and the
operators the CPU fallback served on opencl (none, when the workload runs natively).
--kernels also lists the kernels of one opencl step by name.

    .venv/bin/python bench/bench_training.py [--steps 20] [--warmup 3] [--kernels]
"""
import argparse
import collections
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F


def mlp():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    data = (torch.randn(128, 784), torch.randint(0, 10, (128,)))
    return model, data, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3), lambda m, x, y: F.cross_entropy(m(x), y)


def digits_cnn():
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(64, 10))
    data = (torch.randn(64, 1, 8, 8), torch.randint(0, 10, (64,)))
    return model, data, lambda m: torch.optim.Adam(m.parameters(), lr=1e-2), lambda m, x, y: F.cross_entropy(m(x), y)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=256, seq=64, width=64, heads=4, layers=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(pos))))


def transformer():
    model = TinyTransformer()
    tokens = torch.randint(0, 256, (16, 65))
    data = (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())

    def loss(m, x, y):
        return F.cross_entropy(m(x).reshape(-1, 256), y.reshape(-1))

    return model, data, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3), loss


# The workloads by name: (model, (inputs, targets), optimizer of a model, loss of a model on a batch) each, built
# from the global generator (test/test_half_training.py trains them too).
WORKLOADS = {"MLP": mlp, "digits CNN": digits_cnn, "transformer": transformer}


def sync(device):
    if device.type == "opencl":
        torch.opencl.synchronize()


def step_times(make, device, steps, warmup):
    """(median ms, kernel launches per step or None on CPU, the kernel names of the last step)."""
    torch.manual_seed(0)
    model, (x, y), make_opt, loss_fn = make()
    model, x, y = model.to(device), x.to(device), y.to(device)
    opt = make_opt(model)
    on_opencl = device.type == "opencl"
    C = torch.opencl._C if on_opencl else None
    times, launches = [], 0
    for i in range(warmup + steps):
        last = i == warmup + steps - 1
        sync(device)
        if on_opencl and last:
            C._record_kernel_names(True)
        before = C._launch_count() if on_opencl else 0
        start = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - start)
            launches += C._launch_count() - before if on_opencl else 0
    names = []
    if on_opencl:
        C._record_kernel_names(False)
        names = C._recorded_kernel_names()
    return statistics.median(times) * 1e3, launches / steps if on_opencl else None, names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--kernels", action="store_true", help="list the kernels of one opencl step")
    args = parser.parse_args()
    import torch_opencl  # noqa: F401

    torch.opencl.set_fallback_mode("silent")
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | median of {args.steps} steps")
    print(f"{'workload':<14}{'cpu ms':>10}{'opencl ms':>12}{'opencl/cpu':>12}{'launches':>10}  fallback ops on opencl")
    for name, make in WORKLOADS.items():
        cpu, _, _ = step_times(make, torch.device("cpu"), args.steps, args.warmup)
        torch.opencl.reset_fallback_stats()
        dev, launches, names = step_times(make, torch.device("opencl"), args.steps, args.warmup)
        served = sorted(torch.opencl.fallback_stats())
        print(f"{name:<14}{cpu:>10.2f}{dev:>12.2f}{dev / cpu:>12.2f}{launches:>10.0f}  {', '.join(served) or 'none'}",
              flush=True)
        if args.kernels:
            print("    " + ", ".join(f"{k} x{v}" for k, v in sorted(collections.Counter(names).items())))


if __name__ == "__main__":
    main()
