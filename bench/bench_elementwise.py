"""Elementwise engine: launch overhead and bandwidth, opencl vs CPU PyTorch in one run.

(a) small add (1K floats), N ops enqueued asynchronously then one synchronize: us per op, for the
    out=, functional (a + b) and in-place (a.add_(b)) forms; with the spread (min-max over repeats)
    and the process's CPU time (user+sys, all threads, the driver's included) per op, which depends
    less on other load than wall time does.
(b) large add (16M floats): GB/s counted as 3 x 4 bytes per element (two reads, one write),
    against a device-to-device copy_ of the same size (8 bytes per element) as the copy reference.
(c) strided and broadcast shapes of training steps, us per op: .contiguous() of a head transpose
    [16,64,4,16] -> [16,4,64,16] and of a 1024x1024 transpose, a broadcast bias add
    [64,32,28,28] + [32,1,1], and gelu_backward over 262K floats.
Medians over repeats; ratios printed. Targets (reported, not asserted): small-op overhead
<= 15 us, large add >= 80% of copy bandwidth.

    .venv/bin/python bench/bench_elementwise.py [--small-ops 2000] [--repeats 5] [--large 16777216]
"""
import argparse
import resource
import statistics
import time

import torch
import torch_opencl  # noqa: F401

from _timing import median_device_seconds, synchronize


def small_op_stats(fn, device, n_ops, repeats):
    """us per op of fn() (n_ops ops): wall median, min, max and median CPU time (user+sys, all threads)."""
    fn()
    synchronize(device)
    walls, cpus = [], []
    for _ in range(repeats):
        synchronize(device)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        fn()
        synchronize(device)
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        walls.append((t1 - t0) / n_ops * 1e6)
        cpus.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / n_ops * 1e6)
    return dict(median=statistics.median(walls), min=min(walls), max=max(walls), cpu=statistics.median(cpus))


def small_add(device, n_ops, repeats):
    a = torch.randn(1024, device=device)
    b = torch.randn(1024, device=device)
    out = torch.empty(1024, device=device)

    def run():
        for _ in range(n_ops):
            torch.add(a, b, out=out)
    return small_op_stats(run, device, n_ops, repeats)


def small_add_functional(device, n_ops, repeats):
    a = torch.randn(1024, device=device)
    b = torch.randn(1024, device=device)

    def run():
        for _ in range(n_ops):
            a + b
    return small_op_stats(run, device, n_ops, repeats)


def small_add_inplace(device, n_ops, repeats):
    a = torch.randn(1024, device=device)
    b = torch.randn(1024, device=device) * 1e-3

    def run():
        for _ in range(n_ops):
            a.add_(b)
    return small_op_stats(run, device, n_ops, repeats)


def large(device, numel, repeats, inner=5):
    a = torch.randn(numel, device=device)
    b = torch.randn(numel, device=device)
    out = torch.empty(numel, device=device)
    add = lambda: [torch.add(a, b, out=out) for _ in range(inner)]  # noqa: E731
    t_add = median_device_seconds(add, device, repeats) / inner
    t_copy = median_device_seconds(lambda: [out.copy_(a) for _ in range(inner)], device, repeats) / inner
    return 3 * 4 * numel / t_add / 1e9, 2 * 4 * numel / t_copy / 1e9


def shaped_ops(device, repeats, inner=5):
    g = torch.Generator().manual_seed(0)
    rnd = lambda *shape: torch.randn(*shape, generator=g).to(device)  # noqa: E731
    heads, square = rnd(16, 64, 4, 16), rnd(1024, 1024)
    act, bias = rnd(64, 32, 28, 28), rnd(32, 1, 1)
    grad, x = rnd(262144), rnd(262144)
    cases = {
        "transpose copy [16,64,4,16] (1,2)": lambda: heads.transpose(1, 2).contiguous(),
        "transpose copy 1024x1024": lambda: square.t().contiguous(),
        "broadcast add [64,32,28,28]+[32,1,1]": lambda: act + bias,
        "gelu_backward 262K": lambda: torch.ops.aten.gelu_backward(grad, x),
    }
    return {name: median_device_seconds(lambda: [f() for _ in range(inner)], device, repeats) / inner * 1e6
            for name, f in cases.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--small-ops", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--large", type=int, default=16 * 1024 * 1024)
    args = p.parse_args()
    print(f"opencl device: {torch.opencl.get_device_name()}")
    rows = {}
    for device in ("cpu", "opencl"):
        rows[device] = dict(
            small_out=small_add(device, args.small_ops, args.repeats),
            small_fn=small_add_functional(device, args.small_ops, args.repeats),
            small_inplace=small_add_inplace(device, args.small_ops, args.repeats),
            large=large(device, args.large, args.repeats),
            shaped=shaped_ops(device, args.repeats),
        )
    c, o = rows["cpu"], rows["opencl"]
    print(f"{'workload':44s} {'cpu':>10s} {'opencl':>10s} {'opencl/cpu':>10s}")
    for key, label in (("small_out", "out="), ("small_fn", "a + b"), ("small_inplace", "a.add_(b)")):
        print(f"{'small add 1K, ' + label + ' (us/op, async)':44s} {c[key]['median']:10.2f} {o[key]['median']:10.2f} "
              f"{o[key]['median'] / c[key]['median']:10.2f}")
    print(f"{'large add 16M (GB/s)':44s} {c['large'][0]:10.2f} {o['large'][0]:10.2f} "
          f"{o['large'][0] / c['large'][0]:10.2f}")
    print(f"{'large copy_ 16M (GB/s)':44s} {c['large'][1]:10.2f} {o['large'][1]:10.2f} "
          f"{o['large'][1] / c['large'][1]:10.2f}")
    for name in c["shaped"]:
        cs, os_ = c["shaped"][name], o["shaped"][name]
        print(f"{name + ' (us/op)':44s} {cs:10.1f} {os_:10.1f} {os_ / cs:10.2f}")
    print("small ops, spread and CPU time (us/op; wall min-max over repeats; CPU = user+sys of all threads):")
    for key, label in (("small_out", "out="), ("small_fn", "a + b"), ("small_inplace", "a.add_(b)")):
        for device in ("cpu", "opencl"):
            r = rows[device][key]
            print(f"  {label:10s} {device:7s} wall {r['median']:7.2f} [{r['min']:7.2f} - {r['max']:7.2f}]  cpu {r['cpu']:7.2f}")
    print(f"opencl add bandwidth / copy bandwidth: {o['large'][0] / o['large'][1]:.2f} (target >= 0.80)")
    print(f"opencl small-op overhead: {o['small_out']['median']:.2f} us (target <= 15 us)")


if __name__ == "__main__":
    main()
