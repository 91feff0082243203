// PyTorch's inference fast paths around transformers, composed from the device's kernels (as CUDA runs
// them natively): _native_multi_head_attention (nn.MultiheadAttention's), _transformer_encoder_layer_fwd
// (nn.TransformerEncoderLayer's) and the _masked_softmax they apply a padding or attention mask with
// (and its backward).
// A nested input (nn.TransformerEncoder's fast path with a src_key_padding_mask) runs on its padded form
// with the padding as key mask, and returns to rows: the rows CPU computes, in CPU's order of operations
// (q scaled before q @ k^T, a fully masked row NaN as CPU gives it).
#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "aten/native/nested_rows.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// _masked_softmax with CPU's mask types: 0 an (L, L) attention mask, 1 a (B, L) key padding mask of a
// (B, H, L, L) input, 2 a mask of the input's shape (what any other mask or input rank means).
Tensor masked_softmax(const Tensor& input, const Tensor& mask, std::optional<int64_t> dim,
                      std::optional<int64_t> mask_type) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "\"masked_softmax\" not implemented for '",
              input.scalar_type(), "'");
  int64_t type = 2;
  if (mask.dim() == 2 && input.dim() == 4) {
    TORCH_CHECK(mask_type.has_value(), "Mask Type should be defined");
    type = *mask_type;
  }
  const int64_t softmax_dim = dim ? at::maybe_wrap_dim(*dim, input.dim()) : input.dim() - 1;
  Tensor full_mask;
  if (type == 2) {
    TORCH_CHECK(input.sizes() == mask.sizes(), "For mask_type == 2 mask shape should match input shape");
    full_mask = mask;
  } else if (type == 1) {
    TORCH_CHECK(input.size(0) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 1 mask shape should be (B, L)");
    full_mask = mask.view({mask.size(0), 1, 1, mask.size(1)});
  } else if (type == 0) {
    TORCH_CHECK(input.size(2) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 0 mask shape should be (L, L)");
    full_mask = mask.view({1, 1, mask.size(0), mask.size(1)});
  } else {
    TORCH_CHECK(false, "Invalid mask_type for softmax, use one of 0, 1, 2");
  }
  // A masked score is -inf: 0 after the softmax, and a row masked throughout 0/0 = NaN, as on CPU.
  return at::softmax(input.masked_fill(full_mask, -std::numeric_limits<double>::infinity()), softmax_dim);
}

// Its gradient (the mask of the output's shape, as CPU requires): softmax's, 0 at masked positions and
// throughout a fully masked row.
Tensor masked_softmax_backward(const Tensor& grad, const Tensor& output, const Tensor& mask,
                               std::optional<int64_t> dim) {
  TORCH_CHECK(grad.sizes() == mask.sizes(), "Mask shape should match grad shape");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  const int64_t softmax_dim = dim ? at::maybe_wrap_dim(*dim, grad.dim()) : grad.dim() - 1;
  const Tensor kept = output.masked_fill(mask, 0.0);
  return (kept * (grad - (grad * kept).sum(softmax_dim, /*keepdim=*/true))).masked_fill(mask, 0.0);
}

// [B, T, D] -> [B, H, T, D / H]
Tensor split_heads(const Tensor& x, int64_t num_head) {
  return x.view({x.size(0), x.size(1), num_head, x.size(2) / num_head}).transpose(1, 2);
}

// Self- or cross-attention of dense [B, T, D] inputs; the weights (if asked for) are [B, H, T, T], or
// their mean over heads.
std::tuple<Tensor, Tensor> dense_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                           int64_t embed_dim, int64_t num_head, const Tensor& qkv_weight,
                                           const Tensor& qkv_bias, const Tensor& proj_weight,
                                           const Tensor& proj_bias, const std::optional<Tensor>& mask,
                                           bool need_weights, bool average_attn_weights,
                                           std::optional<int64_t> mask_type) {
  if (query.numel() == 0) return {at::empty_like(query), Tensor()};
  Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {
    const auto qkv = at::linear(query, qkv_weight, qkv_bias).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    const auto w = qkv_weight.chunk(3, 0), b = qkv_bias.chunk(3, 0);
    q = at::linear(query, w[0], b[0]), k = at::linear(key, w[1], b[1]), v = at::linear(value, w[2], b[2]);
  }
  q = split_heads(q, num_head), k = split_heads(k, num_head), v = split_heads(v, num_head);
  const int64_t B = query.size(0), T = query.size(1), head_dim = embed_dim / num_head;
  Tensor context, weights;
  if (!mask && !need_weights) {
    // No mask, no weights: the fused attention kernel, as CUDA's fast path takes its fused SDPA.
    context = at::scaled_dot_product_attention(q, k, v);
  } else {
    const double inverse_sqrt_head_dim = 1.0 / std::sqrt(static_cast<double>(head_dim));
    const Tensor scores = at::matmul(q * inverse_sqrt_head_dim, k.transpose(-2, -1));
    weights = mask ? masked_softmax(scores, mask->scalar_type() == at::kBool ? *mask : mask->to(at::kBool), 3,
                                    mask_type)
                   : at::softmax(scores, -1);
    context = at::matmul(weights, v);
  }
  const Tensor out = at::linear(context.transpose(1, 2).reshape({B, T, embed_dim}), proj_weight, proj_bias);
  if (!need_weights) return {out, Tensor()};
  if (average_attn_weights) weights = weights.sum(1).div_(num_head);
  return {out, weights};
}

std::tuple<Tensor, Tensor> native_multi_head_attention(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim, int64_t num_head,
    const Tensor& qkv_weight, const Tensor& qkv_bias, const Tensor& proj_weight, const Tensor& proj_bias,
    const std::optional<Tensor>& mask, bool need_weights, bool average_attn_weights,
    std::optional<int64_t> mask_type) {
  // CPU's checks, in CPU's words.
  TORCH_CHECK(!mask || !query.is_nested(), "NestedTensor with mask is not supported yet");
  TORCH_CHECK(query.dim() == 3, "expected 3-D `query`, got ", query.dim(), "-D tensor");
  TORCH_CHECK(query.is_nested() || query.size(2) == embed_dim, "passed-in embed_dim ", embed_dim,
              " didn't match last dim of query ", query.size(2));
  TORCH_CHECK(key.dim() == 3, "expected 3-D `key`, got ", key.dim(), "-D tensor");
  TORCH_CHECK(value.dim() == 3, "expected 3-D `value`, got ", value.dim(), "-D tensor");
  TORCH_CHECK(query.is_nested() || key.is_nested() || value.is_nested() ||
                  (query.sizes() == key.sizes() && key.sizes() == value.sizes()),
              "expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(qkv_weight.dim() == 2, "expected 2-D `qkv_weight`, got ", qkv_weight.dim(), "-D tensor");
  TORCH_CHECK(embed_dim * 3 == qkv_weight.size(0), "expected `qkv_weight` first dim to be 3x embed_dim");
  TORCH_CHECK(embed_dim == qkv_weight.size(1), "expected `qkv_weight` second dim to be embed_Dim");
  TORCH_CHECK(qkv_bias.dim() == 1, "expected 1-D `qkv_bias`, got ", qkv_bias.dim(), "-D tensor");
  TORCH_CHECK(qkv_bias.size(0) == 3 * embed_dim,
              "expected `qkv_bias` first dim and first dim of query to be equal");
  TORCH_CHECK(embed_dim % num_head == 0, "`embed_dim` must divide evenly by `num_heads`");
  if (!query.is_nested())
    return dense_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
                           mask, need_weights, average_attn_weights, mask_type);

  // Nested rows: padded, with the padding as key mask; the output back to rows, and the weights of
  // padded queries and keys 0, as CPU's nested softmax leaves them.
  const bool self_attention = query.is_same(key) && key.is_same(value);
  const auto same_rows = [&](const Tensor& t) {
    return t.is_nested() && nested_rows::holds_rows(t) &&
           at::equal(at::native::get_nested_tensor_impl(t)->get_nested_sizes(),
                     at::native::get_nested_tensor_impl(query)->get_nested_sizes());
  };
  TORCH_CHECK(nested_rows::holds_rows(query) && (self_attention || (same_rows(key) && same_rows(value))),
              "_native_multi_head_attention on opencl: a nested query must hold [length, embed_dim] rows over a "
              "contiguous buffer, with key and value the same tensor or nested tensors of the same sizes");
  const int64_t length = nested_rows::max_length(query);
  const Tensor padded_query = nested_rows::to_padded(query, 0.0, length);
  const Tensor padded_key = self_attention ? padded_query : nested_rows::to_padded(key, 0.0, length);
  const Tensor padded_value = self_attention ? padded_query : nested_rows::to_padded(value, 0.0, length);
  const Tensor padding = nested_rows::padding_mask(query, length);
  auto [out, weights] =
      dense_attention(padded_query, padded_key, padded_value, embed_dim, num_head, qkv_weight, qkv_bias,
                      proj_weight, proj_bias, padding, need_weights, average_attn_weights, /*mask_type=*/1);
  if (weights.defined()) {
    const int64_t B = padding.size(0);
    const Tensor padded_query_rows =
        weights.dim() == 4 ? padding.view({B, 1, length, 1}) : padding.view({B, length, 1});
    weights = weights.masked_fill(padded_query_rows, 0.0);
  }
  return {nested_rows::from_padded(out, at::native::get_nested_tensor_impl(query)->get_nested_sizes()), weights};
}

// One encoder layer on dense [B, T, D] input (post- or pre-norm), as ATen's transformer_encoder_layer_forward.
Tensor dense_encoder_layer(const Tensor& src, int64_t embed_dim, int64_t num_heads, const Tensor& qkv_weight,
                           const Tensor& qkv_bias, const Tensor& proj_weight, const Tensor& proj_bias,
                           bool use_gelu, bool norm_first, double eps, const Tensor& norm_weight_1,
                           const Tensor& norm_bias_1, const Tensor& norm_weight_2, const Tensor& norm_bias_2,
                           const Tensor& ffn_weight_1, const Tensor& ffn_bias_1, const Tensor& ffn_weight_2,
                           const Tensor& ffn_bias_2, const std::optional<Tensor>& mask,
                           std::optional<int64_t> mask_type) {
  const auto norm = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return at::layer_norm(x, {embed_dim}, w, b, eps);
  };
  Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = std::get<0>(dense_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
                                  /*need_weights=*/false, /*average_attn_weights=*/true, mask_type));
  x.add_(src);
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  const Tensor residual = x;
  if (norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  x = at::linear(x, ffn_weight_1, ffn_bias_1);
  x = use_gelu ? at::gelu(x) : at::relu(x);
  x = at::linear(x, ffn_weight_2, ffn_bias_2);
  x.add_(residual);
  if (!norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  return x;
}

Tensor transformer_encoder_layer(const Tensor& src, int64_t embed_dim, int64_t num_heads, const Tensor& qkv_weight,
                                 const Tensor& qkv_bias, const Tensor& proj_weight, const Tensor& proj_bias,
                                 bool use_gelu, bool norm_first, double eps, const Tensor& norm_weight_1,
                                 const Tensor& norm_bias_1, const Tensor& norm_weight_2, const Tensor& norm_bias_2,
                                 const Tensor& ffn_weight_1, const Tensor& ffn_bias_1, const Tensor& ffn_weight_2,
                                 const Tensor& ffn_bias_2, const std::optional<Tensor>& mask,
                                 std::optional<int64_t> mask_type) {
  const auto layer = [&](const Tensor& x, const std::optional<Tensor>& m, std::optional<int64_t> type) {
    return dense_encoder_layer(x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                               norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
                               ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, m, type);
  };
  if (!src.is_nested()) return src.numel() == 0 ? src.clone() : layer(src, mask, mask_type);
  auto* impl = at::native::get_nested_tensor_impl(src);
  TORCH_CHECK(nested_rows::holds_rows(src),
              "_transformer_encoder_layer_fwd on opencl: a nested input must hold [length, embed_dim] rows over a "
              "contiguous buffer (what nn.TransformerEncoder builds from src_key_padding_mask)");
  if (impl->get_buffer().numel() == 0)
    return at::detail::make_tensor<at::native::NestedTensorImpl>(impl->get_buffer(), impl->get_nested_sizes());
  const int64_t length = nested_rows::max_length(src);
  const Tensor out = layer(nested_rows::to_padded(src, 0.0, length), nested_rows::padding_mask(src, length), 1);
  return nested_rows::from_padded(out, impl->get_nested_sizes());
}

}  // namespace

// Plain TORCH_LIBRARY_IMPL, not TOCL_LIBRARY_IMPL: these compose native ops, each of which takes the CPU
// fallback for a dtype it has no OpenCL form for, and a nested tensor cannot go to the fallback at all.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_masked_softmax", TORCH_FN(masked_softmax));
  m.impl("_masked_softmax_backward", TORCH_FN(masked_softmax_backward));
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer));
}

}  // namespace torch_opencl
