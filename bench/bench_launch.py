"""The host's cost of one launch: an eager operator (the reference: torch.add(out=) of 64 floats) against a
torch.opencl.compile_shader kernel doing the same, called through its library (lib.add3(...)) and bound
(the way a torch.compile'd graph calls its kernels). Medians of per-launch times over batches of launches;
the device's work is waited for after each batch, so a slow device shows up in the totals.

    .venv/bin/python bench/bench_launch.py [--launches 5000] [--repeat 7]
"""
import argparse
import time

import torch

SOURCE = """
__kernel void add3(__global float* out, __global const float* a, __global const float* b, long n) {
  long i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}"""


def per_launch_us(fn, launches, repeat):
    for _ in range(200):
        fn()
    torch.opencl.synchronize()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(launches):
            fn()
        torch.opencl.synchronize()
        samples.append((time.perf_counter() - t) / launches * 1e6)
    return sorted(samples)[len(samples) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    import torch_opencl  # noqa: F401

    lib = torch.opencl.compile_shader(SOURCE, require_contiguous=False)
    kernel = lib.add3
    x, y, out = (torch.ones(64, device="opencl") for _ in range(3))
    cases = {
        "eager torch.add(out=)": lambda: torch.add(x, y, out=out),
        "compile_shader lib.add3(...)": lambda: lib.add3(out, x, y, 64, threads=64),
        "bound kernel (compiled graphs)": lambda: kernel(out, x, y, 64, threads=64),
    }
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | 64 floats, "
          f"median of {args.repeat} batches of {args.launches}")
    reference = None
    for name, fn in cases.items():
        us = per_launch_us(fn, args.launches, args.repeat)
        reference = reference or us
        print(f"{name:<32}{us:>8.1f} us/launch{us / reference:>8.2f}x eager")


if __name__ == "__main__":
    main()
