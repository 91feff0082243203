"""Data-parallel training on several OpenCL devices with DistributedDataParallel.

    torchrun --nproc-per-node 2 examples/train_ddp.py
    POCL_DEVICES="pthread pthread" torchrun --nproc-per-node 2 examples/train_ddp.py   # PoCL: two CPU devices

Each process takes opencl:LOCAL_RANK, trains an MLP on its share of every batch of scikit-learn's 8x8
digits, and DDP averages the gradients between the processes through torch.distributed's opencl
backend (opencl_gloo, which torch-opencl registers: gloo's transport, staged through pinned memory).
Nothing is downloaded.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    import torch_opencl  # noqa: F401  (registers the "opencl" device; autoload usually has)
except ImportError as exc:
    sys.exit(f"error: the OpenCL backend is not installed (import torch_opencl failed: {exc})")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=128, help="global batch, split between the processes")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    parser.add_argument("--log-every", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    if "LOCAL_RANK" not in os.environ:
        sys.exit("error: start this script with torchrun, e.g. torchrun --nproc-per-node 2 examples/train_ddp.py")
    local_rank = int(os.environ["LOCAL_RANK"])
    if not torch.opencl.is_available():
        sys.exit("error: no usable OpenCL device (python -m torch_opencl shows why)")
    # One device per process; with fewer devices than processes they share.
    device = torch.device("opencl", local_rank % torch.opencl.device_count())
    torch.opencl.set_device(device)
    # No backend named: torch picks opencl_gloo for the accelerator's tensors, gloo for CPU tensors.
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank} on {device} ({torch.opencl.get_device_name(device)}), "
          f"backends {dist.get_backend_config()}", flush=True)

    digits = load_digits()
    images = torch.from_numpy(digits.data).float().div(16.0).to(device)
    labels = torch.from_numpy(digits.target).long().to(device)

    torch.manual_seed(args.seed)  # the same initial weights in every process (DDP also broadcasts rank 0's)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = torch.Generator().manual_seed(args.seed)  # the same batch order in every process

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        batch = torch.randint(len(images), (args.batch_size,), generator=batches)
        mine = batch.chunk(world)[rank].to(device)  # this process's share of the global batch
        optimizer.zero_grad()
        loss = loss_fn(model(images[mine]), labels[mine])
        loss.backward()  # DDP all-reduces the gradients in buckets while backward runs
        optimizer.step()
        if step % args.log_every == 0 or step == args.steps:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step} loss {mean.item():.4f}", flush=True)
    torch.opencl.synchronize()
    seconds = time.perf_counter() - start

    with torch.no_grad():
        accuracy = (model(images).argmax(1) == labels).float().mean().item()
    # Every process must hold the same weights after training: compare them all with rank 0's.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    identical = all(torch.equal(g, gathered[0]) for g in gathered)
    if rank == 0:
        print(f"{args.steps} steps in {seconds:.2f} s on {world} processes; accuracy on all digits {accuracy:.2%}; "
              f"replicas identical: {identical}", flush=True)
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
