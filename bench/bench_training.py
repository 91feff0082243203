"""Training-step time of three workloads on opencl and on CPU, in one process.

  MLP          784-256-256-10, ReLU, dropout, AdamW, batch 128
  digits CNN   the examples/train_digits.py model (conv 1->16->32, max-pool, linear), Adam, batch 64
  transformer  embeddings, 2 layers of causal self-attention (scaled_dot_product_attention),
               LayerNorm, GELU, AdamW, clip_grad_norm_; vocab 256, seq 64, width 64, batch 16

Prints the median step time of each on both devices, the ratio opencl/cpu, and the
operators the CPU fallback served on opencl (none, when the workload runs natively).

    .venv/bin/python bench/bench_training.py [--steps 20] [--warmup 3]
"""
import argparse
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


def sync(device):
    if device.type == "opencl":
        torch.opencl.synchronize()


def step_times(make, device, steps, warmup):
    torch.manual_seed(0)
    model, (x, y), make_opt, loss_fn = make()
    model, x, y = model.to(device), x.to(device), y.to(device)
    opt = make_opt(model)
    times = []
    for i in range(warmup + steps):
        sync(device)
        start = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    import torch_opencl  # noqa: F401

    torch.opencl.set_fallback_mode("silent")
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | median of {args.steps} steps")
    print(f"{'workload':<14}{'cpu ms':>10}{'opencl ms':>12}{'opencl/cpu':>12}  fallback ops on opencl")
    for name, make in (("MLP", mlp), ("digits CNN", digits_cnn), ("transformer", transformer)):
        cpu = step_times(make, torch.device("cpu"), args.steps, args.warmup)
        torch.opencl.reset_fallback_stats()
        dev = step_times(make, torch.device("opencl"), args.steps, args.warmup)
        served = sorted(torch.opencl.fallback_stats())
        print(f"{name:<14}{cpu:>10.2f}{dev:>12.2f}{dev / cpu:>12.2f}  {', '.join(served) or 'none'}")


if __name__ == "__main__":
    main()
