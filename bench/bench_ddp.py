"""DistributedDataParallel training step on 1 and on 2 ranks: opencl (opencl_gloo) against CPU (gloo).

Each rank is a process of its own on opencl:RANK (PoCL: POCL_DEVICES="pthread pthread", set here when
unset). For each device, in the same processes and process group, it prints the median time of

  step      a DDP training step (forward, backward with the gradient all-reduce, SGD) on the rank's
            share of a global batch of --batch samples;
  no comm   the same step inside DDP's no_sync(), which skips the all-reduce;
  comm      the share of the step that communication costs: 1 - no comm / step;
  allreduce one all-reduce of all gradients as a single tensor (size printed), alone;

and the ratio opencl/cpu of each. The model is an MLP of --width (default 1024: 1.9M parameters).

    .venv/bin/python bench/bench_ddp.py [--steps 20] [--batch 256] [--width 1024] [--ranks 1 2]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = args.rank, args.world
    dev = torch.device("opencl", rank % torch.opencl.device_count())
    torch.opencl.set_device(dev)
    dist.init_process_group("gloo", init_method=f"file://{args.store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))

    def sync(device):
        if device.type == "opencl":
            torch.opencl.synchronize()

    def median(fn, device):
        for _ in range(args.warmup):
            fn()
        sync(device)
        dist.barrier()
        samples = []
        for _ in range(args.steps):
            sync(device)
            t0 = time.perf_counter()
            fn()
            sync(device)
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)

    results = {}
    for device in (torch.device("cpu"), dev):
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(784, args.width), nn.ReLU(), nn.Linear(args.width, args.width),
                                  nn.ReLU(), nn.Linear(args.width, 10)).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(args.batch // world, 784, device=device)
        y = torch.randint(0, 10, (args.batch // world,), device=device)

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        def step_no_comm():
            with model.no_sync():
                step()

        grads = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

        def allreduce():
            dist.all_reduce(grads)

        results[device.type] = {
            "step": median(step, device),
            "no_comm": median(step_no_comm, device),
            "allreduce": median(allreduce, device),
            "megabytes": grads.numel() * 4 / 1e6,
        }
    if rank == 0:
        print(json.dumps(results), flush=True)
    dist.destroy_process_group()


def launch(args, world):
    env = dict(os.environ)
    env.setdefault("POCL_DEVICES", "pthread pthread")
    with tempfile.TemporaryDirectory() as tmp:
        procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--world", str(world),
                                   "--store", os.path.join(tmp, "store"), "--steps", str(args.steps),
                                   "--warmup", str(args.warmup), "--batch", str(args.batch),
                                   "--width", str(args.width)],
                                  env=env, stdout=subprocess.PIPE, text=True) for r in range(world)]
        outs = [p.communicate(timeout=1800)[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit(f"a rank failed: exit codes {[p.returncode for p in procs]}")
    return json.loads(outs[0].strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--world", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args)

    print(f"DDP training step, MLP 784-{args.width}-{args.width}-10, global batch {args.batch}, "
          f"median of {args.steps} steps")
    print(f"{'ranks':>5} {'device':>7} {'step ms':>9} {'no comm ms':>11} {'comm':>6} {'allreduce ms':>13} {'MB':>6}")
    for world in args.ranks:
        r = launch(args, world)
        for device in ("cpu", "opencl"):
            m = r[device]
            print(f"{world:>5} {device:>7} {m['step'] * 1e3:9.2f} {m['no_comm'] * 1e3:11.2f} "
                  f"{1 - m['no_comm'] / m['step']:6.0%} {m['allreduce'] * 1e3:13.2f} {m['megabytes']:6.1f}")
        o, c = r["opencl"], r["cpu"]
        print(f"{world:>5} {'ratio':>7} {o['step'] / c['step']:9.2f} {o['no_comm'] / c['no_comm']:11.2f} "
              f"{'':>6} {o['allreduce'] / c['allreduce']:13.2f}   (opencl/cpu)")


if __name__ == "__main__":
    main()
