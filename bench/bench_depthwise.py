"""Depthwise convolutions and the EfficientNet/MobileNet blocks built on them: forward + backward on opencl
(the direct forms of kernels_cl/conv_depthwise.cl) against CPU PyTorch in the same run. Medians of --reps;
ratio = opencl time / CPU time (below 1: opencl faster).

    python bench/bench_depthwise.py [--reps 9] [--batch 16]

The block is an MBConv (1x1 expansion x4, depthwise k x k, squeeze-excitation, 1x1 projection, batch norms,
SiLU) at EfficientNet-B0's early stage sizes; the step is AdamW's training step of two blocks.
"""
import argparse
import copy

import torch
import torch.nn.functional as F
from torch import nn

import torch_opencl  # noqa: F401

from _timing import median_seconds


class MBConv(nn.Module):
    """An EfficientNet MBConv block: 1x1 expansion, depthwise k x k (stride s), squeeze-excitation, 1x1
    projection, batch norms and SiLU, residual where the shape allows (test_conv_depthwise.py trains it too)."""

    def __init__(self, cin, cout, k, stride, expand=4):
        super().__init__()
        mid, squeeze = cin * expand, max(1, cin // 4)
        self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
        self.depthwise = nn.Sequential(nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
                                       nn.BatchNorm2d(mid), nn.SiLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, squeeze, 1), nn.SiLU(),
                                nn.Conv2d(squeeze, mid, 1), nn.Sigmoid())
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        y = self.project(y * self.se(y))
        return x + y if self.residual else y


def sync(device):
    if device != "cpu":
        torch.opencl.synchronize()


def conv_step(device, shape, k, stride, reps):
    n, c, side = shape
    x = torch.randn(n, c, side, side, device=device, requires_grad=True)
    w = torch.randn(c, 1, k, k, device=device, requires_grad=True)
    g = torch.randn_like(F.conv2d(x.detach(), w.detach(), stride=stride, padding=k // 2, groups=c))

    def step():
        x.grad = w.grad = None
        F.conv2d(x, w, stride=stride, padding=k // 2, groups=c).backward(g)
        sync(device)

    return median_seconds(step, reps)


def block_step(model, device, batch, reps):
    model = copy.deepcopy(model).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 16, 56, 56, device=device)

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        sync(device)

    return median_seconds(step, reps)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--batch", type=int, default=16)
    a = p.parse_args()
    torch.manual_seed(0)
    print(f"opencl device: {torch.opencl.get_device_name()}; CPU threads: {torch.get_num_threads()}; "
          f"medians of {a.reps} (ms)")
    print(f"{'depthwise conv fwd+bwd':<34} {'opencl':>8} {'cpu':>8} {'ratio':>6}")
    for k in (3, 5):
        for stride in (1, 2):
            shape = (a.batch, 64, 56)
            times = [conv_step(d, shape, k, stride, a.reps) * 1e3 for d in ("opencl", "cpu")]
            name = f"{shape[1]}ch {shape[2]}x{shape[2]} k{k} s{stride}"
            print(f"{name:<34} {times[0]:8.2f} {times[1]:8.2f} {times[0] / times[1]:6.2f}")
    model = nn.Sequential(MBConv(16, 16, 3, 1), MBConv(16, 24, 5, 2))
    times = [block_step(model, d, a.batch, a.reps) * 1e3 for d in ("opencl", "cpu")]
    print(f"{'MBConv x2 AdamW step, 16x56x56':<34} {times[0]:8.2f} {times[1]:8.2f} {times[0] / times[1]:6.2f}")


if __name__ == "__main__":
    main()
