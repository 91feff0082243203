// scaled_dot_product_attention as fused kernels (kernels_cl/attention.cl): PyTorch's composite asks
// the device's _fused_sdp_choice_stub which backend to run; ours answers `overrideable` for the calls
// these kernels take (float32/float64, float16/bfloat16 through float32 copies, 4-D q/k/v of any strides
// with equal batch and heads, or with enable_gqa query heads a multiple of the k/v heads, head dims up to
// 128, causal or an additive/bool mask broadcastable to the scores, dropout drawn in the kernels) where
// they are the faster choice on the device (KernelForms::attention_fused_max_head_dim) or sdpa_kernel asks
// for them, and `math` otherwise. It then calls _scaled_dot_product_fused_attention_overrideable (a bool
// mask already turned into a 0/-inf bias of q's dtype; k and v as given, unexpanded for enable_gqa), and
// PyTorch's autograd formula for that op calls its backward. Forward: one launch; backward: two (dQ over
// query rows, then dK/dV over key rows).
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>

#include "aten/kernel_support/acc_arg.h"
#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/generator.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr int64_t kMaxHeadDim = 128;

// float16 and bfloat16 calls (autocast's, computed_in_float) run the float32 kernels on float32 copies and
// round the results once, as CPU's flash attention computes them: far less traffic than the math path's
// stored scores.
at::Tensor as_float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

// Why the fused kernels cannot take this call ("" when they can).
// enable_gqa: q may have a multiple of k and v's heads (the fused op always allows it: ATen passes k and v
// unexpanded and only calls it when F.scaled_dot_product_attention was given enable_gqa=True).
std::string unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal, bool enable_gqa) {
  for (const at::Tensor* t : {&q, &k, &v}) {
    if (!t->defined() || t->is_nested() || t->layout() != at::kStrided) return "q, k and v must be strided tensors";
    if (t->dim() != 4) return "q, k and v must be 4-D (batch, heads, sequence, head dim)";
    if (t->device() != q.device()) return "q, k and v must be on one device";
    if (t->scalar_type() != q.scalar_type()) return "q, k and v must have one dtype";
  }
  if (!q.device().is_privateuseone()) return "q must be an opencl tensor";
  const auto type = q.scalar_type();
  if (type != at::kFloat && type != at::kDouble && !computed_in_float(type))
    return "the dtype must be float32, float64, float16 or bfloat16";
  if (!device_supports(type, q.device().index())) return "the device has no float64 (cl_khr_fp64)";
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0)) return "q, k and v must have the same batch size";
  if (k.size(1) != v.size(1)) return "k and v must have the same head count";
  if (k.size(1) != q.size(1)) {
    if (!enable_gqa) return "q, k and v must have the same head count without enable_gqa=True (no broadcasting)";
    if (k.size(1) == 0 || q.size(1) % k.size(1) != 0)
      return "with enable_gqa, q's head count must be a multiple of k and v's";
  }
  if (k.size(2) != v.size(2)) return "k and v must have the same sequence length";
  if (k.size(3) != q.size(3)) return "q and k must have the same head dim";
  if (q.size(3) < 1 || q.size(3) > kMaxHeadDim || v.size(3) < 1 || v.size(3) > kMaxHeadDim)
    return "head dims must be 1 to " + std::to_string(kMaxHeadDim);
  if (!(dropout_p >= 0.0 && dropout_p <= 1.0)) return "dropout_p must be in [0, 1]";
  if (mask && mask->defined()) {
    if (is_causal) return "is_causal and an attn_mask together";
    if (mask->scalar_type() != at::kBool && mask->scalar_type() != type)
      return "attn_mask must be bool or of q's dtype";
    if (mask->device() != q.device()) return "attn_mask must be on q's device";
    if (mask->requires_grad()) return "attn_mask must not require grad (the kernels give no mask gradient)";
    if (mask->is_nested() || mask->layout() != at::kStrided) return "attn_mask must be a strided tensor";
    if (!at::is_expandable_to(mask->sizes(), {q.size(0), q.size(1), q.size(2), k.size(2)}))
      return "attn_mask must broadcast to (batch, heads, Lq, Lk)";
  }
  return "";
}

void check_supported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const std::optional<at::Tensor>& bias, double dropout_p, bool is_causal, const char* op) {
  const std::string why = unsupported(q, k, v, bias, dropout_p, is_causal, /*enable_gqa=*/true);
  TORCH_CHECK(why.empty(), op, " on opencl: ", why, "; got q ", q.sizes(), " ", q.scalar_type(), " on ",
              q.device(), ", k ", k.sizes(), " ", k.scalar_type(), " on ", k.device(), ", v ", v.sizes(), " ",
              v.scalar_type(), " on ", v.device(),
              ". F.scaled_dot_product_attention runs such calls on the math backend.");
  if (bias && bias->defined())
    TORCH_CHECK(bias->scalar_type() == q.scalar_type(), op, " on opencl: attn_bias must have q's dtype ",
                q.scalar_type(), " (scaled_dot_product_attention turns a bool mask into one), got ",
                bias->scalar_type());
}

// sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH], set_priority=True): the user ranks the fused kernels
// above the math path (PyTorch's default order ranks math first and means no preference).
bool prefers_fused(at::Context& ctx) {
  const auto order = ctx.sDPPriorityOrder();
  const auto rank = [&](at::SDPBackend b) { return std::find(order.begin(), order.end(), b) - order.begin(); };
  return rank(at::SDPBackend::overrideable) < rank(at::SDPBackend::math);
}

// The device's choice where both backends may run (runtime/kernel_forms.h).
bool fused_is_faster(const at::Tensor& q, const at::Tensor& v) {
  const auto& f = tocl::kernel_forms(q.device().index());
  return static_cast<size_t>(std::max(q.size(3), v.size(3))) <= f.attention_fused_max_head_dim;
}

// The backend for F.scaled_dot_product_attention (at::SDPBackend), honouring torch.nn.attention.sdpa_kernel.
int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                         std::optional<double> /*scale*/, bool enable_gqa) {
  auto& ctx = at::globalContext();
  const std::string why = unsupported(q, k, v, mask, dropout_p, is_causal, enable_gqa);
  if (why.empty() && ctx.userEnabledOverrideableSDP() &&
      (!ctx.userEnabledMathSDP() || prefers_fused(ctx) || fused_is_faster(q, v)))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  if (ctx.userEnabledMathSDP()) return static_cast<int64_t>(at::SDPBackend::math);
  TORCH_CHECK(false, "scaled_dot_product_attention on opencl: the math backend is disabled and the fused kernel ",
              ctx.userEnabledOverrideableSDP() ? "cannot take this call: " + why
                                               : std::string("(SDPBackend.OVERRIDEABLE) is disabled too"));
}

// ---- programs and launches

struct Plan {
  bool tiled;
  int dh;         // head-dim bucket (DH)
  size_t bm;      // rows per work-group (BM)
  int bn;         // rows per local tile (BN)
  bool hd_fixed;  // the tiled form with both head dims equal to dh (HD_FIXED: compile-time loops)
};

Plan plan_for(int device, c10::ScalarType type, int64_t d, int64_t dv) {
  const auto& f = tocl::kernel_forms(device);
  const int64_t dims = std::max(d, dv);
  // Few programs: three buckets, and 16 in the GPU form, whose loops unroll where the head dims equal the
  // bucket (HD_FIXED; on an H100, head dim 32 ran 1.7x faster at seq 256 and 1024 than 16 did in bucket 32).
  const int dh = dims <= 16 && f.attention_tiled ? 16 : dims <= 32 ? 32 : dims <= 64 ? 64 : 128;
  const size_t row_bytes = 2 * static_cast<size_t>(dh) * c10::elementSize(type);
  int bn = 32;
  while (bn > 1 && bn * row_bytes > f.attention_tile_bytes) bn /= 2;
  return {f.attention_tiled, dh, f.attention_rows, bn, f.attention_tiled && d == dh && dv == dh};
}

cl_kernel kernel_for(int device, c10::ScalarType type, const Plan& p, const char* name) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType, int, size_t, int, bool>, cl_program> programs;
  cl_program program;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = programs[{device, type, p.dh, p.bm, p.bn, p.hd_fixed}];
    if (!slot) {
      const std::string t = storage_type(type);
      const std::string source = program_prelude({type}) + "#define T " + t + "\n#define DH " + std::to_string(p.dh) +
                                 "\n#define BM " + std::to_string(p.bm) + "\n#define BN " + std::to_string(p.bn) +
                                 "\n#define HD_FIXED " + (p.hd_fixed ? "1" : "0") +
                                 "\n#define EXACT_LSE " + (type == at::kDouble ? "1" : "0") + "\n#define TV " + t +
                                 "16\n#define TI " + (type == at::kDouble ? "long16" : "int16") + "\n" +
                                 tocl::embedded_sources().at("attention.cl");
      slot = tocl::get_program(device, source);
    }
    program = slot;
  }
  return tocl::get_kernel(program, (std::string(name) + (p.tiled ? "_tiles" : "_rows")).c_str());
}

cl_long4 strides_of(const at::Tensor& t) {
  cl_long4 s;
  for (int i = 0; i < 4; ++i) s.s[i] = t.stride(i);
  return s;
}

// Dropout's draws: probability p and where its Philox counters start (attention.cl's header).
struct Dropout {
  double p = 0;
  uint64_t seed = 0, offset = 0;  // the generator's seed and offset (in 32-bit draws) when the forward ran
};

// The tensors every attention kernel reads, in ATTN_INPUTS' order.
struct Inputs {
  const at::Tensor &q, &k, &v;
  at::Tensor bias;  // expanded to (B, H, Lq, Lk), or undefined
  bool causal;
  double scale;
  Dropout dropout;
};

void set_inputs(tocl::ArgSetter& a, const Inputs& in) {
  const bool has_bias = in.bias.defined();
  a.set(buffer_arg(in.q)).set(strides_of(in.q)).set(buffer_arg(in.k)).set(strides_of(in.k));
  a.set(buffer_arg(in.v)).set(strides_of(in.v));
  a.set(has_bias ? buffer_arg(in.bias) : tocl::BufferArg{nullptr, 0}).set(has_bias ? strides_of(in.bias) : cl_long4{});
  a.set(static_cast<cl_int>(has_bias));
  for (const int64_t n : {in.q.size(0), in.q.size(1), in.k.size(1), in.q.size(2), in.k.size(2)})
    a.set(static_cast<cl_long>(n));
  a.set(static_cast<cl_int>(in.q.size(3))).set(static_cast<cl_int>(in.v.size(3)));
  const bool dbl = in.q.scalar_type() == at::kDouble;
  const AccArg scale(in.scale, dbl);
  a.set(scale.arg);
  a.set(static_cast<cl_int>(in.causal));
  // Dropout: kept when a draw's low 24 bits are below ceil((1 - p) * 2^24), i.e. its uniform < 1 - p.
  const double p = in.dropout.p, keep = 1.0 - p;
  const double drop_scale = keep > 0 ? 1.0 / keep : 0.0;  // p == 1 drops every weight: zeros, not NaN
  a.set(static_cast<cl_int>(p > 0)).set(static_cast<cl_uint>(std::ceil(keep * 16777216.0)));
  const AccArg drop(drop_scale, dbl);
  a.set(drop.arg);
  a.set(static_cast<cl_ulong>(in.dropout.seed)).set(static_cast<cl_ulong>((in.dropout.offset + 3) / 4));
}

// Launches a kernel over `rows` rows of each (batch, head): the tiled form a work-item per row in
// groups of p.bm rows of one head, the rows form a work-item per VR rows of one head.
void launch(const at::Tensor& like, cl_kernel kernel, const Plan& p, int64_t heads, int64_t rows) {
  constexpr int64_t kRowsPerItem = 16;  // VR in attention.cl
  const size_t global = p.tiled ? static_cast<size_t>(heads * ((rows + p.bm - 1) / p.bm)) * p.bm
                                : static_cast<size_t>(heads * ((rows + kRowsPerItem - 1) / kRowsPerItem));
  if (global == 0) return;
  tocl::enqueue_1d(device_index(like), current_stream_of(like), kernel, global, p.bm);
}

at::Tensor expanded_bias(const std::optional<at::Tensor>& bias, const at::Tensor& q, const at::Tensor& k) {
  if (!bias || !bias->defined()) return at::Tensor();
  return bias->expand({q.size(0), q.size(1), q.size(2), k.size(2)});
}

// The output's layout as PyTorch's meta function gives it (alloc_with_matching_layout in
// torch/_meta_registrations.py): like q when the shapes agree, else q's dim order with v's head dim.
at::Tensor output_like(const at::Tensor& q, int64_t dv) {
  if (q.size(3) == dv) return at::empty_like(q);
  std::array<int64_t, 4> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return q.stride(a) > q.stride(b); });
  std::vector<int64_t> sizes(q.sizes().begin(), q.sizes().end()), strides(4);
  sizes[3] = dv;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    strides[order[i]] = stride;
    stride *= sizes[order[i]];
  }
  return at::empty_strided(sizes, strides, q.options());
}

double scale_of(const at::Tensor& q, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(3)));
}

// What the launches of one forward or backward call share: its inputs, and the plan and programs for them.
struct Call {
  Inputs in;
  int device;
  Plan plan;
  cl_kernel kernel(const char* name) const { return kernel_for(device, in.q.scalar_type(), plan, name); }
};

Call call_for(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
              bool is_causal, std::optional<double> scale, const Dropout& dropout) {
  const int device = device_index(q);
  return {Inputs{q, k, v, expanded_bias(bias, q, k), is_causal, scale_of(q, scale), dropout}, device,
          plan_for(device, q.scalar_type(), q.size(3), v.size(3))};
}

// Reserves the forward's dropout draws from the device's default generator, under its mutex as
// aten/native/random.cpp does: one Philox block (four draws) per four scores of the (B, H, Lq, Lk) grid.
Dropout draw_dropout(const at::Tensor& q, const at::Tensor& k, double p) {
  Dropout d;
  d.p = p;
  if (p == 0) return d;
  auto* gen = at::get_generator_or_default<OpenCLGeneratorImpl>(std::nullopt, default_generator(device_index(q)));
  const uint64_t scores = static_cast<uint64_t>(q.size(0) * q.size(1) * q.size(2) * k.size(2));
  std::lock_guard<std::mutex> lock(gen->mutex_);
  d.seed = gen->current_seed();
  const uint64_t unaligned = gen->get_offset() % 4 ? 4 : 0;  // an offset set by hand: the kernels round it up
  d.offset = gen->advance(4 * ((scores + 3) / 4) + unaligned);
  return d;
}

using ForwardResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
                                 at::Tensor, at::Tensor>;

ForwardResult fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal,
                              bool return_debug_mask, std::optional<double> scale) {
  constexpr const char* op = "_scaled_dot_product_fused_attention_overrideable";
  check_supported(q, k, v, attn_bias, dropout_p, is_causal, op);
  if (computed_in_float(q.scalar_type())) {
    const std::optional<at::Tensor> bias32 = attn_bias ? std::optional<at::Tensor>(as_float(*attn_bias)) : std::nullopt;
    auto r = fused_attention(as_float(q), as_float(k), as_float(v), bias32, dropout_p, is_causal, return_debug_mask,
                             scale);
    std::get<0>(r) = std::get<0>(r).to(q.scalar_type());
    return r;
  }
  TORCH_CHECK(!return_debug_mask, op, " on opencl: return_debug_mask=True is not supported (the kernels never "
              "materialise the attention weights)");
  const c10::DeviceGuard guard(q.device());
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2);
  auto out = output_like(q, v.size(3));
  auto lse = at::empty({B, H, Lq}, q.options().dtype(at::kFloat));
  const Dropout dropout = draw_dropout(q, k, dropout_p);
  const Call call = call_for(q, k, v, attn_bias, is_causal, scale, dropout);
  cl_kernel kernel = call.kernel("attention_forward");
  tocl::ArgSetter a(kernel);
  a.set(buffer_arg(out)).set(strides_of(out)).set(buffer_arg(lse));
  set_inputs(a, call.in);
  launch(q, kernel, call.plan, B * H, Lq);
  // The backward redraws the dropout mask from these (placeholders without dropout, as on XPU).
  auto seed = at::empty({}, at::dtype(at::kLong)), offset = at::empty({}, at::dtype(at::kLong));
  if (dropout_p > 0) {
    seed.fill_(static_cast<int64_t>(dropout.seed));
    offset.fill_(static_cast<int64_t>(dropout.offset));
  }
  return {out, lse, at::Tensor(), at::Tensor(), c10::SymInt(Lq), c10::SymInt(Lk), seed, offset, at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/,
    c10::SymInt /*max_q*/, c10::SymInt /*max_k*/, double dropout_p, bool is_causal,
    const at::Tensor& philox_seed, const at::Tensor& philox_offset, std::optional<double> scale) {
  constexpr const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  const std::optional<at::Tensor> bias = attn_bias.defined() ? std::optional<at::Tensor>(attn_bias) : std::nullopt;
  check_supported(q, k, v, bias, dropout_p, is_causal, op);
  TORCH_CHECK(!grad_input_mask[3], op, " on opencl: no gradient for attn_bias (scaled_dot_product_attention runs a "
              "mask that requires grad on the math backend)");
  if (computed_in_float(q.scalar_type())) {
    const auto type = q.scalar_type();
    auto [gq, gk, gv, gb] = fused_attention_backward(
        as_float(grad_out), as_float(q), as_float(k), as_float(v), as_float(attn_bias), grad_input_mask,
        as_float(out), logsumexp, at::Tensor(), at::Tensor(), 0, 0, dropout_p, is_causal, philox_seed,
        philox_offset, scale);
    return {gq.to(type), gk.to(type), gv.to(type), gb};
  }
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2);
  const std::vector<int64_t> out_shape{B, H, Lq, v.size(3)};
  for (const at::Tensor* t : {&grad_out, &out})
    TORCH_CHECK(t->defined() && t->sizes() == out_shape && t->scalar_type() == q.scalar_type() &&
                    t->device() == q.device(),
                op, " on opencl: grad_out and out must be ", q.scalar_type(), " tensors of shape ", out_shape,
                " on ", q.device(), ", got ", t->sizes(), " ", t->scalar_type(), " on ", t->device());
  const std::vector<int64_t> lse_shape{B, H, Lq};
  TORCH_CHECK(logsumexp.defined() && logsumexp.sizes() == lse_shape &&
                  logsumexp.scalar_type() == at::kFloat && logsumexp.device() == q.device(),
              op, " on opencl: logsumexp must be the forward's float32 (B, H, Lq) = (", B, ", ", H, ", ", Lq,
              ") tensor on ", q.device());
  const c10::DeviceGuard guard(q.device());
  auto grad_q = at::empty_like(q), grad_k = at::empty_like(k), grad_v = at::empty_like(v);
  const auto lse = logsumexp.contiguous();
  auto stats = at::empty({2, B * H * Lq}, q.options());  // each row's lse and delta, for the dK/dV launch
  Dropout dropout;
  dropout.p = dropout_p;
  if (dropout_p > 0) {
    for (const at::Tensor* t : {&philox_seed, &philox_offset})
      TORCH_CHECK(t->defined() && t->numel() == 1 && t->scalar_type() == at::kLong, op,
                  " on opencl: with dropout_p > 0, philox_seed and philox_offset must be the forward's one-element "
                  "int64 tensors");
    dropout.seed = static_cast<uint64_t>(philox_seed.item<int64_t>());
    dropout.offset = static_cast<uint64_t>(philox_offset.item<int64_t>());
  }
  const Call call = call_for(q, k, v, bias, is_causal, scale, dropout);
  cl_kernel dq = call.kernel("attention_backward_dq");
  tocl::ArgSetter a(dq);
  a.set(buffer_arg(grad_q)).set(strides_of(grad_q)).set(buffer_arg(stats));
  a.set(buffer_arg(grad_out)).set(strides_of(grad_out)).set(buffer_arg(out)).set(strides_of(out)).set(buffer_arg(lse));
  set_inputs(a, call.in);
  launch(q, dq, call.plan, B * H, Lq);
  cl_kernel dkv = call.kernel("attention_backward_dkv");
  tocl::ArgSetter b(dkv);
  b.set(buffer_arg(grad_k)).set(strides_of(grad_k)).set(buffer_arg(grad_v)).set(strides_of(grad_v));
  b.set(buffer_arg(stats)).set(buffer_arg(grad_out)).set(strides_of(grad_out));
  set_inputs(b, call.in);
  launch(q, dkv, call.plan, B * k.size(1), Lk);  // over the k/v heads, each walking its query heads
  return {grad_q, grad_k, grad_v, at::Tensor()};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_attention_backward));
}

}  // namespace torch_opencl

// F.scaled_dot_product_attention consults this stub (keyed by device type), not the operator above.
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_opencl::fused_sdp_choice)
}  // namespace at::native
