"""Train a small CNN on scikit-learn's 8x8 digits on the OpenCL device.

    python examples/train_digits.py                     # on torch.device("opencl")
    python examples/train_digits.py --compare-cpu       # then again on CPU, compare times
    python examples/train_digits.py --device cpu        # no OpenCL needed

The dataset ships with scikit-learn, so nothing is downloaded.
"""

import argparse
import sys
import time

import numpy as np
import torch
from torch import nn
from sklearn.datasets import load_digits
from tqdm import tqdm

try:
    # Registers the "opencl" device; with torch's backend autoload it is already imported.
    import torch_opencl  # noqa: F401
except ImportError as exc:
    TORCH_OPENCL_IMPORT_ERROR = exc
else:
    TORCH_OPENCL_IMPORT_ERROR = None

TEST_FRACTION = 0.2
SPLIT_SEED = 0  # fixed, so that --seed never changes the test set


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="opencl", help='device to train on (default: "opencl")')
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seeds model init and batch order")
    parser.add_argument("--compare-cpu", action="store_true",
                        help="afterwards run the identical training on CPU and compare total times")
    parser.add_argument("--limit-batches", type=int, default=None,
                        help="stop each epoch after this many batches (for quick tests)")
    return parser.parse_args()


def check_opencl():
    """Exit with a readable message instead of a traceback when OpenCL cannot be used."""
    if not hasattr(torch, "opencl"):
        sys.exit(f"error: the OpenCL backend is not installed (import torch_opencl failed: "
                 f"{TORCH_OPENCL_IMPORT_ERROR}). Use --device cpu to train without it.")
    if not torch.opencl.is_available():
        sys.exit("error: torch.opencl.is_available() is False: no usable OpenCL device was found. "
                 "Use --device cpu to train without it.")


def synchronize(device):
    # Device work is asynchronous; wait for it so that timings cover the real work.
    if device.type == "opencl":
        torch.opencl.synchronize()


def load_data():
    """Digits as float [N,1,8,8] in [0,1], split into train and test sets the same way on every run."""
    digits = load_digits()
    images = torch.from_numpy(digits.data).float().div(16.0).reshape(-1, 1, 8, 8)
    labels = torch.from_numpy(digits.target).long()
    # The file is ordered by writer; a fixed shuffle mixes writers into both sets.
    order = torch.from_numpy(np.random.default_rng(SPLIT_SEED).permutation(len(images)))
    images, labels = images[order], labels[order]
    num_train = int(len(images) * (1 - TEST_FRACTION))
    return (images[:num_train], labels[:num_train]), (images[num_train:], labels[num_train:])


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(64, 10),
    )


def evaluate(model, images, labels):
    model.eval()
    with torch.no_grad():
        predictions = model(images).argmax(dim=1)
    return (predictions == labels).float().mean().item()


def train(device, args, train_set, test_set):
    """Train from scratch on `device`; returns the total seconds spent in the epochs."""
    torch.manual_seed(args.seed)
    # Created on CPU first so that every device starts from the same weights.
    model = make_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    train_images, train_labels = (t.to(device) for t in train_set)
    test_images, test_labels = (t.to(device) for t in test_set)
    # Shuffling happens on CPU with its own generator, so every device sees the same batch order.
    shuffle_generator = torch.Generator().manual_seed(args.seed)

    total_seconds = 0.0
    for epoch in range(1, args.epochs + 1):
        synchronize(device)
        start = time.perf_counter()

        model.train()
        order = torch.randperm(len(train_images), generator=shuffle_generator).to(device)
        batches = order.split(args.batch_size)[:args.limit_batches]
        # Summed on the device: reading the loss every batch would force a sync per batch.
        loss_sum = torch.zeros((), device=device)
        for batch_indices in tqdm(batches, desc=f"epoch {epoch}/{args.epochs}", unit="batch", leave=False):
            images = train_images.index_select(0, batch_indices)
            labels = train_labels.index_select(0, batch_indices)
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
        mean_loss = loss_sum.item() / len(batches)
        accuracy = evaluate(model, test_images, test_labels)

        synchronize(device)
        seconds = time.perf_counter() - start
        total_seconds += seconds
        print(f"epoch {epoch}: train loss {mean_loss:.4f}  test accuracy {accuracy:.2%}  ({seconds:.2f} s)")
    return total_seconds


def print_fallback_report():
    stats = torch.opencl.fallback_stats()
    print("Fallback report:")
    if not stats:
        print("  no operator needed the CPU fallback")
        return
    for name, calls in sorted(stats.items(), key=lambda item: item[1], reverse=True):
        print(f"  {calls:8d}  {name}")


def main():
    args = parse_args()
    # Checked on the string: torch.device("opencl") itself fails while the backend is missing.
    uses_opencl = args.device.split(":")[0] == "opencl"
    if uses_opencl:
        check_opencl()
        torch.opencl.reset_fallback_stats()
    device = torch.device(args.device)
    print(f"Device: {device}" + (f" ({torch.opencl.get_device_name()})" if uses_opencl else ""))

    train_set, test_set = load_data()
    print(f"Digits: {len(train_set[0])} train / {len(test_set[0])} test images")

    device_seconds = train(device, args, train_set, test_set)
    print(f"Total training time on {device}: {device_seconds:.2f} s")

    if args.compare_cpu:
        print("Same training on cpu:")
        cpu_seconds = train(torch.device("cpu"), args, train_set, test_set)
        print(f"Total time: {device} {device_seconds:.2f} s, cpu {cpu_seconds:.2f} s, "
              f"ratio {device}/cpu {device_seconds / cpu_seconds:.2f}")

    if uses_opencl:
        print_fallback_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
