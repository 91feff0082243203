"""PyTorch's transformer fast paths on opencl, natively (aten/native/transformer_fast_paths.cpp,
nested_tensor.cpp, nested_rows.cpp), against CPU PyTorch with the same weights.

nn.TransformerEncoder and nn.TransformerEncoderLayer in eval mode (under no_grad or inference_mode) take
_transformer_encoder_layer_fwd, and with a src_key_padding_mask the encoder first makes a nested tensor
of the rows (_nested_tensor_from_mask) and pads the result back (to_padded_tensor, zeros where CPU gives
zeros); nn.MultiheadAttention takes _native_multi_head_attention. Every case runs with the CPU fallback
refusing, and checks that the fast path's operator is the one that ran. One model size keeps the
programs compiled few.
"""
import copy
import warnings

import pytest
import torch
from torch import nn

from _device_helpers import assert_same_as_cpu, native_only

DEV = "opencl"
D, HEADS, FF, BATCH, SEQ = 16, 4, 32, 4, 6
RTOL, ATOL = 1e-4, 1e-5


def padding_mask(lengths, seq=SEQ):
    """bool [len(lengths), seq], True past each row's length (nn's src_key_padding_mask convention)."""
    return torch.arange(seq).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)


def ops_run(fn):
    """fn's result and the names of the aten operators it ran (profiler)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn()
    return out, {e.name for e in prof.events()}


def on_both(module, *inputs, context=torch.inference_mode, **kwargs):
    """module on CPU inputs, and a copy of it on opencl copies of them natively, under `context`;
    returns (CPU result, opencl result, operators the opencl call ran)."""
    dev_module = copy.deepcopy(module).to(DEV)
    with context():
        want = module(*inputs, **kwargs)
    copies = {id(x): x.to(DEV) for x in inputs}  # the same tensor thrice stays one (self-attention)
    dev_inputs = [copies[id(x)] for x in inputs]
    dev_kwargs = {k: v.to(DEV) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with native_only(), context():
        got, ops = ops_run(lambda: dev_module(*dev_inputs, **dev_kwargs))
    return want, got, ops


def encoder(enable_nested_tensor=True, norm_first=False, batch_first=True, activation="relu", layers=2):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, activation=activation, batch_first=batch_first,
                                       norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor with norm_first: PyTorch warns it is off
        return nn.TransformerEncoder(layer, layers, enable_nested_tensor=enable_nested_tensor).eval()


ENCODER_CASES = [  # (enable_nested_tensor, norm_first, batch_first, activation)
    (True, False, True, "relu"),
    (True, False, True, "gelu"),
    (False, False, True, "relu"),
    (True, True, True, "gelu"),
    (False, True, True, "relu"),
    (True, False, False, "gelu"),
]


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode], ids=["no_grad", "inference_mode"])
@pytest.mark.parametrize("nested, norm_first, batch_first, activation", ENCODER_CASES)
def test_encoder_with_padding_mask_matches_cpu(nested, norm_first, batch_first, activation, context):
    model = encoder(nested, norm_first, batch_first, activation)
    torch.manual_seed(1)
    lengths = [SEQ, 4, 1, 5]  # rows padded to different lengths, one not at all
    x = torch.randn(BATCH, SEQ, D) if batch_first else torch.randn(SEQ, BATCH, D)
    want, got, ops = on_both(model, x, src_key_padding_mask=padding_mask(lengths), context=context)
    assert_same_as_cpu(got, want, RTOL, ATOL)
    uses_nested = nested and batch_first and not norm_first  # PyTorch's own conditions for the nested path
    assert ("aten::_nested_tensor_from_mask" in ops) == uses_nested
    assert ("aten::_transformer_encoder_layer_fwd" in ops) == batch_first
    if uses_nested:  # CPU pads the nested result with zeros
        assert (got.cpu()[2, 1:] == 0).all() and (want[2, 1:] == 0).all()


@pytest.mark.parametrize("nested", [True, False], ids=["nested", "dense"])
def test_encoder_with_every_row_padded_at_the_end(nested):
    # The nested rows are shorter than src: to_padded_tensor pads them back to src's size.
    model = encoder(nested, activation="gelu")
    torch.manual_seed(2)
    want, got, ops = on_both(model, torch.randn(BATCH, SEQ, D), src_key_padding_mask=padding_mask([3, 4, 2, 4]))
    assert_same_as_cpu(got, want, RTOL, ATOL)
    assert ("aten::to_padded_tensor" in ops) == nested


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_without_mask_runs_the_fused_layer(norm_first):
    model = encoder(norm_first=norm_first, activation="gelu")
    torch.manual_seed(3)
    want, got, ops = on_both(model, torch.randn(BATCH, SEQ, D))
    assert_same_as_cpu(got, want, RTOL, ATOL)
    assert "aten::_transformer_encoder_layer_fwd" in ops


def test_encoder_layer_with_attention_and_padding_masks():
    model = encoder().layers[0]
    torch.manual_seed(4)
    causal = nn.Transformer.generate_square_subsequent_mask(SEQ)
    want, got, ops = on_both(model, torch.randn(BATCH, SEQ, D), src_mask=causal,
                             src_key_padding_mask=padding_mask([SEQ, 4, 2, 5]))
    assert_same_as_cpu(got, want, RTOL, ATOL)
    assert "aten::_transformer_encoder_layer_fwd" in ops


def attention_module():
    torch.manual_seed(5)
    return nn.MultiheadAttention(D, HEADS, batch_first=True).eval()


@pytest.mark.parametrize("need_weights, average", [(False, True), (True, True), (True, False)],
                         ids=["no_weights", "mean_weights", "head_weights"])
@pytest.mark.parametrize("masked", [True, False], ids=["key_padding_mask", "no_mask"])
def test_multihead_attention_matches_cpu(need_weights, average, masked):
    torch.manual_seed(6)
    x = torch.randn(BATCH, SEQ, D)
    kwargs = dict(need_weights=need_weights, average_attn_weights=average)
    if masked:
        kwargs["key_padding_mask"] = padding_mask([SEQ, 3, 1, 5])
    module = attention_module()
    (want, want_w), (got, got_w), ops = on_both(module, x, x, x, **kwargs)
    assert_same_as_cpu(got, want, RTOL, ATOL)
    assert "aten::_native_multi_head_attention" in ops
    if need_weights:
        assert_same_as_cpu(got_w, want_w, RTOL, ATOL)
    else:
        assert got_w is None and want_w is None


def test_multihead_attention_with_a_fully_padded_row_gives_cpus_nan():
    torch.manual_seed(7)
    x = torch.randn(BATCH, SEQ, D)
    mask = padding_mask([SEQ, 0, 2, 5])
    (want, want_w), (got, got_w), ops = on_both(attention_module(), x, x, x, key_padding_mask=mask)
    assert want[1].isnan().all()
    assert_same_as_cpu(got, want, RTOL, ATOL)
    assert_same_as_cpu(got_w, want_w, RTOL, ATOL)


def test_multihead_attention_on_nested_rows():
    # MHA's fast path takes a nested query too (no mask): CPU's weights are 0 for padded queries and keys.
    torch.manual_seed(8)
    rows = [torch.randn(n, D) for n in (5, 2, 4)]
    module = attention_module()
    nt = torch.nested.nested_tensor(rows)
    dev_nt = torch.nested.nested_tensor([r.to(DEV) for r in rows])
    dev_module = copy.deepcopy(module).to(DEV)
    with torch.inference_mode():
        want, want_w = module(nt, nt, nt, need_weights=True)
        with native_only():
            got, got_w = dev_module(dev_nt, dev_nt, dev_nt, need_weights=True)
            got = got.to_padded_tensor(0.0)
    assert_same_as_cpu(got, want.to_padded_tensor(0.0), RTOL, ATOL)
    assert_same_as_cpu(got_w, want_w, RTOL, ATOL)


@pytest.mark.parametrize("mask_type", [0, 1, 2])
def test_masked_softmax_matches_cpu(mask_type):
    torch.manual_seed(9)
    x = torch.randn(2, 3, 5, 5)
    mask = {0: torch.rand(5, 5) > 0.6, 1: padding_mask([5, 2], 5), 2: torch.rand(2, 3, 5, 5) > 0.6}[mask_type]
    mask[..., 0, :] = True  # a fully masked row (NaN, as CPU gives it)
    for dim in (3, 2):
        want = torch._masked_softmax(x, mask, dim, mask_type)
        with native_only():
            got = torch._masked_softmax(x.to(DEV), mask.to(DEV), dim, mask_type)
        assert_same_as_cpu(got, want)


def test_masked_softmax_gradient_matches_cpu():
    torch.manual_seed(12)
    x = torch.randn(2, 3, 5, 5)
    mask = torch.rand(2, 3, 5, 5) > 0.6
    mask[:, :, 1, :] = True  # fully masked rows: gradient 0 on CPU
    grad = torch.randn(2, 3, 5, 5)
    leaf = x.clone().requires_grad_()
    torch._masked_softmax(leaf, mask, 3, 2).backward(grad)
    dev_leaf = x.to(DEV).requires_grad_()
    with native_only():
        torch._masked_softmax(dev_leaf, mask.to(DEV), 3, 2).backward(grad.to(DEV))
    assert_same_as_cpu(dev_leaf.grad, leaf.grad)


def test_masked_softmax_refuses_what_cpu_refuses():
    x = torch.randn(2, 3, 5, 5)
    for mask, mask_type, message in [(padding_mask([5, 2], 5), None, "Mask Type should be defined"),
                                     (torch.zeros(2, 5, dtype=torch.bool), 0, r"mask_type == 0 mask shape"),
                                     (torch.zeros(2, 3, 5, dtype=torch.bool), 2, r"mask_type == 2 mask shape"),
                                     (torch.zeros(2, 5, dtype=torch.int64), 1, "Mask should be a boolean")]:
        with pytest.raises(RuntimeError, match=message):
            torch._masked_softmax(x, mask, 3, mask_type)
        with native_only(), pytest.raises(RuntimeError, match=message):
            torch._masked_softmax(x.to(DEV), mask.to(DEV), 3, mask_type)


def test_nested_tensor_from_mask_and_back():
    torch.manual_seed(10)
    x = torch.randn(BATCH, SEQ, D)
    keep = ~padding_mask([SEQ, 3, 1, 4])
    gappy = keep.clone()
    gappy[0, 2] = False
    want = torch._nested_tensor_from_mask(x, keep)
    with native_only():
        got = torch._nested_tensor_from_mask(x.to(DEV), keep.to(DEV))
        assert torch._nested_tensor_from_mask_left_aligned(x.to(DEV), keep.to(DEV))
        assert not torch._nested_tensor_from_mask_left_aligned(x.to(DEV), gappy.to(DEV))
        padded = got.to_padded_tensor(-1.0)
        wider = got.to_padded_tensor(2.0, (BATCH + 1, SEQ + 2, D + 3))
    assert got.is_nested and got.device.type == DEV
    assert torch.equal(got._nested_tensor_size(), want._nested_tensor_size())
    assert_same_as_cpu(padded, want.to_padded_tensor(-1.0))
    assert_same_as_cpu(wider, want.to_padded_tensor(2.0, (BATCH + 1, SEQ + 2, D + 3)))
    with pytest.raises(RuntimeError, match="Truncation is not supported"):
        got.to_padded_tensor(0.0, (BATCH, 2, D))


def test_nested_linear_layer_norm_and_activations_match_cpu():
    torch.manual_seed(11)
    rows = [torch.randn(n, D) for n in (3, 1, 5)]
    lin, norm = nn.Linear(D, 8), nn.LayerNorm(D)
    nt = torch.nested.nested_tensor(rows)
    want = [nn.functional.gelu(lin(norm(nt))), torch.relu(nt) + nt]
    dev_lin, dev_norm = copy.deepcopy(lin).to(DEV), copy.deepcopy(norm).to(DEV)
    with native_only():
        dnt = torch.nested.nested_tensor([r.to(DEV) for r in rows])
        got = [nn.functional.gelu(dev_lin(dev_norm(dnt))), torch.relu(dnt) + dnt]
        got = [g.to_padded_tensor(0.0) for g in got]
    for g, w in zip(got, want):
        assert_same_as_cpu(g, w.to_padded_tensor(0.0), RTOL, ATOL)
