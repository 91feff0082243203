"""Every embedded OpenCL C source compiles without a warning, in the programs the operators really build.

A child process per kernel class (cpu, and gpu, whose forms change WG and other defines) runs
operators that reach every file of kernels_cl/, and a small torch.compile graph (whose program is
inductor.cl followed by the generated kernels, in the class's form), recording the (source, options)
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
from torch.nn import functional as F
from torch_opencl import _C

_C._record_program_sources(True)
torch.opencl.set_fallback_mode("silent")
dev = "opencl"
torch.manual_seed(0)
# One or two operators per kernel file (kernels_cl/), float32, plus double, half and int64 where a file's
# defines differ by type: each program compiles cold here, and launches compile kernels (PoCL), so few.
x = torch.randn(6, 70, device=dev, requires_grad=True)
xd, i = x.detach(), torch.randint(0, 6, (5,), device=dev)
xd.t().contiguous(); xd.double().t().contiguous(); xd.half(); (xd * 10).long()                # copy.cl, tiled_index.cl
torch.sigmoid(xd) + xd.double()                                                              # pointwise.cl
torch.polygamma(2, xd); torch.special.i0e(xd.double())                                       # special_functions.cl
xd.sum(1); xd.double().sum(); xd.argmax(1)                                                   # reduce.cl
xd.cumsum(1); (xd * 10).long().cumsum(1)                                                     # scan.cl
torch.sort(xd, 1); torch.topk((xd * 10).long(), 3)                                           # sort.cl
torch.nonzero(xd > 0)                                                                        # nonzero.cl
torch.searchsorted(xd[0].sort().values, xd[1:]); torch.isin(i, i[:2])                       # search.cl
torch.histc(xd); torch.histc(xd.double()); torch.bincount(i)                                 # histogram.cl
torch.unique(i, return_counts=True); torch.repeat_interleave(i)                              # unique.cl
torch.median(xd, 1); torch.kthvalue(xd.double(), 2, 1); torch.mode(i.view(5, 1), 0)          # order_stats.cl
xd.gather(0, i.view(-1, 1).expand(5, 70)).scatter_add(0, i.view(-1, 1).expand(5, 70), xd[:5])  # scatter_gather.cl
xd[i]; xd.index_put((i,), xd[:5], accumulate=True); xd.index_select(0, i)                    # indexing.cl, index_bounds.cl
xd.flip(0); xd.tril()                                                                        # shape_ops.cl
torch.empty(100, device=dev).uniform_(); F.dropout(xd, 0.5)                                  # random.cl
loss = F.cross_entropy(x, i.new_tensor([1, 2, 3, 4, 5, 6])) + F.layer_norm(x, (70,)).sum()    # cross_entropy.cl,
loss = loss + F.nll_loss(F.log_softmax(x, 1), i.new_tensor([1, 2, 3, 4, 5, 6]))           # softmax.cl, loss.cl,
loss = loss + F.softmax(x, 0).sum() + F.batch_norm(x, None, None, training=True).sum()         # normalization.cl
loss = loss + F.softmax(x.double(), 1).sum()
img = torch.randn(2, 3, 9, 9, device=dev, requires_grad=True)
loss = loss + F.max_pool2d(img, 3, 2, 1).sum() + F.avg_pool2d(img, 2).sum()                  # pooling.cl, fast_div.cl
loss = loss + F.conv2d(img, torch.randn(4, 3, 3, 3, device=dev), padding=1).sum()            # im2col.cl
loss = loss + F.fold(F.unfold(img, 3, padding=1), (9, 9), 3, padding=1).sum()                # unfold.cl
F.fold(torch.randn(1, 4, 9, device=dev).half(), (4, 4), 2)                                   # its ROUND_T for half
loss = loss + F.adaptive_max_pool2d(img, 4).sum() + torch.linalg.cross(x[:, :3], x[:, 3:6]).sum()  # cross.cl
loss = loss + F.grid_sample(img, torch.rand(2, 3, 4, 2, device=dev) * 2 - 1, align_corners=False).sum()  # grid_sample.cl
loss = loss + F.grid_sample(img[:, :, None], torch.rand(2, 1, 3, 4, 3, device=dev) * 2 - 1, align_corners=True).sum()  # grid_sample_3d.cl
torch.mm(i.view(5, 1), i.view(1, 5))                                                         # gemm_integer.cl
loss = loss + F.embedding_bag(i, x, i.new_tensor([0, 2]), mode="max").sum()                  # embedding_bag.cl
loss = loss + F.pdist(x).sum()                                                               # distance.cl
torch.multinomial(xd[:2].abs() + 0.1, 3, replacement=True)                                  # multinomial.cl
torch.linalg.solve(xd[:, :6] + 9 * torch.eye(6, device=dev), xd[:, :2]); torch.linalg.cholesky(torch.eye(3, device=dev))  # linalg.cl
loss = loss + F.ctc_loss(F.log_softmax(x[:, :6].reshape(6, 1, 6), 2), i.new_tensor([[1, 2]]), [6], [2])  # ctc_loss.cl
loss = loss + F.conv2d(torch.randn(1, 16, 4, 4, device=dev), torch.randn(16, 16, 3, 3, device=dev)).sum()  # winograd.cl (gpu)
loss = loss + F.conv2d(img, torch.randn(6, 1, 3, 3, device=dev, requires_grad=True), groups=3).sum()  # conv_depthwise.cl
loss = loss + (x @ torch.randn(70, 8, device=dev)).sum()                                     # gemm.cl (cpu class)
qa = torch.randn(1, 2, 5, 8, device=dev, requires_grad=True)
loss = loss + F.scaled_dot_product_attention(qa, qa, qa, is_causal=True).sum()               # attention.cl
F.scaled_dot_product_attention(*[qa.detach().double()] * 3)
F.scaled_dot_product_attention(*[torch.randn(1, 2, 5, 32, device=dev)] * 3)                 # head dim = bucket (gpu)
loss.backward()
params = [torch.randn(10, device=dev, requires_grad=True) for _ in range(2)]
sum(p.sum() for p in params).backward()
torch.optim.Adam(params).step(); torch.optim.Adam(params, fused=True).step()                # foreach.cl, optim.cl
torch.zeros(1 << 20, device=dev).clone()                                  # bulk_memory.cl (where the driver's are slow)
# torch.compile's graph programs: inductor.cl (with philox.cl) and the kernels generated after it, one program;
# in the cpu class a product with its epilogue (inductor_gemm.cl).
torch.compile(lambda a: (torch.sigmoid(a) * 2 + a.double().exp().float()).sum(1) + torch.rand_like(a).amax(1)
              + torch.relu(a @ a.t()).sum(1))(xd)
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
    if not _C._device_properties(0)["kernel_fill_min_bytes"]:  # the driver's fills and copies serve this device
        missing = [name for name in missing if name != "bulk_memory.cl"]
    if not _C._device_properties(0)["tensor_core_gemm"]:  # inline PTX: built only where NVIDIA's compiler takes it
        missing = [name for name in missing if name != "gemm_mma.cl"]
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


def test_compile_log_holds_only_diagnostics():
    # A driver's progress notes (Intel's "Compilation started\nCompilation done\n" in every log) are no
    # warning; a warning and an error are given in the driver's words.
    assert _C._compile_log(0, "__kernel void clean(__global float* x) { x[0] = 1.0f; }", "") == (True, "")
    compiled, log = _C._compile_log(0, "__kernel void warns(__global int* x) { x[0] = 1 / 0; }", "")
    assert compiled and "division by zero" in log, log
    compiled, log = _C._compile_log(0, "__kernel void fails(__global int* x) { x[0] = undeclared; }", "")
    assert not compiled and "undeclared" in log, log
