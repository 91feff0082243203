"""F.scaled_dot_product_attention on the fused kernels (aten/native/attention.cpp, kernels_cl/attention.cl).

Forward and the three gradients against CPU PyTorch (its math path), that the fused kernels are the ones
that ran, that what they do not take still runs (on the math path), clear errors, and torch.compile.
Head dims fall into three program buckets (<= 32, <= 64, <= 128) per dtype, and <= 16 in the GPU form, which
compiles the dims in where they equal the bucket: the cases below use few.
"""
import math

import numpy as np
import pytest
import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from _device_helpers import kernel_class, launched_kernels, native_only
from _philox import philox4x32_10

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
        torch.testing.assert_close(g.cpu(), w, rtol=rtol, atol=atol, equal_nan=True)
    return names


def qkv(b, h, lq, lk, d, dv=None, dtype=torch.float32):
    return (torch.randn(b, h, lq, d, dtype=dtype), torch.randn(b, h, lk, d, dtype=dtype),
            torch.randn(b, h, lk, dv or d, dtype=dtype))


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def prefer_fused(request):
    """The fused kernels wherever they can take a call, whatever head dim the device's own choice would send to
    the math path (test_the_device_chooses_by_head_dim_unless_asked checks that choice)."""
    if request.node.name == "test_the_device_chooses_by_head_dim_unless_asked":
        yield
        return
    with sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH], set_priority=True):
        yield


def test_the_device_chooses_by_head_dim_unless_asked():
    """The GPU form walks a row's keys serially and loses to the math path's GEMMs beyond head dim 32 on an
    H100; the CPU form wins at every head dim (runtime/kernel_forms.cpp). sdpa_kernel overrides the choice."""
    choice = torch._fused_sdp_choice
    limit = 32 if kernel_class() == "gpu" else 128
    for d in (16, 32, 64, 128):
        q, k, v = (t.to(DEV) for t in qkv(1, 2, 8, 8, d))
        want = SDPBackend.OVERRIDEABLE if d <= limit else SDPBackend.MATH
        assert choice(q, k, v, is_causal=True) == want.value, d
        with sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH], set_priority=True):
            assert choice(q, k, v, is_causal=True) == SDPBackend.OVERRIDEABLE.value
        with sdpa_kernel(SDPBackend.OVERRIDEABLE):
            assert choice(q, k, v, is_causal=True) == SDPBackend.OVERRIDEABLE.value
        with sdpa_kernel(SDPBackend.MATH):
            assert choice(q, k, v, is_causal=True) == SDPBackend.MATH.value
    # Either way the answer is CPU's.
    q, k, v = qkv(1, 2, 8, 8, 64)
    check_against_cpu(q, k, v, is_causal=True)


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


@pytest.mark.parametrize("where", ["query_row", "key_row", "value_row"])
def test_nan_propagates_as_on_cpu(where):
    """A NaN in a query row makes every score of that row NaN, and a NaN key makes one score of each row
    NaN: softmax, and so CPU's math path, gives NaN rows there (not the 0 of a fully masked row), in the
    forward and in the gradients; a NaN value row reaches every output that weighs it."""
    q, k, v = qkv(1, 2, 40, 40, 16)
    {"query_row": q, "key_row": k, "value_row": v}[where][0, 1, 5, 3] = float("nan")
    names = check_against_cpu(q, k, v)
    assert fused_ran(names) == FUSED
    out = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV)).cpu()
    assert out[0, 1].isnan().any() and not out[0, 0].isnan().any()


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
    assert torch._fused_sdp_choice(q, k, v, dropout_p=0.1) == SDPBackend.OVERRIDEABLE.value
    # float16/bfloat16 run the fused kernels in float32 (test_reduced_precision_products); integers do not.
    assert torch._fused_sdp_choice(q.half(), k.half(), v.half()) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q.bfloat16(), k.bfloat16(), v.bfloat16()) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q.long(), k.long(), v.long()) == SDPBackend.MATH.value

    # Grouped-query attention is fused with enable_gqa=True (test_grouped_query_attention); unequal heads
    # without it, or a head count that is not a multiple, stay on math (which broadcasts or raises, as CPU).
    assert torch._fused_sdp_choice(q, k[:, :2], v[:, :2], enable_gqa=True) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q, k[:, :2], v[:, :2]) == SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q, k[:, :3], v[:, :3], enable_gqa=True) == SDPBackend.MATH.value
    got = F.scaled_dot_product_attention(q, k[:, :1], v[:, :1])  # a single k/v head broadcasts on math
    want = F.scaled_dot_product_attention(q.cpu(), k[:, :1].cpu(), v[:, :1].cpu())
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
        with pytest.raises(RuntimeError, match="math backend is disabled.*head dims must be 1 to 128"):
            wide = torch.randn(1, 4, 8, 129, device=DEV)
            F.scaled_dot_product_attention(wide, wide, wide)


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
    with pytest.raises(RuntimeError, match="q's head count must be a multiple of k and v's"):
        op(torch.randn(1, 3, 8, 16, device=DEV), k, v)
    with pytest.raises(RuntimeError, match="k and v must have the same head count"):
        op(q, k, v[:, :1])
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


# ---- Dropout in the fused kernels: the mask is Philox-4x32-10 (kernels_cl/philox.cl) at a counter fixed by
# the score's position, so the tests rebuild it here and compare with CPU's math path given that mask.


def keep_mask(seed, offset, shape, p):
    """The kernels' keep mask over the (B, H, Lq, Lk) scores: element e = ((b * H + h) * Lq + i) * Lk + j is
    kept when the low 24 bits of lane e % 4 of Philox block (offset + 3) // 4 + e // 4 are below
    ceil((1 - p) * 2^24) (its uniform, as eager dropout draws them, is below 1 - p)."""
    n = math.prod(shape)
    e = np.arange(n, dtype=np.uint64)
    words = philox4x32_10(seed, np.uint64((offset + 3) // 4) + (e >> np.uint64(2)))
    words = words[np.arange(n), (e & np.uint64(3)).astype(np.int64)]
    return torch.from_numpy((words & np.uint64(0xFFFFFF)) < math.ceil((1 - p) * 2**24)).reshape(shape)


def seed_and_offset(q, k, v, p, **kw):
    """The Philox seed and offset the fused op draws at, read from what it returns."""
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    seed, offset = op(q.to(DEV), k.to(DEV), v.to(DEV), None, p, **kw)[6:8]
    return int(seed) & (2**64 - 1), int(offset)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("masking", ["causal", "bool_mask", "float_mask", "gqa_causal"])
def test_dropout_against_cpu_math_with_the_kernels_mask(dtype, masking):
    """out and the three gradients against CPU's math path (_scaled_dot_product_attention_math) given the
    mask the kernels draw; Lk = 19 puts score rows across Philox blocks. gqa_causal: 3 query heads share
    one k/v head (enable_gqa), the mask is over the query heads."""
    b, h, lq, lk, p = 2, 3, 13, 19, 0.3
    q, k, v = qkv(b, h, lq, lk, 16, 8, dtype=dtype)
    kw, mask = {}, None
    if masking == "gqa_causal":
        k, v = k[:, :1].contiguous(), v[:, :1].contiguous()
        kw["enable_gqa"] = True
    if masking.endswith("causal"):
        kw["is_causal"] = True
    elif masking == "bool_mask":
        mask = torch.rand(b, 1, lq, lk) > 0.3
        mask[..., 0] = True  # fully masked rows are test_bool_mask_broadcast_with_fully_masked_rows_head_dim_80's
    else:
        mask = torch.randn(1, h, lq, lk, dtype=dtype)
    torch.manual_seed(7)
    seed, offset = seed_and_offset(q, k, v, p, is_causal=kw.get("is_causal", False))
    assert offset == 0  # torch.manual_seed resets the opencl generator's offset
    keep = keep_mask(seed, offset, (b, h, lq, lk), p)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    bias = mask  # the math op takes an additive mask: F.scaled_dot_product_attention converts a bool one
    if mask is not None and mask.dtype == torch.bool:
        bias = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))
    want = torch.ops.aten._scaled_dot_product_attention_math(*leaves, bias, p, dropout_mask=keep, **kw)[0]
    grad = torch.randn_like(want)
    want.backward(grad)
    dev = [t.detach().to(DEV).requires_grad_() for t in (q, k, v)]
    torch.manual_seed(7)
    with native_only(), launched_kernels() as names:
        got = F.scaled_dot_product_attention(*dev, attn_mask=None if mask is None else mask.to(DEV), dropout_p=p, **kw)
        got.backward(grad.to(DEV))
    assert fused_ran(names) == FUSED
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    for g, w in [(got, want)] + [(d.grad, c.grad) for d, c in zip(dev, leaves)]:
        torch.testing.assert_close(g.cpu(), w, **tol)


def test_dropout_mask_from_the_kernel_and_keep_fraction():
    """With q = 0 the weights are 1 / Lk and v = identity makes out[..., i, j] the kept weight of (i, j): the
    forward's mask, read back, is the Philox mask above, and keeps close to 1 - p of the scores."""
    b, h, lq, lk, p = 2, 4, 64, 128, 0.25
    q = torch.zeros(b, h, lq, 16)
    k = torch.randn(b, h, lk, 16)
    v = torch.eye(lk).expand(b, h, lk, lk)
    torch.manual_seed(11)
    seed, offset = seed_and_offset(q, k, v, p)
    torch.manual_seed(11)
    out = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), dropout_p=p).cpu()
    kept = out > 0
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / (lk * (1 - p))))
    assert torch.equal(kept, keep_mask(seed, offset, (b, h, lq, lk), p))
    assert abs(kept.double().mean().item() - (1 - p)) < 0.01  # 65536 scores: 6 standard deviations


def test_dropout_same_seed_same_result_and_manual_seed_replays():
    q, k, v = (t.to(DEV) for t in qkv(2, 2, 17, 23, 32))

    def run():
        out = F.scaled_dot_product_attention(*(t.detach().requires_grad_() for t in (q, k, v)), dropout_p=0.4)
        return out.cpu()

    torch.manual_seed(5)
    first, second = run(), run()
    assert not torch.equal(first, second)  # the generator advanced
    torch.manual_seed(5)
    assert torch.equal(run(), first)
    assert torch.equal(run(), second)


def test_dropout_p_one_gives_zeros_and_zero_grads():
    dev = [t.to(DEV).requires_grad_() for t in qkv(1, 2, 9, 14, 8)]
    with launched_kernels() as names:
        out = F.scaled_dot_product_attention(*dev, dropout_p=1.0, is_causal=True)
        out.backward(torch.randn_like(out))
    assert fused_ran(names) == FUSED
    assert torch.equal(out.cpu(), torch.zeros(1, 2, 9, 8))
    for t in dev:
        assert torch.equal(t.grad.cpu(), torch.zeros_like(t.grad.cpu()))


def test_transformer_encoder_layer_trains_with_dropout_on_the_fused_kernels():
    """nn.TransformerEncoderLayer's default dropout (0.1) in training mode no longer leaves the fused path."""
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True).to(DEV).train()
    x = torch.randn(2, 10, 32, device=DEV)
    with launched_kernels() as names:
        layer(x).sum().backward()
    assert fused_ran(names) == FUSED
    assert all(torch.isfinite(p.grad.cpu()).all() for p in layer.parameters())


@pytest.mark.parametrize(
    "hq, hkv, masking, dtype",
    [(4, 2, "causal", torch.float32), (6, 1, "float_mask", torch.float32), (3, 3, "bool_mask", torch.float32),
     (4, 2, "causal", torch.float64)],
    ids=["4/2_causal", "6/1_mask", "3/3", "4/2_f64"],
)
def test_grouped_query_attention(hq, hkv, masking, dtype):
    """enable_gqa=True: ATen passes k and v with their own (fewer) heads; query head h reads k/v head
    h / (hq / hkv) and dK/dV sum over the query heads of a group. Against CPU, forward and backward."""
    q, k, v = qkv(2, hq, 13, 19, 16, 8, dtype=dtype)
    k, v = k[:, :hkv].contiguous(), v[:, :hkv].contiguous()
    kw, mask = {"enable_gqa": True}, None
    if masking == "causal":
        kw["is_causal"] = True
    elif masking == "float_mask":
        mask = torch.randn(1, hq, 13, 19, dtype=dtype)  # a mask per query head
    else:
        mask = torch.rand(13, 19) > 0.3
        mask[:, 0] = True
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    assert fused_ran(check_against_cpu(q, k, v, mask, **tol, **kw)) == FUSED


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
