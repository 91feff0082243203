"""torch.compile against eager on the same opencl device, in one process.

For the three training steps of bench_training.py (MLP, digits CNN, transformer: forward, backward,
clip_grad_norm_, optimizer step; compiled means torch.compile of the model with its loss, the
optimizer's foreach kernels stay eager unless --compile-optimizer compiles the function that clips and
steps), a tiny MLP step whose time is the host's, and a few
fusion-heavy blocks (GELU MLP, LayerNorm + residual, softmax attention; forward and backward), prints
the median time of eager and compiled, their ratio, the kernel launches of each per step, how
long Inductor took to compile (first call, warm program cache or not), and the host's CPU time per step
in the calling thread (Python, dispatch, Dynamo's guards, AOTAutograd's wrappers, launches; not the
backward's, which autograd runs on a thread of its own; on PoCL, waits for the device that the step
itself makes, as an index check's read back, count too).

    .venv/bin/python bench/bench_compile.py [--steps 20] [--warmup 3] [--only mlp,transformer]
                                            [--compile-optimizer] [--combo-kernels] [--profile 5]

--profile N then lists, per workload, the kernels' device time per step over N profiled steps of each
mode side by side (torch.profiler), which says where a compiled step gains or loses. Generated kernels
are numbered across graphs there (opencl_poi_8 of the forward and of the backward are two kernels), so
Inductor's caches are off for that run.
"""
import argparse
import collections
import itertools
import math
import os
import statistics
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_training import digits_cnn, mlp, transformer  # noqa: E402


def tiny_mlp():
    """bench_training's MLP step at widths of 32 and batch 8: the device has next to nothing to do, so the
    step's time is the host's (Python, dispatch, launches). Where a GPU runs the real workloads faster than
    the host can issue them, this overhead is what compiled and eager steps differ by."""
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 10))
    data = (torch.randn(8, 32), torch.randint(0, 10, (8,)))
    return model, data, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3), lambda m, x, y: F.cross_entropy(m(x), y)


def gelu_mlp():
    model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
    x = torch.randn(256, 256)
    return model, (x,), lambda m, x: m(x).square().mean()


class LayerNormResidual(nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x + self.ln(x) * self.scale


def layernorm_residual():
    return LayerNormResidual(), (torch.randn(1024, 512),), lambda m, x: m(x).sum()


class SoftmaxAttention(nn.Module):
    """Attention written out (matmul, scale, causal mask, softmax, matmul), as models do by hand."""

    def forward(self, q, k, v):
        t = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        return F.softmax(scores, dim=-1) @ v


def softmax_attention():
    q, k, v = (torch.randn(8, 4, 64, 32) for _ in range(3))
    return SoftmaxAttention(), (q, k, v), lambda m, q, k, v: m(q, k, v).sum()


def launches():
    return torch.opencl._C._launch_count()


def timed(step):
    return timed_with_host(step)[0]


def timed_with_host(step):
    """(wall seconds of `step` up to the device's end, CPU seconds the calling thread spent in it). The
    second is the host's work where the device is not the CPU itself, apart from the backward's, which
    autograd runs on its device thread."""
    torch.opencl.synchronize()
    c0, t0 = time.thread_time(), time.perf_counter()
    step()
    c1 = time.thread_time()
    torch.opencl.synchronize()
    return time.perf_counter() - t0, c1 - c0


def prepare(step, warmup):
    """Runs `step` once (timed: the compile, for a compiled step) and `warmup` times more; returns (seconds of
    the first call, kernel launches per step)."""
    first = timed(step)
    for _ in range(warmup):
        step()
    torch.opencl.synchronize()
    before = launches()
    step()
    torch.opencl.synchronize()
    return first, launches() - before


def kernel_times(steps, rounds):
    """For each of `steps`, {kernel: (device us per step, launches per step)} over `rounds` profiled steps,
    the steps taking turns (one step each per round) so that the shared machine's drift falls on all alike."""
    from torch.profiler import ProfilerActivity, profile

    totals = [collections.defaultdict(lambda: [0.0, 0]) for _ in steps]
    for _ in range(rounds):
        for step, total in zip(steps, totals):
            with profile(activities=[ProfilerActivity.PrivateUse1]) as prof:
                step()
                torch.opencl.synchronize()
            for e in prof.key_averages():
                if e.device_type != torch.autograd.DeviceType.CPU:
                    total[e.key][0] += e.self_device_time_total
                    total[e.key][1] += e.count
    return [{k: (us / rounds, n / rounds) for k, (us, n) in total.items()} for total in totals]


def print_kernel_times(eager, compiled, top=15):
    columns = []
    for label, times in (("eager", eager), ("compiled", compiled)):
        total = sum(us for us, _ in times.values())
        rows = sorted(times.items(), key=lambda kv: -kv[1][0])[:top]
        columns.append([f"{label}: {total:.0f} us a step"] + [f"{us:9.1f}  x{n:<4g}{k[:32]}" for k, (us, n) in rows])
    for left, right in itertools.zip_longest(*columns, fillvalue=""):
        print(f"    {left:<54}{right}")


def unique_kernel_names():
    """Numbers generated kernels across graphs instead of per graph (profiles only: a kernel's name is part
    of its program's text, which the program cache keys on)."""
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    counter = itertools.count()
    PythonWrapperCodegen.next_kernel_suffix = lambda self: str(next(counter))
    import torch._inductor.config as inductor_config

    inductor_config.force_disable_caches = True


def measure_pair(eager, compiled, steps):
    """Median ms of each, wall and the calling thread's CPU (timed_with_host), their steps alternating so that
    the machine's drift (this one is shared) falls on both alike: (eager, compiled, eager host, compiled host)."""
    times = ([], [], [], [])
    for _ in range(steps):
        for side, step in enumerate((eager, compiled)):
            wall, host = timed_with_host(step)
            times[side].append(wall)
            times[side + 2].append(host)
    return tuple(statistics.median(t) * 1e3 for t in times)


def training_step(make, compiled, compile_optimizer=False):
    torch.manual_seed(0)
    model, (x, y), make_opt, loss_fn = make()
    model, x, y = model.to("opencl"), x.to("opencl"), y.to("opencl")
    opt = make_opt(model)
    forward_loss = torch.compile(lambda x, y: loss_fn(model, x, y)) if compiled else (lambda x, y: loss_fn(model, x, y))

    def update():
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    update_run = torch.compile(update) if compiled and compile_optimizer else update

    def step():
        opt.zero_grad()
        loss = forward_loss(x, y)
        loss.backward()
        update_run()

    return step


def block_step(make, compiled):
    torch.manual_seed(0)
    model, inputs, loss_fn = make()
    model = model.to("opencl")
    inputs = [t.to("opencl").requires_grad_() for t in inputs]
    run = torch.compile(model) if compiled else model

    def step():
        for t in inputs:
            t.grad = None
        model.zero_grad()
        loss_fn(run, *inputs).backward()

    return step


WORKLOADS = {
    "mlp": ("MLP step", training_step, mlp),
    "cnn": ("digits CNN step", training_step, digits_cnn),
    "transformer": ("transformer step", training_step, transformer),
    "tiny": ("tiny MLP (host-bound)", training_step, tiny_mlp),
    "gelu_mlp": ("GELU MLP fwd+bwd", block_step, gelu_mlp),
    "layernorm": ("LayerNorm+residual", block_step, layernorm_residual),
    "attention": ("softmax attention", block_step, softmax_attention),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    parser.add_argument("--compile-optimizer", action="store_true",
                        help="also torch.compile clip_grad_norm_ + optimizer.step (their foreach ops become one kernel each)")
    parser.add_argument("--combo-kernels", action="store_true",
                        help="Inductor's combo_kernels: independent kernels of a graph share one kernel")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="list each mode's kernels by device time over N profiled steps")
    args = parser.parse_args()
    import torch_opencl  # noqa: F401

    if args.combo_kernels:
        import torch._inductor.config as inductor_config

        inductor_config.combo_kernels = True

    if args.profile:
        from torch.profiler import ProfilerActivity, supported_activities

        if ProfilerActivity.PrivateUse1 not in supported_activities():
            print("--profile: this build has no opencl device activity in torch.profiler (the Kineto plugin is "
                  "built only where torch has privateuse1_profiler.h); no kernel lists")
            args.profile = 0
        else:
            unique_kernel_names()
    torch.opencl.set_fallback_mode("silent")
    print(f"device: {torch.opencl.get_device_name()} | torch {torch.__version__} | median of {args.steps} steps, "
          "eager and compiled alternating")
    print(f"{'workload':<22}{'eager ms':>10}{'compiled ms':>13}{'ratio':>8}{'launches eager':>16}"
          f"{'compiled':>10}{'fewer':>7}{'compile s':>11}{'host ms eager':>15}{'compiled':>10}")
    for key in args.only.split(","):
        name, make_step, make = WORKLOADS[key]
        extra = {"compile_optimizer": True} if args.compile_optimizer and make_step is training_step else {}
        eager = make_step(make, False)
        _, eager_launches = prepare(eager, args.warmup)
        torch._dynamo.reset()
        compiled = make_step(make, True, **extra)
        compile_s, compiled_launches = prepare(compiled, args.warmup)
        eager_ms, compiled_ms, eager_host, compiled_host = measure_pair(eager, compiled, args.steps)
        fewer = eager_launches / max(compiled_launches, 1)
        print(f"{name:<22}{eager_ms:>10.2f}{compiled_ms:>13.2f}{compiled_ms / eager_ms:>8.2f}{eager_launches:>16}"
              f"{compiled_launches:>10}{fewer:>6.1f}x{compile_s:>11.1f}{eager_host:>15.2f}{compiled_host:>10.2f}",
              flush=True)
        if args.profile:
            print_kernel_times(*kernel_times((eager, compiled), args.profile))
    fallback = torch_opencl._inductor.fallback.stats() if "torch_opencl._inductor" in sys.modules else {}
    print("operators kept on eager ATen kernels by the compiler:", ", ".join(sorted(fallback)) or "none")
    print("operators on the CPU fallback:", ", ".join(sorted(torch.opencl.fallback_stats())) or "none")


if __name__ == "__main__":
    main()
