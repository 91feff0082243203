"""Matrix products and convolutions of float16 and bfloat16 tensors (what torch.autocast("opencl") runs them
in) compute natively in float32 and round once, as CPU does: against CPU PyTorch within one rounding of the
dtype, with the CPU fallback refusing. They ran on the fallback before, so an autocast training step copied
every GEMM to the host and back."""
import copy
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
REDUCED = [torch.bfloat16, torch.float16]
# One rounding of the result (CPU rounds the float32 sum once too; the sums' order differs).
TOL = {torch.bfloat16: dict(rtol=8e-3, atol=1e-2), torch.float16: dict(rtol=1e-3, atol=2e-3)}


def same(got, want):
    assert got.device.type == "opencl"
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    torch.testing.assert_close(got.cpu(), want, **TOL[want.dtype])


def rand(*shape, dtype):
    return torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("dtype", REDUCED)
def test_products_match_cpu(dtype):
    torch.manual_seed(0)
    a, b, bias = rand(37, 53, dtype=dtype), rand(53, 29, dtype=dtype), rand(29, dtype=dtype)
    A, B = rand(3, 17, 11, dtype=dtype), rand(3, 11, 13, dtype=dtype)
    v, c = rand(53, dtype=dtype), rand(37, 29, dtype=dtype)
    d = lambda t: t.to(DEV)  # noqa: E731
    with native_only():
        same(d(a) @ d(b), a @ b)
        same(d(b).t() @ d(a).t(), b.t() @ a.t())  # transposed operands read as they lie
        same(torch.addmm(d(bias), d(a), d(b)), torch.addmm(bias, a, b))
        same(torch.addmm(d(c), d(a), d(b), beta=0.5, alpha=2), torch.addmm(c, a, b, beta=0.5, alpha=2))
        cd = d(c)
        cd.addmm_(d(a), d(b), beta=-1.5)  # the addend is the output itself
        same(cd, c.clone().addmm_(a, b, beta=-1.5))
        out = torch.empty(37, 29, dtype=dtype, device=DEV)
        torch.mm(d(a), d(b), out=out)
        same(out, a @ b)
        same(torch.bmm(d(A), d(B)), torch.bmm(A, B))
        same(torch.baddbmm(d(bias[:13]), d(A), d(B), alpha=0.5), torch.baddbmm(bias[:13], A, B, alpha=0.5))
        same(torch.matmul(d(A), d(b[:11, :7])), torch.matmul(A, b[:11, :7]))  # a batch folded into one GEMM
        same(F.linear(d(a), d(b.t()), d(bias)), F.linear(a, b.t(), bias))
        same(d(a) @ d(v), a @ v)
        same(torch.addmv(d(c[:, 0]), d(a), d(v), beta=2), torch.addmv(c[:, 0], a, v, beta=2))
        same(torch.dot(d(v), d(v)), torch.dot(v, v))
        same(d(a[:, :0]) @ d(b[:0]), a[:, :0] @ b[:0])  # k == 0: zeros
    with pytest.raises(RuntimeError, match="expected"):
        torch.mm(d(a), d(b).float())


@pytest.mark.parametrize("dtype", REDUCED)
def test_convolutions_and_their_gradients_match_cpu(dtype):
    """Against CPU's float32 convolution rounded once to the dtype: what CPU's own float16/bfloat16 forms
    compute too, except that its float16 transposed convolution adds col2im's overlapping parts in float16
    (22 ulp off at a value of 0.2 where terms cancel); ours stays within an ulp of the float32 result."""
    torch.manual_seed(0)
    x, w, bias = rand(2, 3, 9, 9, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype), rand(4, dtype=dtype)
    cases = [
        lambda x, w, b: F.conv2d(x, w, b, padding=1),  # Winograd's on PoCL in float32
        lambda x, w, b: F.conv2d(x, w, b, stride=2),  # im2col
        lambda x, w, b: F.conv2d(x, w[:, :, :1, :1], b),  # 1x1 as batched GEMMs
        lambda x, w, b: F.conv_transpose2d(x, w.transpose(0, 1), b, stride=2),
        lambda x, w, b: F.conv1d(x[:, :, 0], w[:, :, 0], b, padding=1),
    ]
    for fn in cases:
        xs, ws, bs = (t.float().requires_grad_() for t in (x, w, bias))
        want = fn(xs, ws, bs)
        grad = torch.randn(want.shape).to(dtype)
        want_grads = torch.autograd.grad(want, (xs, ws, bs), grad.float())
        xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, bias))
        with native_only():
            got = fn(xd, wd, bd)
            got_grads = torch.autograd.grad(got, (xd, wd, bd), grad.to(DEV))
        same(got, want.to(dtype))
        for g, wg in zip(got_grads, want_grads):
            same(g, wg.to(dtype))
        torch.testing.assert_close(got.cpu(), fn(x, w, bias), rtol=2e-2, atol=1e-2)  # CPU's own, loosely
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's once-per-operator note
        with pytest.raises(RuntimeError):  # mixed dtypes keep CPU's error
            F.conv2d(x.to(DEV), w.to(DEV).float())


@pytest.mark.parametrize("dtype", REDUCED)
def test_attention_runs_the_fused_kernels_in_float32(dtype):
    """float16/bfloat16 scaled_dot_product_attention takes the fused kernels (on float32 copies, rounded once),
    not the math path with its stored scores: against CPU's float32 attention rounded to the dtype, forward
    and gradients, causal and with a bool mask."""
    from torch.nn.attention import SDPBackend

    torch.manual_seed(0)
    q, k, v = (rand(2, 3, 17, 16, dtype=dtype) for _ in range(3))
    mask = torch.rand(17, 17) > 0.3
    mask[:, 0] = True
    for kwargs in (dict(is_causal=True), dict(attn_mask=mask), {}):
        dev_kwargs = {n: (t.to(DEV) if isinstance(t, torch.Tensor) else t) for n, t in kwargs.items()}
        qd, kd, vd = (t.to(DEV).requires_grad_() for t in (q, k, v))
        choice = torch._fused_sdp_choice(qd, kd, vd, **dev_kwargs)
        assert choice == SDPBackend.OVERRIDEABLE.value, (dtype, kwargs, choice)
        ref = [t.float().requires_grad_() for t in (q, k, v)]
        want = F.scaled_dot_product_attention(*ref, **kwargs)
        grad = torch.randn(want.shape).to(dtype)
        want_grads = torch.autograd.grad(want, ref, grad.float())
        with native_only():
            got = F.scaled_dot_product_attention(qd, kd, vd, **dev_kwargs)
            got_grads = torch.autograd.grad(got, (qd, kd, vd), grad.to(DEV))
        same(got, want.to(dtype))
        for g, wg in zip(got_grads, want_grads):
            same(g, wg.to(dtype))


def test_autocast_training_steps_run_natively_and_follow_cpu():
    """The three workloads of bench/bench_training.py under torch.autocast (bfloat16) on both devices: no
    operator reaches the fallback, and the losses agree with CPU autocast's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_training

    for name in ("mlp", "digits_cnn", "transformer"):
        torch.manual_seed(0)
        model, (x, y), make_opt, loss_fn = getattr(bench_training, name)()
        model.eval()  # no dropout: the devices draw different masks
        dm = copy.deepcopy(model).to(DEV)
        opt_cpu, opt_dev = make_opt(model), make_opt(dm)
        for _ in range(3):
            losses = []
            for m, opt, xx, yy, dev in ((model, opt_cpu, x, y, "cpu"), (dm, opt_dev, x.to(DEV), y.to(DEV), DEV)):
                with torch.autocast(dev, dtype=torch.bfloat16):
                    if dev == DEV:
                        with native_only():
                            loss = loss_fn(m, xx, yy)
                    else:
                        loss = loss_fn(m, xx, yy)
                opt.zero_grad()
                if dev == DEV:
                    with native_only():
                        loss.backward()
                        opt.step()
                else:
                    loss.backward()
                    opt.step()
                losses.append(loss.item())
            assert abs(losses[0] - losses[1]) <= 2e-2 * max(1.0, abs(losses[0])), (name, losses)
