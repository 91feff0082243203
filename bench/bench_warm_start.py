"""A warm start: the first training step of a fresh process whose kernel caches are already full, against
its later steps.

Each run is a new process (the first one, untimed, fills the caches): it times the import, the model's
move to the device, the first training step and the median of the later ones, and counts what the first
step asked of the program cache. The same on CPU PyTorch is the reference (its first step costs a few later
steps; on one thread by default, --cpu-threads). Workloads:

  transformer  bench/bench_training.py's: 2 layers of causal self-attention, width 64, seq 64, batch 16, AdamW
  resnet18     ResNet-18's layout (BasicBlock x [2, 2, 2, 2], batch norm, max/average pooling), widths 16..128,
               batch 8 of 3x32x32, SGD with momentum

Prints per workload and device the medians over --runs processes: the first step, a later step, their
ratio, and for opencl the programs the first step built (all from the caches in a warm start), the seconds
the driver took for them, and the programs it compiled.

    .venv/bin/python bench/bench_warm_start.py [--runs 5] [--steps 6] [--only transformer,resnet18] [--cpu-threads 1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(name, device_name, steps, cpu_threads):
    t0 = time.perf_counter()
    import torch

    if device_name == "cpu" and cpu_threads:
        torch.set_num_threads(cpu_threads)
    from torch import nn
    from torch.nn import functional as F

    if device_name == "opencl":
        import torch_opencl  # noqa: F401
    imported = time.perf_counter() - t0
    sys.path.insert(0, HERE)
    from bench_training import transformer

    from bench_vs_cuda import BasicBlock as Block  # the residual block of the GPU benchmark's CNN

    def resnet18():
        widths = (16, 32, 64, 128)
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            layers += [Block(cin, w, 1 if i == 0 else 2), Block(w, w, 1)]
            cin = w
        model = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(),
                              nn.MaxPool2d(3, 2, 1), *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(cin, 10))
        data = (torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,)))
        return (model, data, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
                lambda m, x, y: F.cross_entropy(m(x), y))

    device = torch.device(device_name)
    sync = torch.opencl.synchronize if device_name == "opencl" else (lambda: None)
    stats = (lambda: torch.opencl._C._program_cache_stats()) if device_name == "opencl" else dict
    torch.manual_seed(0)
    t = time.perf_counter()
    model, (x, y), make_opt, loss_fn = {"transformer": transformer, "resnet18": resnet18}[name]()
    model, x, y = model.to(device), x.to(device), y.to(device)
    opt = make_opt(model)
    sync()
    moved = time.perf_counter() - t
    times = []
    before = stats()
    for i in range(steps):
        t = time.perf_counter()
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        opt.step()
        sync()
        times.append(time.perf_counter() - t)
        if i == 0:
            after = stats()
    first = {k: after[k] - before[k] for k in after}
    print(json.dumps({"import": imported, "move": moved, "first": times[0], "later": statistics.median(times[1:]),
                      "stats": first}))


def run_child(name, device, steps, cpu_threads):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--device", device,
                          "--steps", str(steps), "--cpu-threads", str(cpu_threads)],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{name} on {device} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed processes per workload and device")
    parser.add_argument("--steps", type=int, default=6, help="training steps per process (the first is timed alone)")
    parser.add_argument("--only", default="transformer,resnet18")
    parser.add_argument("--cpu-threads", type=int, default=1,
                        help="CPU PyTorch's threads (0: its default; on a busy machine its spinning threads make "
                             "the first step seconds long)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="opencl", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.device, args.steps, args.cpu_threads)
    print(f"warm start: medians of {args.runs} processes, {args.steps} steps each (caches filled by an untimed run); "
          f"CPU PyTorch on {args.cpu_threads or 'its default'} thread(s)")
    print(f"{'workload':<13}{'device':<8}{'import s':>9}{'move s':>8}{'first s':>9}{'later ms':>10}{'first/later':>13}"
          f"{'built':>7}{'build s':>9}{'compiled':>10}")
    for name in args.only.split(","):
        for device in ("cpu", "opencl"):
            if device == "opencl":
                run_child(name, device, 2, args.cpu_threads)  # fills the caches
            runs = [run_child(name, device, args.steps, args.cpu_threads) for _ in range(args.runs)]
            med = {k: statistics.median(r[k] for r in runs) for k in ("import", "move", "first", "later")}
            line = (f"{name:<13}{device:<8}{med['import']:>9.2f}{med['move']:>8.2f}{med['first']:>9.3f}"
                    f"{med['later'] * 1e3:>10.1f}{med['first'] / med['later']:>13.1f}")
            if device == "opencl":
                s = [r["stats"] for r in runs]
                built = statistics.median(x["source_builds"] + x["disk_loads"] for x in s)
                # A build without driver_cache_loads in the stats cannot tell PoCL's cache hits from compiles.
                compiled = (f"{statistics.median(x['source_builds'] - x['driver_cache_loads'] for x in s):>10.0f}"
                            if "driver_cache_loads" in s[0] else f"{'?':>10}")
                line += f"{built:>7.0f}{statistics.median(x['build_seconds'] for x in s):>9.2f}{compiled}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
