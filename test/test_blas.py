"""BLAS through CLBlast (mm, addmm, bmm, baddbmm, mv/addmv, dot, matmul, Linear) against CPU:
transposed, strided, offset and expanded operands, 0-size, alpha/beta, out= and in-place,
float32/float64, gradients, and the ops are native (fallback mode "error").

On CPU devices the small-GEMM kernel (test_gemm_small.py) serves most of these; test_clblast_path
and the n=256 test switch it off, the latter exercising CLBlast's indirect kernel with the built-in
tuned parameters. Each CLBlast routine
and precision compiles once (several seconds cold on PoCL)."""
import json
import os
import subprocess
import sys

import pytest
import torch

import torch_opencl  # noqa: F401

from _device_helpers import launched_kernels, native_only

DEV = "opencl"
HAS_FP64 = torch.opencl.get_device_properties(0).fp64
DTYPES = [torch.float32] + ([torch.float64] if HAS_FP64 else [])


def rnd(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def close(actual, expected, dtype=torch.float32):
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(actual.cpu(), expected, rtol=tol, atol=tol)


# Operand forms: (name, make(cpu tensor of the logical shape) -> opencl tensor with that value).
def contiguous(t):
    return t.to(DEV)


def transposed(t):  # column-major storage
    return t.t().contiguous().to(DEV).t()


def sliced(t):  # row stride larger than the width, and a storage offset
    big = torch.zeros(t.shape[0] + 2, t.shape[1] + 3, dtype=t.dtype)
    big[1:-1, 2:-1] = t
    return big.to(DEV)[1:-1, 2:-1]


def strided(t):  # neither row- nor column-major with unit stride: CLBlast needs a copy
    big = torch.zeros(t.shape[0], 2 * t.shape[1], dtype=t.dtype)
    big[:, ::2] = t
    return big.to(DEV)[:, ::2]


FORMS = [contiguous, transposed, sliced, strided]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fa", FORMS)
@pytest.mark.parametrize("fb", [contiguous, transposed, sliced])
def test_mm_layouts(dtype, fa, fb):
    a, b = rnd(13, 7, dtype=dtype), rnd(7, 9, dtype=dtype, seed=1)
    with native_only():
        out = torch.mm(fa(a), fb(b))
    close(out, a @ b, dtype)


@pytest.mark.parametrize("form", [transposed, sliced, strided])
def test_mm_out_layouts_and_nan(form):
    # out= of any layout; beta = 0 ignores the NaNs already in out.
    a, b = rnd(13, 7), rnd(7, 9, seed=1)
    out = form(torch.full((13, 9), float("nan")))
    with native_only():
        r = torch.mm(a.to(DEV), b.to(DEV), out=out)
    assert r is out
    close(out, a @ b)


def test_mm_out_resizes():
    a, b = rnd(5, 4), rnd(4, 3, seed=1)
    out = torch.empty(0, device=DEV)
    with native_only():
        torch.mm(a.to(DEV), b.to(DEV), out=out)
    assert out.shape == (5, 3)
    close(out, a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_addmm(dtype, beta, alpha):
    a, b, c = rnd(6, 5, dtype=dtype), rnd(5, 4, dtype=dtype, seed=1), rnd(4, dtype=dtype, seed=2)
    if beta == 0:
        c = torch.full((6, 4), float("nan"), dtype=dtype)  # ignored when beta == 0, as on CPU
    expected = torch.addmm(c, a, b, beta=beta, alpha=alpha)
    with native_only():
        close(torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=beta, alpha=alpha), expected, dtype)
        self_full = c.expand(6, 4).contiguous()
        inplace = self_full.to(DEV)
        inplace.addmm_(transposed(a), b.to(DEV), beta=beta, alpha=alpha)
        close(inplace, expected, dtype)
        out = torch.empty(6, 4, dtype=dtype, device=DEV)
        torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=beta, alpha=alpha, out=out)
        close(out, expected, dtype)


# addmm's self in each form it takes: our GEMM kernels read it in place as the addend (strides 0 where it is
# broadcast), CLBlast gets it copied into the result. (m, n, k) leave partial tiles in both kernel classes.
ADD_M, ADD_N, ADD_K = 19, 37, 23
SELF_FORMS = {
    "bias": lambda t: t[0].contiguous().to(DEV),  # 1-D, broadcast over rows
    "column": lambda t: t[:, :1].contiguous().to(DEV),  # (m, 1)
    "row": lambda t: t[:1].contiguous().to(DEV),  # (1, n)
    "scalar": lambda t: t[0, 0].clone().to(DEV),  # 0-d
    "full": contiguous,
    "transposed": transposed,
    "strided": strided,
    "expanded_row": lambda t: t[:1].to(DEV).expand(ADD_M, ADD_N),  # (m, n) with row stride 0
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", list(SELF_FORMS))
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1.5)])
def test_addmm_self_forms(dtype, form, beta, alpha):
    a, b = rnd(ADD_M, ADD_K, dtype=dtype), rnd(ADD_K, ADD_N, dtype=dtype, seed=1)
    full = rnd(ADD_M, ADD_N, dtype=dtype, seed=2)
    if beta == 0:
        full = torch.full_like(full, float("nan"))  # ignored when beta == 0, NaN included, as on CPU
        full[0, 0] = float("inf")
    self_dev = SELF_FORMS[form](full)
    self_cpu = self_dev.cpu()
    expected = torch.addmm(self_cpu, a, b, beta=beta, alpha=alpha)
    with native_only():
        close(torch.addmm(self_dev, a.to(DEV), transposed(b), beta=beta, alpha=alpha), expected, dtype)
        out = torch.full((ADD_N, ADD_M), float("nan"), dtype=dtype, device=DEV).t()  # a column-major out=
        torch.addmm(self_dev, a.to(DEV), b.to(DEV), beta=beta, alpha=alpha, out=out)
        close(out, expected, dtype)
    torch.testing.assert_close(self_dev.cpu(), self_cpu, rtol=0, atol=0, equal_nan=True)  # self untouched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", [contiguous, transposed, strided])
def test_addmm_in_place_and_out_is_self(dtype, form):
    a, b, c = rnd(ADD_M, ADD_K, dtype=dtype), rnd(ADD_K, ADD_N, dtype=dtype, seed=1), rnd(ADD_M, ADD_N, dtype=dtype,
                                                                                          seed=2)
    expected = torch.addmm(c, a, b, beta=0.5, alpha=-2.0)
    with native_only():
        inplace = form(c)
        assert inplace.addmm_(a.to(DEV), b.to(DEV), beta=0.5, alpha=-2.0) is inplace
        close(inplace, expected, dtype)
        same = form(c)
        assert torch.addmm(same, a.to(DEV), b.to(DEV), beta=0.5, alpha=-2.0, out=same) is same
        close(same, expected, dtype)
        # self a column of out= itself (partly the same memory): the result as CPU computes it
        big, big_dev = c.clone(), form(c)
        torch.addmm(big[:, :1], a, b, beta=0.5, alpha=-2.0, out=big)
        torch.addmm(big_dev[:, :1], a.to(DEV), b.to(DEV), beta=0.5, alpha=-2.0, out=big_dev)
        close(big_dev, big, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_baddbmm_self_forms(dtype):
    batch, m, n, k = 3, 11, 21, 9
    a, b = rnd(batch, m, k, dtype=dtype), rnd(batch, k, n, dtype=dtype, seed=1)
    full = rnd(batch, m, n, dtype=dtype, seed=2)
    selves = [full[0], full[:1], full[0, 0], full[0, :, :1], full, full.transpose(1, 2).contiguous().transpose(1, 2),
              torch.tensor(2.5, dtype=dtype)]
    with native_only():
        for self_cpu in selves:
            for beta, alpha in [(1, 1), (0.5, -2.0)]:
                close(torch.baddbmm(self_cpu.to(DEV), a.to(DEV), b.to(DEV), beta=beta, alpha=alpha),
                      torch.baddbmm(self_cpu, a, b, beta=beta, alpha=alpha), dtype)
        nan_self = torch.full((m, n), float("nan"), dtype=dtype)
        close(torch.baddbmm(nan_self.to(DEV), a.to(DEV), b.to(DEV), beta=0), torch.bmm(a, b), dtype)
        inplace = full.to(DEV)
        inplace.baddbmm_(a.to(DEV), b.to(DEV), beta=0.5)
        close(inplace, torch.baddbmm(full, a, b, beta=0.5), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmv_self_forms(dtype):
    # On the CPU kernel class addmv with its own self is one GEMM launch reading self in place; CLBlast's
    # Gemv (the GPU class) gets self copied into the result.
    m, k = 37, 23
    a, x = rnd(m, k, dtype=dtype), rnd(k, dtype=dtype, seed=1)
    full = rnd(m, dtype=dtype, seed=2)
    wide = torch.zeros(2 * m, dtype=dtype)
    wide[::2] = full
    selves = [(full.to(DEV), full), (full[:1].to(DEV), full[:1]), (full[0].to(DEV), full[0]),
              (wide.to(DEV)[::2], full)]
    with native_only():
        for self_dev, self_cpu in selves:
            for beta, alpha in [(1, 1), (0.5, -2.0)]:
                expected = torch.addmv(self_cpu, a, x, beta=beta, alpha=alpha)
                close(torch.addmv(self_dev, a.to(DEV), x.to(DEV), beta=beta, alpha=alpha), expected, dtype)
                close(torch.addmv(self_dev, transposed(a), x.to(DEV), beta=beta, alpha=alpha), expected, dtype)
                out = torch.full((2 * m,), float("nan"), dtype=dtype, device=DEV)[::2]
                torch.addmv(self_dev, a.to(DEV), x.to(DEV), beta=beta, alpha=alpha, out=out)
                close(out, expected, dtype)
        nan_self = torch.full((m,), float("nan"), dtype=dtype)
        close(torch.addmv(nan_self.to(DEV), a.to(DEV), x.to(DEV), beta=0, alpha=1.5), 1.5 * (a @ x), dtype)
        inplace = full.to(DEV)
        inplace.addmv_(a.to(DEV), x.to(DEV), beta=0.5, alpha=-2.0)
        close(inplace, torch.addmv(full, a, x, beta=0.5, alpha=-2.0), dtype)
        same = full.to(DEV)
        torch.addmv(same, a.to(DEV), x.to(DEV), beta=0.5, out=same)
        close(same, torch.addmv(full, a, x, beta=0.5), dtype)
        close(torch.addmv(full.to(DEV), torch.empty(m, 0, dtype=dtype, device=DEV),
                          torch.empty(0, dtype=dtype, device=DEV), beta=2), 2 * full, dtype)


def test_a_bias_costs_no_launch_of_its_own():
    # The bias is the GEMM kernel's addend, not a copy into the result first (no copy_strided launch).
    from torch_opencl import _C
    a, b, bias = rnd(64, 48).to(DEV), rnd(48, 40, seed=1).to(DEV), rnd(40, seed=2).to(DEV)

    def kernels(fn):
        torch.opencl.synchronize()
        with launched_kernels() as names:
            result = fn()
            torch.opencl.synchronize()
        return result, names

    with native_only():
        torch.addmm(bias, a, b)  # compiles first
        product, mm_kernels = kernels(lambda: torch.mm(a, b))
        result, addmm_kernels = kernels(lambda: torch.addmm(bias, a, b))
        linear, linear_kernels = kernels(lambda: torch.nn.functional.linear(a, b.t(), bias))
        bias_m = rnd(64, seed=3).to(DEV)
        mv, addmv_kernels = kernels(lambda: torch.addmv(bias_m, a, b[:, 0]))
    close(result, torch.addmm(bias.cpu(), a.cpu(), b.cpu()))
    close(mv, torch.addmv(bias_m.cpu(), a.cpu(), b[:, 0].cpu()))
    close(linear, result.cpu())
    assert mm_kernels and any("gemm" in name for name in mm_kernels), mm_kernels  # our kernel, not CLBlast
    assert addmm_kernels == mm_kernels, (addmm_kernels, mm_kernels)
    assert "copy_strided" not in linear_kernels and len(linear_kernels) == len(mm_kernels), linear_kernels
    if _C._device_properties(0)["kernel_class"] == "cpu":  # our GEMM (else CLBlast's Gemv, not counted)
        assert len(addmv_kernels) == 1 and "gemm" in addmv_kernels[0], addmv_kernels


def test_zero_sizes():
    with native_only():
        # k == 0: the result is beta * self (zeros for mm)
        close(torch.mm(torch.empty(3, 0, device=DEV), torch.empty(0, 4, device=DEV)), torch.zeros(3, 4))
        c = rnd(3, 4)
        close(torch.addmm(c.to(DEV), torch.empty(3, 0, device=DEV), torch.empty(0, 4, device=DEV), beta=2),
              2 * c)
        assert torch.mm(torch.empty(0, 5, device=DEV), rnd(5, 4).to(DEV)).shape == (0, 4)
        assert torch.bmm(torch.empty(0, 2, 5, device=DEV), torch.empty(0, 5, 4, device=DEV)).shape == (0, 2, 4)
        close(torch.bmm(torch.empty(2, 3, 0, device=DEV), torch.empty(2, 0, 4, device=DEV)), torch.zeros(2, 3, 4))
        close(torch.mv(torch.empty(3, 0, device=DEV), torch.empty(0, device=DEV)), torch.zeros(3))
        close(torch.dot(torch.empty(0, device=DEV), torch.empty(0, device=DEV)), torch.tensor(0.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_and_baddbmm(dtype):
    a, b = rnd(3, 5, 7, dtype=dtype), rnd(3, 7, 4, dtype=dtype, seed=1)
    c = rnd(3, 5, 4, dtype=dtype, seed=2)
    with native_only():
        close(torch.bmm(a.to(DEV), b.to(DEV)), a @ b, dtype)
        # transposed matrices inside the batch, and an expanded (batch stride 0) operand
        at_ = a.transpose(1, 2).contiguous().to(DEV).transpose(1, 2)
        b0 = b[:1].to(DEV).expand(3, 7, 4)
        close(torch.bmm(at_, b0), a @ b[:1].expand(3, 7, 4), dtype)
        # a column-major output
        out = torch.empty(3, 4, 5, dtype=dtype, device=DEV).transpose(1, 2)
        torch.bmm(a.to(DEV), b.to(DEV), out=out)
        close(out, a @ b, dtype)
        close(torch.baddbmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2), torch.baddbmm(c, a, b, beta=0.5,
                                                                                                alpha=2), dtype)
        inplace = c.to(DEV)
        inplace.baddbmm_(a.to(DEV), b.to(DEV))
        close(inplace, torch.baddbmm(c, a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mv_addmv_dot(dtype):
    a, x, y = rnd(6, 5, dtype=dtype), rnd(5, dtype=dtype, seed=1), rnd(6, dtype=dtype, seed=2)
    with native_only():
        close(torch.mv(a.to(DEV), x.to(DEV)), a @ x, dtype)
        close(torch.mv(transposed(a), x.to(DEV)[::1]), a @ x, dtype)
        xs = torch.zeros(10, dtype=dtype)
        xs[::2] = x
        close(torch.mv(a.to(DEV), xs.to(DEV)[::2]), a @ x, dtype)  # increment 2
        close(torch.addmv(y.to(DEV), a.to(DEV), x.to(DEV), beta=0.5, alpha=2), torch.addmv(y, a, x, beta=0.5,
                                                                                            alpha=2), dtype)
        out = torch.full((6,), float("nan"), dtype=dtype, device=DEV)
        torch.mv(a.to(DEV), x.to(DEV), out=out)  # NaNs in out are ignored
        close(out, a @ x, dtype)
        close(torch.dot(x.to(DEV), x.to(DEV)), x @ x, dtype)
        close(torch.dot(xs.to(DEV)[::2], x.to(DEV)), x @ x, dtype)
        close(torch.dot(x.to(DEV), torch.ones(1, dtype=dtype, device=DEV).expand(5)), x.sum(), dtype)
        r = torch.empty((), dtype=dtype, device=DEV)
        torch.dot(x.to(DEV), x.to(DEV), out=r)
        close(r, x @ x, dtype)


def test_matmul_and_linear_gradients():
    torch.manual_seed(0)
    x = rnd(4, 3, 8)
    lin = torch.nn.Linear(8, 5).double().float()
    lin_d = torch.nn.Linear(8, 5).to(DEV)
    lin_d.load_state_dict(lin.state_dict())
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    yc, yd = lin(xc[0]), lin_d(xd[0])  # 2-D input: addmm
    g = rnd(3, 5, seed=3)
    yc.backward(g)
    yd.backward(g.to(DEV))
    close(yd.detach(), yc.detach())
    close(xd.grad, xc.grad)
    close(lin_d.weight.grad, lin.weight.grad)
    with native_only():
        a, b = rnd(2, 4, 6), rnd(6, 3, seed=1)
        close(a.to(DEV) @ b.to(DEV), a @ b)  # folded into mm
        close(torch.matmul(a.to(DEV), rnd(2, 6, 3, seed=1).to(DEV)), a @ rnd(2, 6, 3, seed=1))
        close(torch.matmul(a[0].to(DEV), b[:, 0].to(DEV)), a[0] @ b[:, 0])
        close(torch.matmul(b[:, 0].to(DEV), b[:, 0].to(DEV)), b[:, 0] @ b[:, 0])


@pytest.fixture
def clblast_only():
    """CLBlast for every size: the small-GEMM kernel (test_gemm_small.py) switched off."""
    from torch_opencl import _C
    old = _C._small_gemm_limit(0)
    yield
    _C._small_gemm_limit(old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clblast_path(dtype, clblast_only):
    a, b, c = rnd(3, 5, 7, dtype=dtype), rnd(3, 7, 4, dtype=dtype, seed=1), rnd(3, 5, 4, dtype=dtype, seed=2)
    with native_only():
        close(torch.mm(a[0].to(DEV), transposed(b[0])), a[0] @ b[0], dtype)
        close(torch.addmm(c[0].to(DEV), transposed(a[0]), b[0].to(DEV), beta=0.5, alpha=2),
              torch.addmm(c[0], a[0], b[0], beta=0.5, alpha=2), dtype)
        close(torch.baddbmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2),
              torch.baddbmm(c, a, b, beta=0.5, alpha=2), dtype)
        # a broadcast self is copied into the result for CLBlast, which reads C only
        close(torch.addmm(c[0, 0].to(DEV), a[0].to(DEV), b[0].to(DEV), beta=0.5, alpha=2),
              torch.addmm(c[0, 0], a[0], b[0], beta=0.5, alpha=2), dtype)
        close(torch.baddbmm(c[0].to(DEV), a.to(DEV), b.to(DEV), beta=0.5), torch.baddbmm(c[0], a, b, beta=0.5), dtype)
        nan_self = torch.full((4,), float("nan"), dtype=dtype)
        close(torch.addmm(nan_self.to(DEV), a[0].to(DEV), b[0].to(DEV), beta=0), a[0] @ b[0], dtype)


def test_large_gemm_uses_tuned_kernel(clblast_only):
    # n = 256 reaches CLBlast's indirect Xgemm kernel (with the built-in parameters on PoCL).
    a, b = rnd(256, 256), rnd(256, 256, seed=1)
    with native_only():
        out = torch.full((256, 256), float("nan"), device=DEV)
        torch.mm(a.to(DEV), transposed(b), out=out)  # beta = 0 ignores the NaNs
        close(out, a @ b)
        out = torch.full((2, 256, 256), float("nan"), device=DEV)
        torch.bmm(torch.stack([a, b]).to(DEV), torch.stack([b, a]).to(DEV), out=out)
        close(out, torch.stack([a @ b, b @ a]))


def test_complex_runs_on_cpu_and_is_counted():
    # Integers are native (test_int_matmul.py); complex products still run on the counted CPU fallback.
    a = torch.complex(rnd(4, 3), rnd(4, 3, seed=1))
    b = torch.complex(rnd(3, 2, seed=2), rnd(3, 2, seed=3))
    torch.opencl.reset_fallback_stats()
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")
    try:
        r = torch.mm(a.to(DEV), b.to(DEV))
    finally:
        torch.opencl.set_fallback_mode(previous)
    assert r.device.type == DEV and r.dtype == torch.complex64
    torch.testing.assert_close(r.cpu(), a @ b)
    assert torch.opencl.fallback_stats().get("aten::mm", 0) == 1
    with native_only(), pytest.raises(RuntimeError, match="aten::mm"):
        torch.mm(a.to(DEV), b.to(DEV))


def test_errors():
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        torch.mm(rnd(2, 3).to(DEV), rnd(4, 2).to(DEV))
    with pytest.raises(RuntimeError, match="same dtype|expected"):
        torch.mm(rnd(2, 3).to(DEV), rnd(3, 2, dtype=torch.float64).to(DEV))
    with pytest.raises(RuntimeError, match="device"):
        torch.mm(rnd(2, 3).to(DEV), rnd(3, 2))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(rnd(2, 3).to(DEV), rnd(3).to(DEV))


def run_python(code, env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)


def test_tuner_saves_and_backend_applies(tmp_path):
    # One candidate per kernel (the built-in sets, already compiled by the tests above), one switch size:
    # the saved file is JSON, and a new process applies it before its first GEMM.
    env = {"TORCH_OPENCL_CACHE_DIR": str(tmp_path), "TORCH_OPENCL_FALLBACK": "silent"}
    r = run_python("from torch_opencl import tune; "
                   "r = tune.tune(n=64, max_candidates=1, max_seconds=300, progress=False, switch_sizes=(64,), "
                   "direct_seconds=300, direct_size=64); "
                   "print(r['path'])", env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip().splitlines()[-1]
    with open(path) as f:
        saved = json.load(f)
    xgemm = saved["parameters"]["32"]["Xgemm"]
    assert set(xgemm) >= {"KWG", "MWG", "NWG", "VWM", "VWN"}
    assert set(saved["parameters"]["32"].get("GemmRoutine", {})) <= {"XGEMM_MIN_INDIRECT_SIZE"}
    assert set(saved["parameters"]["32"]["XgemmDirect"]) >= {"WGD", "MDIMCD", "NDIMCD", "VWMD", "VWND", "KWID"}
    check = ("import torch, torch_opencl; from torch_opencl import _C; "
             "a = torch.ones(8, 8, device='opencl'); print((a @ a).sum().item()); print(_C._gemm_tuning_source(0))")
    r = run_python(check, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "512.0" and r.stdout.strip().endswith("file")
    # A broken file is ignored with a note, and GEMM still works.
    with open(path, "w") as f:
        f.write('{"parameters": {"32": {"Xgemm": {"KWG": 16}}}}')
    r = run_python(check, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "512.0" and "ignored" in r.stdout
    r = run_python(check, dict(env, TORCH_OPENCL_GEMM_TUNING="0"))
    assert r.stdout.strip().endswith("disabled")
