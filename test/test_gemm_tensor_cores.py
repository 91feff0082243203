"""The tensor-core GEMM (kernels_cl/gemm_mma.cl, inline PTX mma.sync on NVIDIA compute capability 8.0+):
float16/bfloat16 products against CPU's, float32 ones on TF32 only when torch's float32 matmul precision
allows it, and, on devices without it, a forced one that cannot build falls back with one warning."""
import os
import subprocess
import sys

import pytest
import torch
import torch_opencl

from _device_helpers import native_only, launched_kernels

DEV = "opencl"
HAS_TENSOR_CORES = torch_opencl._C._device_properties(0)["tensor_core_gemm"]
needs_tensor_cores = pytest.mark.skipif(
    not HAS_TENSOR_CORES, reason="the device has no tensor-core GEMM (NVIDIA, compute capability 8.0 and up)")

# (m, n, k): tile edges in every dimension, a K past one stage, shapes of the GPT's products.
SHAPES = [(1, 1, 1), (130, 70, 33), (256, 384, 64), (7, 300, 520), (512, 129, 40)]


def data(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def products(dtype):
    """(name, function, cpu inputs) for mm, transposed operands, addmm with a broadcast bias, bmm with an
    expanded operand, baddbmm with alpha and beta."""
    out = []
    for m, n, k in SHAPES:
        a, b = data(m, k, dtype=dtype), data(k, n, dtype=dtype, seed=1)
        out.append((f"mm {m}x{n}x{k}", torch.mm, (a, b)))
        out.append((f"mm a^T b^T {m}x{n}x{k}", lambda x, y: torch.mm(x.t(), y.t()), (a.t().contiguous(), b.t().contiguous())))
        out.append((f"addmm {m}x{n}x{k}", lambda bias, x, y: torch.addmm(bias, x, y, beta=0.5, alpha=2.0),
                    (data(n, dtype=dtype, seed=2), a, b)))
    a, b = data(3, 130, 48, dtype=dtype), data(48, 72, dtype=dtype, seed=1)
    out.append(("bmm, b expanded", lambda x, y: torch.bmm(x, y.expand(3, 48, 72)), (a, b)))
    out.append(("baddbmm", lambda s, x, y: torch.baddbmm(s, x, y, beta=-1.0, alpha=0.5),
                (data(3, 130, 72, dtype=dtype, seed=3), a, data(3, 48, 72, dtype=dtype, seed=4))))
    return out


@needs_tensor_cores
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_products_run_on_tensor_cores_and_match_cpu(dtype):
    for name, fn, inputs in products(dtype):
        want = fn(*inputs)
        with native_only(), launched_kernels() as names:
            got = fn(*[t.to(DEV) for t in inputs])
            torch.opencl.synchronize()
        assert "gemm_mma" in names, f"{name}: ran {sorted(set(names))}"
        # The same exact float products as CPU's; only the order of the float sums differs, then one rounding.
        torch.testing.assert_close(got.cpu().float(), want.float(), rtol=1.6e-2, atol=2e-2, msg=name)


@needs_tensor_cores
def test_float32_takes_tf32_only_where_matmul_precision_allows_it():
    a, b = data(256, 192), data(192, 320, seed=1)
    exact = a.double() @ b.double()
    previous = torch.get_float32_matmul_precision()
    try:
        for precision, tensor_cores, bound in [("highest", False, 1e-5), ("high", True, 5e-3), ("medium", True, 5e-3)]:
            torch.set_float32_matmul_precision(precision)
            with launched_kernels() as names:
                got = (a.to(DEV) @ b.to(DEV)).cpu()
            assert ("gemm_mma" in names) == tensor_cores, (precision, sorted(set(names)))
            # TF32 rounds each operand to 11 significant bits: errors of about 2^-11 of |a| |b| summed.
            error = ((got.double() - exact).abs().max() / (a.abs() @ b.abs()).max()).item()
            assert error < bound, (precision, error)
    finally:
        torch.set_float32_matmul_precision(previous)


@pytest.mark.skipif(HAS_TENSOR_CORES, reason="the device builds the tensor-core GEMM")
def test_forced_tensor_cores_that_cannot_build_warn_once_and_products_go_on():
    code = ("import warnings, torch, torch_opencl\n"
            "warnings.simplefilter('always')\n"
            "a, b = torch.randn(70, 33).bfloat16(), torch.randn(33, 50).bfloat16()\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    got = [(a.to('opencl') @ b.to('opencl')).cpu() for _ in range(2)]\n"
            "torch.testing.assert_close(got[0].float(), (a @ b).float(), rtol=1.6e-2, atol=2e-2)\n"
            "assert torch.equal(got[0], got[1])\n"
            "said = [str(w.message) for w in caught if 'tensor-core GEMM' in str(w.message)]\n"
            "assert len(said) == 1, said\n"
            "print('fell back')\n")
    env = dict(os.environ, TORCH_OPENCL_TENSOR_CORES="1", TORCH_OPENCL_KERNEL_CLASS="gpu")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0 and "fell back" in done.stdout, done.stderr[-3000:]
