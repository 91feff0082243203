"""``python -m torch_opencl warmup``: compile the OpenCL kernels training commonly needs, ahead of time.

On a fresh machine each kernel compiles on its first use: tens of seconds in all on PoCL, during
which a first training epoch sits at its first batch. This runs a few small training steps (the
digits CNN of examples/train_digits.py, an MLP, a CNN with batch norm, a transformer block; SGD,
Adam, AdamW; evaluation), so their programs land in the disk caches and a training run afterwards
starts at full speed. A model with other operators still compiles those on first use; ``--only``
picks the workloads closest to what you train (the fewer, the sooner done).

    python -m torch_opencl warmup [--only digits,transformer,...] [--jobs N] [--device opencl:0]

The workloads run in ``--jobs`` processes at once (default: the CPU count, at most 4): processes
compile in parallel on every driver (PoCL compiles one program at a time per process). With
``--jobs 1``, or from Python as ``warmup(jobs=1)``, they run in this process, which then also keeps
the programs in memory.
"""
import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import torch
from torch import nn
from torch.nn import functional as F

from . import _C


def _steps(device, model, batches, make_optimizer, loss_fn, steps=2, clip=None):
    """Training steps on each (inputs, targets) batch, then an evaluation pass, as a training loop runs them."""
    # Fills and copies of a few MiB (larger models' zeros and clones): kernels of the backend's own where the
    # driver's are slow (runtime/kernel_forms.h, bulk memory).
    torch.zeros(1 << 21, device=device).clone()
    model = model.to(device)
    optimizer = make_optimizer(model.parameters())
    for _ in range(steps):
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
    model.eval()
    with torch.no_grad():
        x, y = batches[0][0].to(device), batches[0][1].to(device)
        out = model(x)
        if out.dim() == 2 and y.dtype == torch.long:
            (out.argmax(dim=1) == y).float().mean().item()
        else:
            out.float().sum().item()


def _digits_cnn(device):
    # examples/train_digits.py: its batches of 64, the last one of 29, index_select from the device-side
    # data set, the loss summed on the device, evaluation by argmax.
    images, labels = torch.rand(100, 1, 8, 8), torch.randint(0, 10, (100,))
    images, labels = images.to(device), labels.to(device)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_sum = torch.zeros((), device=device)
    for _ in range(2):
        model.train()
        order = torch.randperm(len(images)).to(device)
        for batch in (order[:64], order[64:93]):
            x, y = images.index_select(0, batch), labels.index_select(0, batch)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
        loss_sum.item()
        model.eval()
        with torch.no_grad():
            (model(images).argmax(dim=1) == labels).float().mean().item()


def _mlp_adamw(device):
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))
    batches = [(torch.randn(128, 784), torch.randint(0, 10, (128,))), (torch.randn(37, 784), torch.randint(0, 10, (37,)))]
    _steps(device, model, batches, lambda p: torch.optim.AdamW(p, lr=1e-3), F.cross_entropy, clip=1.0)


def _mlp_sgd(device):
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Sigmoid(), nn.Linear(64, 1))
    batches = [(torch.randn(64, 32), torch.randn(64, 1))]
    _steps(device, model, batches, lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=1e-4), F.mse_loss)


def _cnn_batchnorm(device):
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AvgPool2d(2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    batches = [(torch.randn(32, 3, 16, 16), torch.randint(0, 10, (32,)))]
    _steps(device, model, batches, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), F.cross_entropy)


class _Block(nn.Module):
    def __init__(self, width=64, heads=4):
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


class _TinyTransformer(nn.Module):
    def __init__(self, vocab=256, seq=32, width=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.block, self.ln, self.head = _Block(width), nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.ln(self.block(self.tok(idx) + self.pos(pos))))


def _transformer(device):
    tokens = torch.randint(0, 256, (8, 33))
    batches = [(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())]
    _steps(device, _TinyTransformer(), batches, lambda p: torch.optim.AdamW(p, lr=1e-3),
           lambda out, y: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)), clip=1.0)


# (key for --only, what it trains, the workload); slowest first, so that parallel workers finish together.
WORKLOADS = [
    ("digits", "digits CNN, Adam (examples/train_digits.py)", _digits_cnn),
    ("transformer", "transformer block, AdamW", _transformer),
    ("batchnorm", "CNN with batch norm, SGD", _cnn_batchnorm),
    ("mlp-adamw", "MLP, AdamW, dropout, clip_grad_norm_", _mlp_adamw),
    ("mlp-sgd", "MLP, SGD with momentum, MSE", _mlp_sgd),
]


def select(only=None):
    """Indices of the workloads whose keys are in `only` (a list of keys; None: all)."""
    if not only:
        return list(range(len(WORKLOADS)))
    keys = [key for key, _, _ in WORKLOADS]
    unknown = [name for name in only if name not in keys]
    if unknown:
        raise ValueError(f"warmup: no workload named {', '.join(map(repr, unknown))}; the workloads are "
                         f"{', '.join(keys)}")
    return [keys.index(name) for name in only]


def _compiled(stats):
    """Programs compiled, of _C._program_cache_stats(): a build from source that PoCL answered from its own kernel
    cache compiled nothing."""
    return stats["source_builds"] - stats["driver_cache_loads"]


def _loaded(stats):
    """Programs loaded from a disk cache, ours or the driver's, of _C._program_cache_stats()."""
    return stats["disk_loads"] + stats["driver_cache_loads"]


def _run(index, device):
    """Runs one workload; returns what it compiled. In a worker process or in this one."""
    _, name, workload = WORKLOADS[index]
    before = _C._program_cache_stats()
    mode = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")  # an operator on the CPU fallback compiles nothing: not our concern here
    start = time.perf_counter()
    try:
        torch.manual_seed(index)
        workload(torch.device(device))
        torch.opencl.synchronize(device)  # launches compile kernels too (PoCL): wait for them
    finally:
        torch.opencl.set_fallback_mode(mode)
    after = _C._program_cache_stats()
    return {
        "name": name,
        "seconds": time.perf_counter() - start,
        "compiled": _compiled(after) - _compiled(before),
        "loaded": _loaded(after) - _loaded(before),
        "device_name": torch.opencl.get_device_name(device),
        "cache": _C._program_cache_location(torch.device(device).index or 0),
    }


def _worker_init():
    _C._set_compile_notice(False)  # the progress bar says what happens


class _Progress:
    """tqdm's bar where tqdm is installed, else one line per finished workload."""

    def __init__(self, total, enabled):
        self.bar = None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc="compiling OpenCL kernels", unit="workload", file=sys.stderr)

    def done(self, result):
        if self.bar is not None:
            self.bar.set_postfix_str(result["name"][:40])
            self.bar.update(1)
        elif self.enabled:
            print(f"  {result['name']}: {result['compiled']} programs compiled in {result['seconds']:.1f} s",
                  file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def warmup(device="opencl", jobs=None, progress=True, only=None):
    """Compiles the kernels of the training workloads above on `device`; returns a summary dict.

    jobs: processes to spread the workloads over (default: the CPU count, at most 4); 1 runs them here.
    A process that has already used the device runs them here too (a fork could not use it).
    only: keys of the workloads to run (default: all), e.g. ["digits"].
    """
    chosen = select(only)
    device = str(torch.device(device) if torch.device(device).index is not None else torch.device(device, 0))
    if jobs is None:
        jobs = min(os.cpu_count() or 1, 4)
    jobs = max(1, min(jobs, len(chosen)))
    if _C._is_initialized():
        jobs = 1  # a fork of this process could not use the device
    start = time.perf_counter()
    bar = _Progress(len(chosen), progress)
    results = []
    try:
        if jobs == 1:
            _C._set_compile_notice(False)
            try:
                for index in chosen:
                    results.append(_run(index, device))
                    bar.done(results[-1])
            finally:
                _C._set_compile_notice(True)
        else:
            # Forked before this process touches OpenCL, so each worker opens the device itself.
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_init) as pool:
                futures = [pool.submit(_run, index, device) for index in chosen]
                for future in as_completed(futures):
                    results.append(future.result())
                    bar.done(results[-1])
    finally:
        bar.close()
    return {
        "device": device,
        "device_name": results[0]["device_name"] if results else "",
        "cache": results[0]["cache"] if results else "",
        "jobs": jobs,
        "seconds": time.perf_counter() - start,
        "compiled": sum(r["compiled"] for r in results),
        "loaded": sum(r["loaded"] for r in results),
        "workloads": results,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torch_opencl warmup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="opencl", help='device to compile for (default: "opencl", i.e. opencl:0)')
    parser.add_argument("--jobs", type=int, default=None, help="processes at once (default: CPU count, at most 4)")
    parser.add_argument("--only", default=None,
                        help="comma-separated workloads to run (default: all): "
                             + ", ".join(key for key, _, _ in WORKLOADS))
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    try:
        select(only)
    except ValueError as exc:
        parser.error(str(exc))
    # No device query here: the workers are forked before this process touches OpenCL.
    try:
        summary = warmup(args.device, jobs=args.jobs, progress=not args.quiet, only=only)
    except RuntimeError as exc:
        print(f"warmup failed: {exc}\n(python -m torch_opencl reports the OpenCL set-up)", file=sys.stderr)
        return 1
    print(f"warmup: {summary['compiled']} programs compiled ({summary['loaded']} already cached) for "
          f"{summary['device_name']} in {summary['seconds']:.1f} s with {summary['jobs']} process(es); "
          + (f"kept in {summary['cache']}" if summary["cache"] else "not kept: TORCH_OPENCL_CACHE=0"))
    return 0
