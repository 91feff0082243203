"""F.scaled_dot_product_attention on the fused kernels (aten/native/attention.cpp, kernels_cl/attention.cl).

Forward and the three gradients against CPU PyTorch (its math path), that the fused kernels are the ones
that ran, that what they do not take still runs (on the math path), clear errors, and torch.compile.
Head dims fall into three program buckets (<= 32, <= 64, <= 128) per dtype: the cases below use few.
"""
import pytest
import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from _device_helpers import kernel_class, launched_kernels, native_only

DEV = "opencl"
FUSED = {"attention_forward", "attention_backward_dq", "attention_backward_dkv"}


def fused_ran(names):
    """Which of the fused kernels (either form) are among the launched names."""
    return {n.rsplit("_", 1)[0] for n in names if n.startswith("attention_")} & FUSED


def check_against_cpu(q, k, v, mask=None, rtol=1e-5, atol=1e-5, **kw):
    """sdpa forward and backward on CPU and on opencl copies (natively); returns the kernels opencl ran."""
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, attn_mask=mask, **kw)
    grad = torch.randn_like(out)
    out.backward(grad)
    dev = [t.detach().to(DEV).requires_grad_() for t in (q, k, v)]
    with native_only(), launched_kernels() as names:
        got = F.scaled_dot_product_attention(*dev, attn_mask=None if mask is None else mask.to(DEV), **kw)
        got.backward(grad.to(DEV))
    for g, w in [(got, out)] + [(d.grad, c.grad) for d, c in zip(dev, leaves)]:
        assert g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, rtol=rtol, atol=atol)
    return names


def qkv(b, h, lq, lk, d, dv=None, dtype=torch.float32):
    return (torch.randn(b, h, lq, d, dtype=dtype), torch.randn(b, h, lk, d, dtype=dtype),
            torch.randn(b, h, lk, dv or d, dtype=dtype))


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def test_bench_transformer_views_causal_are_fused():
    """bench_training's transformer: q/k/v are transposed views of one qkv projection, passed as they are."""
    b, t, c, heads = 2, 64, 64, 4
    x = torch.randn(b, t, 3 * c)
    q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in x.split(c, dim=2))
    assert not q.is_contiguous()
    names = check_against_cpu(q, k, v, is_causal=True)
    assert fused_ran(names) == FUSED
    # The scores are never materialised: no GEMM, softmax or mask kernels, one launch forward, two backward.
    assert not [n for n in names if "gemm" in n or "softmax" in n or n == "triangle"], names
    assert sum(n.startswith("attention_") for n in names) == 3, names
    # The form runtime/kernel_forms.h chose for the device's kernel class.
    form = "_tiles" if kernel_class() == "gpu" else "_rows"
    assert all(n.endswith(form) for n in names if n.startswith("attention_")), names


@pytest.mark.parametrize(
    "lq, lk, d, dv, causal",
    [(37, 19, 64, 64, False), (5, 23, 8, 8, True), (29, 13, 8, 8, True), (20, 33, 16, 8, False)],
    ids=["lq>lk", "causal_lq<lk", "causal_lq>lk", "dv<d"],
)
def test_shapes_and_causal(lq, lk, d, dv, causal):
    assert fused_ran(check_against_cpu(*qkv(2, 3, lq, lk, d, dv), is_causal=causal)) == FUSED


def test_bool_mask_broadcast_with_fully_masked_rows_head_dim_80():
    """A (Lq, Lk) bool mask broadcast over batch and heads; rows with no key allowed give 0 and 0 gradients,
    as CPU's math path (_safe_softmax) does."""
    q, k, v = qkv(2, 2, 24, 40, 80)
    mask = torch.rand(24, 40) > 0.4
    mask[3] = False
    mask[17] = False
    names = check_against_cpu(q, k, v, mask)
    assert fused_ran(names) == FUSED
    out = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), attn_mask=mask.to(DEV))
    assert torch.equal(out[:, :, 3].cpu(), torch.zeros(2, 2, 80))


def test_float_mask_broadcast_over_heads_and_custom_scale():
    q, k, v = qkv(2, 3, 16, 24, 64)
    bias = torch.randn(2, 1, 16, 24)
    bias[0, 0, :4, 5:] = float("-inf")
    assert fused_ran(check_against_cpu(q, k, v, bias, scale=0.3)) == FUSED
    assert fused_ran(check_against_cpu(q, k, v, bias[:, :, :1], scale=-0.05)) == FUSED  # also over query rows


def test_head_dim_128_and_permuted_key():
    q, k, v = qkv(1, 2, 18, 21, 128)
    k = k.transpose(2, 3).contiguous().transpose(2, 3)  # head dim outermost
    assert fused_ran(check_against_cpu(q, k, v, is_causal=True, rtol=1e-4, atol=1e-5)) == FUSED


def test_float64():
    q, k, v = qkv(2, 2, 11, 9, 8, dtype=torch.float64)
    mask = torch.rand(2, 1, 11, 9) > 0.3
    assert fused_ran(check_against_cpu(q, k, v, mask, rtol=1e-10, atol=1e-12)) == FUSED
    assert fused_ran(check_against_cpu(q, k, v, is_causal=True, rtol=1e-10, atol=1e-12)) == FUSED


def test_output_layout_matches_the_meta_function():
    """torch.compile's fake tensors take the output's shape and strides from PyTorch's meta function."""
    x = torch.randn(2, 9, 3, 4, 16)  # (b, t, qkv, heads, d): q/k/v transposed views
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))
    v = v[..., :8]
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    for vv in (v, v.contiguous(), k):
        real = op(q.to(DEV), k.to(DEV), vv.to(DEV), None, 0.0, True)
        meta = op(*(torch.empty_strided(t.shape, t.stride(), device="meta") for t in (q, k, vv)), None, 0.0, True)
        for r, m in zip(real[:2], meta[:2]):
            assert (r.shape, r.stride(), r.dtype) == (m.shape, m.stride(), m.dtype)
        assert (real[4], real[5]) == (9, 9)


def test_choice_and_what_stays_on_math():
    q, k, v = (t.to(DEV) for t in qkv(1, 4, 8, 8, 16))
    assert torch._fused_sdp_choice(q, k, v) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q.half(), k.half(), v.half()) == SDPBackend.MATH.value

    # Dropout runs the math path (our Philox dropout): the same draw as the math backend forced.
    def with_seed(**kw):
        torch.manual_seed(3)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, **kw)

    with launched_kernels() as names:
        dropped = with_seed()
    assert not fused_ran(names)
    with sdpa_kernel(SDPBackend.MATH):
        assert torch.equal(dropped.cpu(), with_seed().cpu())

    # Grouped-query attention (2 key/value heads for 4 query heads): math, against CPU.
    kg, vg = k[:, :2], v[:, :2]
    got = F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True, is_causal=True)
    want = F.scaled_dot_product_attention(q.cpu(), kg.cpu(), vg.cpu(), enable_gqa=True, is_causal=True)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)

    # A float mask that requires grad gets its gradient from the math path.
    mask = torch.randn(8, 8, requires_grad=True)
    mask_dev = mask.detach().to(DEV).requires_grad_()
    F.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu(), attn_mask=mask).sum().backward()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask_dev).sum().backward()
    torch.testing.assert_close(mask_dev.grad.cpu(), mask.grad, rtol=1e-5, atol=1e-5)

    # sdpa_kernel is honoured both ways.
    with sdpa_kernel(SDPBackend.MATH), launched_kernels() as names:
        F.scaled_dot_product_attention(q, k, v)
    assert not fused_ran(names)
    with sdpa_kernel(SDPBackend.OVERRIDEABLE):
        with pytest.raises(RuntimeError, match="math backend is disabled.*dropout_p must be 0"):
            F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)


def test_bad_input_gives_clear_errors():
    q, k, v = (t.to(DEV) for t in qkv(1, 2, 8, 8, 16))
    with pytest.raises(RuntimeError, match="same device"):
        F.scaled_dot_product_attention(q, k.cpu(), v)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.double(), v)
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    with pytest.raises(RuntimeError, match="q and k must have the same head dim"):
        op(q, k[..., :8], v)
    with pytest.raises(RuntimeError, match="head dims must be 1 to 128"):
        op(*(torch.randn(1, 1, 4, 160, device=DEV) for _ in range(3)))
    with pytest.raises(RuntimeError, match="attn_mask must broadcast"):
        op(q, k, v, torch.zeros(3, 8, device=DEV))
    with pytest.raises(RuntimeError, match="attn_bias must have q's dtype"):
        op(q, k, v, torch.ones(8, 8, dtype=torch.bool, device=DEV))
    out, lse = op(q, k, v)[:2]
    bwd = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward
    none = torch.empty(0, device=DEV)
    with pytest.raises(RuntimeError, match="grad_out and out must be"):
        bwd(out[..., :4], q, k, v, None, [True, True, True, False], out, lse, none, none, 8, 8, 0.0, False, none, none)
    # The device keeps working.
    check_against_cpu(q.cpu(), k.cpu(), v.cpu())


class Attention(nn.Module):
    def __init__(self, width=32, heads=2):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(width, 3 * width), nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        return self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))


def test_compile_calls_the_fused_kernel():
    """Inductor makes the op an extern call to our kernel: no CPU fallback, no eager-node fallback."""
    from torch._inductor.utils import run_and_get_code
    from torch_opencl._inductor import fallback

    torch._dynamo.reset()
    fallback.reset_stats()
    model = Attention()
    x = torch.randn(2, 12, 32)
    model(x).square().sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    dev = Attention().to(DEV)
    dev.load_state_dict(model.state_dict())
    compiled = torch.compile(dev)
    with native_only():
        (out, codes) = run_and_get_code(lambda: compiled(x.to(DEV)).square().sum().backward())
    torch.testing.assert_close([p.grad.cpu() for p in dev.parameters()], want, rtol=1e-4, atol=1e-5)
    assert any("_scaled_dot_product_fused_attention_overrideable" in c for c in codes)
    assert not [op for op in fallback.stats() if "attention" in op]
    torch._dynamo.reset()
