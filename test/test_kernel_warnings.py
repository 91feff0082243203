"""Every embedded OpenCL C source compiles without a warning, in the programs the operators really build.

A child process per kernel class (cpu, and gpu, whose forms change WG and other defines) runs the
warmup workloads and operators that reach every file of kernels_cl/, recording the (source, options)
of each program it asks for; the parent then compiles each distinct one afresh, with the driver's log
captured (tocl::compile_log: neither our cache nor the driver's answers), spread over processes.
A new warning fails here, with the driver's words.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

from torch_opencl import _C

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

RECORD = r"""
import json, sys
import torch, torch_opencl
from torch import nn
from torch.nn import functional as F
from torch_opencl import _C, warmup

_C._record_program_sources(True)
torch.opencl.set_fallback_mode("silent")
for index in warmup.select():
    warmup._run(index, "opencl:0")

dev = "opencl"
torch.manual_seed(0)
x = torch.randn(6, 70, device=dev)
i = torch.randint(0, 6, (5,), device=dev)
for t in (x, x.double(), x.half(), (x * 10).long(), x > 0):
    t.sum(); t.t().contiguous(); t.amax(dim=1); torch.sort(t.float() if t.dtype == torch.bool else t, dim=1)
    t.cumsum(1); t.flip(0); t.clone().fill_(1)
x.var(1); x.std(); x.norm(); x.logsumexp(1); x.argmax(1); x.prod(1); (x > 0).any(); x.mean(0)
x.cumprod(1); x.cummax(1); x.logcumsumexp(1)
torch.topk(x, 3, dim=1); x.argsort(dim=1); x.float().sort(dim=0)
torch.nonzero(x > 0); x.masked_select(x > 0); torch.where(x > 0)
x.gather(0, i.view(-1, 1).expand(5, 70)); torch.zeros(6, 70, device=dev).scatter_add_(0, i.view(-1, 1).expand(5, 70), x[:5])
x.scatter_reduce(0, i.view(-1, 1).expand(5, 70), x[:5], "amax"); x.index_put((i,), x[:5], accumulate=True)
x[i]; x.index_select(0, i); x.index_add(0, i, x[:5]); x.roll(3, 1); x.tril(); x.triu(1); x.repeat(2, 1)
torch.cat([x, x], 1); torch.stack([x, x]); torch.arange(10, device=dev); torch.linspace(0, 1, 7, device=dev)
F.layer_norm(x, (70,)); F.group_norm(x.view(6, 10, 7), 5); F.batch_norm(x, None, None, training=True)
F.softmax(x, 0); F.log_softmax(x, 1); F.softmax(x.view(6, 7, 10), 1)
F.nll_loss(F.log_softmax(x, 1), i.new_tensor([1, 2, 3, 4, 5, 6])); F.mse_loss(x, x.flip(0)); F.smooth_l1_loss(x, x.flip(0))
F.huber_loss(x, x.flip(0)); F.binary_cross_entropy(torch.sigmoid(x), torch.rand_like(x)); F.logsigmoid(x)
img = torch.randn(2, 3, 9, 9, device=dev, requires_grad=True)
out = F.max_pool2d(img, 3, 2, 1) .sum() + F.avg_pool2d(img, 2).sum() + F.adaptive_avg_pool2d(img, 4).sum()
out = out + F.conv2d(img, torch.randn(4, 3, 3, 3, device=dev), stride=2, padding=1).sum()
out = out + F.conv_transpose2d(img, torch.randn(3, 2, 3, 3, device=dev)).sum()
out = out + F.interpolate(img, scale_factor=2, mode="bilinear").sum() + F.interpolate(img, size=5).sum()
out = out + F.pad(img, (1, 1, 2, 2), mode="reflect").sum() + F.pad(img, (1, 1, 1, 1), mode="replicate").sum()
out = out + F.embedding(i, torch.randn(6, 4, device=dev, requires_grad=True)).sum()
out.backward()
torch.empty(100, device=dev).uniform_(); torch.empty(100, device=dev).normal_(); torch.empty(100, device=dev).bernoulli_(0.3)
torch.empty(100, device=dev).random_(0, 10); torch.empty(100, device=dev).exponential_(); F.dropout(x, 0.5)
torch.randn(100, device=dev, dtype=torch.double)
params = [torch.randn(10, device=dev, requires_grad=True) for _ in range(3)]
for make in (lambda p: torch.optim.Adam(p, fused=True), lambda p: torch.optim.AdamW(p, fused=True),
             lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.Adam(p, foreach=False)):
    opt = make(params)
    sum(p.sum() for p in params).backward()
    opt.step(); opt.step()
torch.nn.utils.clip_grad_norm_(params, 1.0)
torch.bmm(torch.randn(3, 5, 7, device=dev), torch.randn(3, 7, 2, device=dev)); x.double() @ x.double().t()
torch.opencl.synchronize()
with open(sys.argv[1], "w") as f:
    json.dump(_C._recorded_program_sources(), f)
"""


COMPILE = r"""
import json, sys
import torch, torch_opencl
from torch_opencl import _C
with open(sys.argv[1]) as f:
    programs = json.load(f)
with open(sys.argv[2], "w") as f:
    json.dump([_C._compile_log(0, source, options) for source, options in programs], f)
"""


def run_children(code, arguments, envs):
    """Runs one child per argument list at once (each compiles in its own process, in parallel even on PoCL)."""
    procs = [subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for args, env in zip(arguments, envs)]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-5000:]


def test_every_embedded_source_compiles_without_a_warning(tmp_path):
    classes = ("cpu", "gpu")
    run_children(RECORD, [[str(tmp_path / f"{c}.json")] for c in classes],
                 [dict(os.environ, TORCH_OPENCL_KERNEL_CLASS=c) for c in classes])
    cpu, gpu = ({tuple(e) for e in json.loads((tmp_path / f"{c}.json").read_text())} for c in classes)
    programs = sorted(cpu | gpu)
    # Every file of kernels_cl/ is in some program (an included file inside its includer): a new file, or
    # one no operator above reaches, must join the operators above.
    texts = [source for source, _ in programs]
    missing = [name for name, text in _C._embedded_sources().items() if not any(text in s for s in texts)]
    assert not missing, f"kernel files no recorded program compiles (add an operator that uses them): {missing}"
    assert gpu - cpu, "the gpu class builds no program of its own: is its WG define still in?"

    jobs = max(1, min(os.cpu_count() or 1, 4))
    shares = [programs[j::jobs] for j in range(jobs)]
    for j, share in enumerate(shares):
        (tmp_path / f"share{j}.json").write_text(json.dumps(share))
    run_children(COMPILE, [[str(tmp_path / f"share{j}.json"), str(tmp_path / f"logs{j}.json")] for j in range(jobs)],
                 [dict(os.environ)] * jobs)
    noisy = []
    for j, share in enumerate(shares):
        for (source, options), (compiled, log) in zip(share, json.loads((tmp_path / f"logs{j}.json").read_text())):
            if not compiled or log:
                header = next((line for line in source.splitlines() if "__kernel" in line), source[:80])
                noisy.append(f"--- program with {header.strip()!r} (options {options!r}):\n{log}")
    print(f"\n{len(programs)} programs compiled in {jobs} processes ({len(cpu)} in the cpu class, {len(gpu)} in "
          f"the gpu class, {len(gpu - cpu)} of them only there)")
    assert not noisy, f"{len(noisy)} of {len(programs)} programs compile with warnings or errors:\n" + "\n".join(noisy)
