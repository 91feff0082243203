"""HF transformers models as their library builds them (tiny configs, random weights, nothing downloaded):
training against the CPU step by step with no operator on the fallback, eval and inference_mode forwards,
and greedy generate() for the decoders (test/_zoo.py has the harness). Attention is each model's default
(SDPA). scripts/test.sh runs this file in both kernel classes."""
import torch
import transformers

from _device_helpers import native_only
from _zoo import DEV, eval_and_compare, train_and_compare

transformers.logging.set_verbosity_error()
VOCAB = 64
NO_DROPOUT = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def seeded(make):
    torch.manual_seed(0)
    return make()


def token_batches(n, batch=2, length=10):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(2, VOCAB, (batch, length), generator=g) for _ in range(n)]


def left_padded(ids):
    """ids whose first row has two pad tokens (0) on the left, and its attention mask: a padded batch."""
    ids = ids.clone()
    mask = torch.ones_like(ids)
    ids[0, :2] = 0
    mask[0, :2] = 0
    return ids, mask


def causal_lm_loss(model, ids):
    padded, mask = left_padded(ids)
    labels = padded.masked_fill(mask == 0, -100)
    return model(input_ids=padded, attention_mask=mask, labels=labels).loss


def logits(model, ids):
    padded, mask = left_padded(ids)
    return model(input_ids=padded, attention_mask=mask).logits


def assert_generates_as_on_cpu(ref, model, prompt, **kwargs):
    """Greedy decoding with the KV cache and a left-padded batch: the same tokens as on the CPU."""
    padded, mask = left_padded(prompt)
    settings = dict(max_new_tokens=6, do_sample=False, pad_token_id=0, **kwargs)
    want = ref.generate(input_ids=padded, attention_mask=mask, **settings)
    with native_only():
        got = model.generate(input_ids=padded.to(DEV), attention_mask=mask.to(DEV), **settings)
    assert got.device.type == DEV
    assert torch.equal(got.cpu(), want)


def test_gpt2_tied_embeddings():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                     **NO_DROPOUT)
    ref = seeded(lambda: transformers.GPT2LMHeadModel(config))
    assert ref.lm_head.weight is ref.transformer.wte.weight
    batches = token_batches(3)
    model = train_and_compare(ref, batches, causal_lm_loss)
    assert model.lm_head.weight is model.transformer.wte.weight
    eval_and_compare(ref, model, batches[0], logits)
    assert_generates_as_on_cpu(ref, model, batches[1][:, :5])


def test_llama_decoder_grouped_query_attention():
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      pad_token_id=0, bos_token_id=1, eos_token_id=1)
    ref = seeded(lambda: transformers.LlamaForCausalLM(config))
    batches = token_batches(3)
    model = train_and_compare(ref, batches, causal_lm_loss)
    eval_and_compare(ref, model, batches[0], logits)
    assert_generates_as_on_cpu(ref, model, batches[1][:, :5])


def test_t5_encoder_decoder():
    config = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                   relative_attention_num_buckets=8, dropout_rate=0.0, pad_token_id=0,
                                   eos_token_id=1, decoder_start_token_id=0)
    ref = seeded(lambda: transformers.T5ForConditionalGeneration(config))
    assert ref.lm_head.weight is ref.shared.weight
    sources, targets = token_batches(3), token_batches(3, length=6)
    pairs = list(zip(sources, targets))

    def loss(model, pair):
        ids, mask = left_padded(pair[0])
        return model(input_ids=ids, attention_mask=mask, labels=pair[1]).loss

    def forward(model, pair):
        ids, mask = left_padded(pair[0])
        return model(input_ids=ids, attention_mask=mask, decoder_input_ids=pair[1]).logits

    model = train_and_compare(ref, pairs, loss)
    assert model.lm_head.weight is model.shared.weight
    eval_and_compare(ref, model, pairs[0], forward)
    assert_generates_as_on_cpu(ref, model, sources[1])


def test_bert_masked_lm_with_padding():
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    ref = seeded(lambda: transformers.BertForMaskedLM(config))
    assert ref.cls.predictions.decoder.weight is ref.bert.embeddings.word_embeddings.weight
    g = torch.Generator().manual_seed(2)

    def batch(ids):
        ids, mask = left_padded(ids)
        labels = torch.full_like(ids, -100)
        chosen = torch.rand(ids.shape, generator=g) < 0.3
        chosen[:, 5] = True
        labels[chosen] = ids[chosen]
        return dict(input_ids=ids.masked_fill(chosen, 3), attention_mask=mask,
                    token_type_ids=(torch.arange(ids.shape[1]) >= 5).long().expand_as(ids), labels=labels)

    batches = [batch(ids) for ids in token_batches(3)]
    model = train_and_compare(ref, batches, lambda m, b: m(**b).loss)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    inputs = {k: v for k, v in batches[0].items() if k != "labels"}
    eval_and_compare(ref, model, inputs, lambda m, b: m(**b).logits)


def test_vit_image_classification():
    config = transformers.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, num_labels=5,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ref = seeded(lambda: transformers.ViTForImageClassification(config))
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randn(2, 3, 16, 16, generator=g), torch.randint(0, 5, (2,), generator=g)) for _ in range(3)]
    model = train_and_compare(ref, batches, lambda m, b: m(pixel_values=b[0], labels=b[1]).loss)
    eval_and_compare(ref, model, batches[0][0], lambda m, x: m(pixel_values=x).logits)
