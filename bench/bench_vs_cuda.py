"""opencl against cuda on the same GPU: three training steps and the operators they lean on.

Each device runs in its own process (in a CUDA build of torch, a registered opencl backend breaks
CUDA's backward, PyTorch issue 161129): the cuda one with TORCH_DEVICE_BACKEND_AUTOLOAD=0, the opencl
one with `import torch_opencl`. This parent starts both, collects their medians and prints a table
with the ratio opencl/cuda (time; for throughput rows, cuda's rate over opencl's). Where torch has
no CUDA it measures opencl alone.

  training steps (AdamW, median of --steps after --warmup):
    MLP   784-2048-2048-10, ReLU, batch 512
    CNN   ResNet-style: stem 3->64, one basic block per stage of 64-128-256-512 channels (3x3 convs,
          BatchNorm, ReLU, strided 1x1 shortcuts), global average pool, linear; 32x32 inputs, batch 128
    GPT   d=384, 6 layers, 6 heads, seq 256, batch 32, vocab 512, causal SDPA, LayerNorm, GELU

    python bench/bench_vs_cuda.py [--only training|ops] [--steps 10] [--profile] [--json FILE] [--fp32-cuda]
                                  [--amp] [--tf32]

--profile also prints, per device, the operators of each training step by device time.
cuda runs with torch's defaults (cuDNN may use TF32 for convolutions; matmul stays FP32); the
header prints the settings. --fp32-cuda adds a cuda run with TF32 off everywhere (the arithmetic
opencl does: NVIDIA's OpenCL has no tensor-core path) and its ratio column. --amp runs the training steps
under torch.autocast(dtype=torch.bfloat16) on both devices (opencl computes the products in float32 on
bfloat16 operands; cuda on its tensor cores; on NVIDIA compute capability 8.0+ opencl's products run on
tensor cores too, kernels_cl/gemm_mma.cl). --tf32 sets torch.set_float32_matmul_precision("high") in both
processes: float32 products on TF32 tensor cores where each device has them (cuda's convolutions use TF32
by default either way).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_training import TinyTransformer  # noqa: E402


# ---------------------------------------------------------------- workloads
def mlp():
    model = nn.Sequential(nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    data = (torch.randn(512, 784), torch.randint(0, 10, (512,)))
    return model, data, lambda m, x, y: F.cross_entropy(m(x), y)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.short(x))


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        BasicBlock(64, 64, 1), BasicBlock(64, 128, 2), BasicBlock(128, 256, 2), BasicBlock(256, 512, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))
    data = (torch.randn(128, 3, 32, 32), torch.randint(0, 10, (128,)))
    return model, data, lambda m, x, y: F.cross_entropy(m(x), y)


def gpt():
    tokens = torch.randint(0, 512, (32, 257))
    data = (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
    model = TinyTransformer(vocab=512, seq=256, width=384, heads=6, layers=6)  # bench_training's, GPT-sized
    return model, data, lambda m, x, y: F.cross_entropy(m(x).reshape(-1, 512), y.reshape(-1))


TRAINING = {"MLP": mlp, "CNN": cnn, "GPT": gpt}


# ---------------------------------------------------------------- timing
def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()
    elif device.startswith("opencl"):
        torch.opencl.synchronize()


def per_call_us(fn, device, calls=None, samples=7, budget_s=0.05):
    """Median over samples of the mean time of `calls` back-to-back calls (chosen to fill budget_s)."""
    fn()
    sync(device)
    if calls is None:
        t = time.perf_counter()
        fn()
        sync(device)
        one = max(time.perf_counter() - t, 1e-6)
        calls = int(min(200, max(1, budget_s / one)))
    times = []
    for _ in range(samples):
        sync(device)
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync(device)
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def training_step(make, device, steps, warmup, profile, amp=False):
    torch.manual_seed(0)
    model, (x, y), loss_fn = make()
    model, x, y = model.to(device), x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    sync(device)
    times = []
    for _ in range(steps):
        sync(device)
        t = time.perf_counter()
        loss = step()
        sync(device)
        times.append((time.perf_counter() - t) * 1e3)
    result = {"ms": statistics.median(times), "loss": float(loss)}
    if profile:
        result["profile"] = profile_step(step, device)
    return result


def profile_step(step, device, rows=25):
    """The step's operators by self device time (us), from the profiler that device has."""
    if device == "cuda":
        from torch.profiler import ProfilerActivity
        with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            sync(device)
    else:
        with torch.autograd.profiler.profile(use_device="opencl", use_kineto=False) as prof:
            step()
            sync(device)
    table = []
    for e in prof.key_averages():
        t = e.self_device_time_total
        if t > 0:
            table.append((e.key, t, e.count))
    table.sort(key=lambda r: -r[1])
    return table[:rows]


def operators(device):
    """name -> (value, unit); unit 'us' is a time, others are rates (higher is better)."""
    d = device
    g = torch.Generator().manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(d)

    out = {}
    a, b = rnd(192, 256, 64), rnd(192, 64, 256)
    out["bmm [192,256,64]x[192,64,256]"] = (per_call_us(lambda: torch.bmm(a, b), d), "us")
    q, k = rnd(192, 256, 64), rnd(192, 256, 64)
    out["bmm q @ k^T [192,256,64]x[192,64,256]^T"] = (per_call_us(lambda: q @ k.transpose(1, 2), d), "us")
    grad = rnd(8192, 384)
    idx = torch.randint(0, 512, (8192,), generator=g).to(d)
    out["embedding backward 8192x384 (vocab 512)"] = (
        per_call_us(lambda: torch.ops.aten.embedding_dense_backward(grad, idx, 512, -1, False), d), "us")
    s = rnd(192, 256, 256)
    out["softmax [192,256,256]"] = (per_call_us(lambda: torch.softmax(s, -1), d), "us")
    sy = torch.softmax(s, -1)
    out["softmax backward [192,256,256]"] = (
        per_call_us(lambda: torch.ops.aten._softmax_backward_data(s, sy, -1, torch.float32), d), "us")
    x, w, bias = rnd(8192, 384), rnd(384), rnd(384)
    out["layer_norm forward 8192x384"] = (
        per_call_us(lambda: torch.ops.aten.native_layer_norm(x, [384], w, bias, 1e-5), d), "us")
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [384], w, bias, 1e-5)
    out["layer_norm backward 8192x384"] = (per_call_us(lambda: torch.ops.aten.native_layer_norm_backward(
        grad, x, [384], mean, rstd, w, bias, [True, True, True]), d), "us")
    ci, wc = rnd(128, 128, 16, 16), rnd(128, 128, 3, 3)
    out["conv 3x3 128ch 16x16 b128 forward"] = (per_call_us(lambda: F.conv2d(ci, wc, padding=1), d), "us")
    go = rnd(128, 128, 16, 16)
    out["conv 3x3 128ch 16x16 b128 backward"] = (per_call_us(lambda: torch.ops.aten.convolution_backward(
        go, ci, wc, [0], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]), d), "us")
    ci64, wc64 = rnd(128, 64, 32, 32), rnd(64, 64, 3, 3)
    out["conv 3x3 64ch 32x32 b128 forward"] = (per_call_us(lambda: F.conv2d(ci64, wc64, padding=1), d), "us")
    bn_x, bn_w, bn_b = rnd(128, 128, 16, 16), rnd(128), rnd(128)
    rm, rv = torch.zeros(128, device=d), torch.ones(128, device=d)
    out["batch_norm training forward 128x128x16x16"] = (per_call_us(lambda: torch.ops.aten.native_batch_norm(
        bn_x, bn_w, bn_b, rm, rv, True, 0.1, 1e-5), d), "us")
    _, smean, sinv = torch.ops.aten.native_batch_norm(bn_x, bn_w, bn_b, rm, rv, True, 0.1, 1e-5)
    out["batch_norm training backward 128x128x16x16"] = (per_call_us(
        lambda: torch.ops.aten.native_batch_norm_backward(go, bn_x, bn_w, rm, rv, smean, sinv, True, 1e-5,
                                                          [True, True, True]), d), "us")
    logits = rnd(8192, 512)
    tgt = torch.randint(0, 512, (8192,), generator=g).to(d)
    out["cross_entropy forward 8192x512"] = (per_call_us(lambda: F.cross_entropy(logits, tgt), d), "us")
    lg = logits.clone().requires_grad_()
    out["cross_entropy forward+backward 8192x512"] = (
        per_call_us(lambda: F.cross_entropy(lg, tgt).backward(), d), "us")
    for m, k, n in ((8192, 384, 1152), (8192, 384, 384), (8192, 384, 1536), (8192, 1536, 384)):
        ma, mb = rnd(m, k), rnd(k, n)
        out[f"mm {m}x{k} @ {k}x{n}"] = (per_call_us(lambda: ma @ mb, d), "us")
    ga, gb = rnd(8192, 384), rnd(8192, 1152)
    out["mm weight grad 384x8192 @ 8192x1152"] = (per_call_us(lambda: ga.t() @ gb, d), "us")
    for n in (1024, 4096):
        ma, mb = rnd(n, n), rnd(n, n)
        us = per_call_us(lambda: ma @ mb, d, samples=5)
        out[f"SGEMM n={n}"] = (2 * n ** 3 / us / 1e6, "TFLOP/s")
    big_a, big_b = torch.ones(64 << 20, device=d), torch.ones(64 << 20, device=d)
    big_c = torch.empty_like(big_a)
    us = per_call_us(lambda: torch.add(big_a, big_b, out=big_c), d)
    out["add of 64M floats"] = (3 * 4 * (64 << 20) / us / 1e3, "GB/s")
    sa, sb = torch.ones(1024, device=d), torch.ones(1024, device=d)
    sc = torch.empty_like(sa)
    out["small add 1K, async"] = (per_call_us(lambda: torch.add(sa, sb, out=sc), d, calls=2000, samples=5), "us")
    return out


def child(args):
    device = args.child
    if device.startswith("opencl"):
        import torch_opencl  # noqa: F401
        torch.opencl.set_fallback_mode("silent")
        name = torch.opencl.get_device_name()
    else:
        name = torch.cuda.get_device_name()
    result = {"device": device, "name": name, "torch": torch.__version__}
    if device == "cuda" and args.fp32:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    if args.tf32:
        torch.set_float32_matmul_precision("high")
    if device == "cuda":
        result["settings"] = (f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, "
                              f"matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}")
    else:
        result["settings"] = (f"float32 matmul precision {torch.get_float32_matmul_precision()}, tensor-core GEMM "
                              f"{torch_opencl._C._device_properties(0)['tensor_core_gemm']}")
    if args.only in (None, "training"):
        result["training"] = {k: training_step(make, device, args.steps, args.warmup, args.profile, args.amp)
                              for k, make in TRAINING.items()}
    if args.only in (None, "ops"):
        result["ops"] = operators(device)
    if device.startswith("opencl"):
        result["fallback"] = sorted(torch.opencl.fallback_stats())
    json.dump(result, sys.stdout)


def run_child(device, args, fp32=False):
    env = dict(os.environ)
    if device == "cuda":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    cmd = [sys.executable, __file__, "--child", device, "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if fp32:
        cmd += ["--fp32"]
    if args.only:
        cmd += ["--only", args.only]
    if args.profile:
        cmd += ["--profile"]
    if args.amp:
        cmd += ["--amp"]
    if args.tf32:
        cmd += ["--tf32"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"the {device} process failed (status {p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["training", "ops"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", help="also write both processes' results here")
    parser.add_argument("--fp32-cuda", action="store_true", help="also run cuda with TF32 off")
    parser.add_argument("--amp", action="store_true", help="training steps under autocast (bfloat16)")
    parser.add_argument("--tf32", action="store_true", help='float32 matmul precision "high" on both devices')
    parser.add_argument("--fp32", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    has_cuda = torch.cuda.is_available()
    ocl = run_child("opencl", args)
    ref = run_child("cuda", args) if has_cuda else None
    ref32 = run_child("cuda", args, fp32=True) if has_cuda and args.fp32_cuda else None
    print(f"opencl: {ocl['name']} | torch {ocl['torch']} | {ocl['settings']}")
    if ref:
        print(f"cuda:   {ref['name']} | torch {ref['torch']} | {ref['settings']}")
    else:
        print("cuda:   not available in this torch; opencl alone")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"opencl": ocl, "cuda": ref, "cuda_fp32": ref32}, f, indent=1)

    fp32_head = f"{'cuda fp32':>11}{'ratio':>8}" if ref32 else ""

    def fp32_cols(section, key, o, unit="us"):
        if not ref32:
            return ""
        c = ref32[section][key]["ms"] if section == "training" else ref32[section][key][0]
        return f"{c:>11.2f}{(o / c if unit in ('us', 'ms') else c / o):>8.2f}"

    if "training" in ocl:
        title = ("training step (AdamW, autocast bf16)" if args.amp else
                 "training step (AdamW, TF32)" if args.tf32 else "training step (AdamW)")
        print(f"\n{title:<44}{'opencl ms':>11}{'cuda ms':>10}{'opencl/cuda':>13}{fp32_head}")
        for k in TRAINING:
            o = ocl["training"][k]["ms"]
            c = ref["training"][k]["ms"] if ref else float("nan")
            print(f"{k:<44}{o:>11.2f}{c:>10.2f}{o / c:>13.2f}{fp32_cols('training', k, o, 'ms')}")
    if "ops" in ocl:
        print(f"\n{'operator':<44}{'opencl':>11}{'cuda':>10}{'opencl/cuda':>13}{fp32_head}  unit")
        for k, (o, unit) in ocl["ops"].items():
            c = ref["ops"][k][0] if ref else float("nan")
            ratio = o / c if unit == "us" else c / o  # time ratio either way
            print(f"{k:<44}{o:>11.1f}{c:>10.1f}{ratio:>13.2f}{fp32_cols('ops', k, o, unit)}  {unit}")
    print(f"\nfallback on opencl: {', '.join(ocl['fallback']) or 'none'}")
    if args.profile:
        for res in (ocl, ref):
            if not res:
                continue
            for k, r in res.get("training", {}).items():
                print(f"\n{res['device']} {k} step: operators by self device time")
                for name, us, count in r["profile"]:
                    print(f"  {name:<52}{us:>10.0f} us{count:>6}x")


if __name__ == "__main__":
    main()
