// The _foreach_* operators torch.optim (SGD, Adam, AdamW, foreach=True) and
// clip_grad_norm_ call, as a multi-tensor apply: one launch covers up to 16
// tensors of a list (kernels_cl/foreach.cl), instead of one launch per tensor.
// Lists that the kernels cannot take (CUDA's can_use_fast_route: mixed devices
// or dtypes, integer dtypes, tensors that are not dense or whose sizes/strides
// differ between lists, complex scalars) go to ATen's per-tensor slow path,
// which runs our per-tensor kernels.
#include <ATen/ATen.h>
#include <c10/util/overflows.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Scalar;
using at::Tensor;
using at::TensorList;
using ScalarList = at::ArrayRef<at::Scalar>;
namespace native = at::native;

constexpr size_t kNT = 16;        // NT in foreach.cl: tensors per list per launch
constexpr uint64_t kWG = 64;      // WG: the work-group size, on every device (chunks are whole groups)
constexpr uint64_t kMaxItems = uint64_t(1) << 31;  // items of one launch (uint indices in the kernels)

// The kernels take about 900 bytes of arguments; every full-profile device allows 1024.
bool arguments_fit(int device) {
  static std::mutex mutex;
  static std::map<int, bool> fits;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = fits.find(device);
  if (it != fits.end()) return it->second;
  size_t bytes = 0;
  clGetDeviceInfo(tocl::device_info(device).id, CL_DEVICE_MAX_PARAMETER_SIZE, sizeof(bytes), &bytes, nullptr);
  return fits[device] = bytes >= 1024;
}

// CUDA's can_use_fast_route: every list as long as the first, every tensor on the
// first one's opencl device with its floating dtype, dense, with the sizes and
// strides of the first list's tensor at that index (so element i is element i).
bool fast_route(std::initializer_list<TensorList> lists) {
  const TensorList first = *lists.begin();
  if (first.empty() || !first[0].defined()) return false;
  const Tensor& ref = first[0];
  if (!ref.is_privateuseone()) return false;
  const auto type = ref.scalar_type();
  if (type != at::kFloat && type != at::kDouble && type != at::kHalf && type != at::kBFloat16) return false;
  if (!device_supports(type, ref.device().index()) || !arguments_fit(ref.device().index())) return false;
  for (const TensorList list : lists) {
    if (list.size() != first.size()) return false;
    for (size_t i = 0; i < list.size(); ++i) {
      const Tensor& t = list[i];
      if (!t.defined() || t.device() != ref.device() || t.scalar_type() != type || t.layout() != at::kStrided ||
          !t.is_non_overlapping_and_dense() || t.sizes() != first[i].sizes() || t.strides() != first[i].strides() ||
          static_cast<uint64_t>(t.numel()) >= kMaxItems)
        return false;
    }
  }
  return true;
}

bool real(const Scalar& s) { return !s.isComplex(); }
bool real(ScalarList list, size_t n) {
  if (list.size() != n) return false;
  for (const auto& s : list)
    if (s.isComplex()) return false;
  return true;
}

// Which scalars the fast kernels take. CPU's per-tensor ops cast an operand (add's, mul's: `unchecked`) but
// check an argument (clamp's bounds, lerp's weight, addcmul's value, alpha: `checked`) against the dtype; one
// that does not fit takes the slow path, whose per-tensor op raises CPU's error.
bool fits(const Scalar& s, at::ScalarType type) {
  if (s.isBoolean()) return true;
  const double v = s.toDouble();
  switch (type) {
    case at::kFloat: return !c10::overflows<float, double>(v);
    case at::kHalf: return !c10::overflows<c10::Half, double>(v);
    case at::kBFloat16: return !c10::overflows<c10::BFloat16, double>(v);
    default: return true;
  }
}
bool unchecked(const Scalar& s, TensorList) { return real(s); }
bool unchecked(ScalarList list, TensorList self) { return real(list, self.size()); }
bool checked(const Scalar& s, TensorList self) { return real(s) && fits(s, self[0].scalar_type()); }
bool checked(ScalarList list, TensorList self) {
  if (!real(list, self.size())) return false;
  for (const auto& s : list)
    if (!fits(s, self[0].scalar_type())) return false;
  return true;
}

// The scalars of one operation: one value for all tensors or one per tensor, an
// alpha, or a 0-d tensor of the list's dtype on its device read by the kernel.
struct Scalars {
  std::vector<double> values{0.0};
  double alpha = 1;
  Tensor device_scalar;

  static Scalars one(const Scalar& s, double alpha = 1) { return {{s.toDouble()}, alpha, {}}; }
  static Scalars list(ScalarList l, double alpha = 1) {
    Scalars r{{}, alpha, {}};
    for (const auto& s : l) r.values.push_back(s.toDouble());
    return r;
  }
  double at(size_t i) const { return values.size() == 1 ? values[0] : values[i]; }
};

// A 0-d tensor operand (the .Tensor overloads): a CPU value is read once, a device one stays there.
// Another dtype takes the slow path: a 0-d tensor in the list would promote to it.
std::optional<Scalars> tensor_scalar(const Tensor& other, const Tensor& ref, double alpha = 1) {
  if (!other.defined() || other.dim() != 0 || other.scalar_type() != ref.scalar_type()) return std::nullopt;
  if (other.is_cpu()) return Scalars{{other.item<double>()}, alpha, {}};
  if (other.device() != ref.device()) return std::nullopt;
  return Scalars{{0.0}, alpha, other};
}

using Args = tocl::ArgSetter;

// The buffers and element offsets of tensors [begin, begin + used) of a list; empty
// tensors and unused slots get `dummy` (they are never read).
void set_list(Args& a, TensorList list, size_t begin, size_t used, cl_mem dummy) {
  cl_uint16 offsets{};
  for (size_t j = 0; j < kNT; ++j) {
    tocl::BufferArg b{dummy, 0};
    if (j < used && list[begin + j].numel() > 0) b = buffer_arg(list[begin + j]);
    TORCH_CHECK(b.offset <= std::numeric_limits<cl_uint>::max(), "_foreach ops: tensor offset ", b.offset,
                " exceeds the kernels' 32-bit element offsets");
    a.set(b.buffer);
    offsets.s[j] = static_cast<cl_uint>(b.offset);
  }
  a.set(offsets);
}

uint64_t items_of(uint64_t n, uint64_t per);

// The next chunk of a list: up to kNT tensors whose items (of `per` elements) sum stays below kMaxItems.
struct Chunk {
  size_t begin = 0, used = 0;
  cl_uint16 start{}, n{};
  uint64_t total = 0;
  cl_mem dummy = nullptr;  // a buffer of the chunk, for slots without one
};
Chunk next_chunk(TensorList list, size_t begin, uint64_t per) {
  Chunk c;
  c.begin = begin;
  while (begin + c.used < list.size() && c.used < kNT) {
    const Tensor& t = list[begin + c.used];
    const uint64_t items = items_of(static_cast<uint64_t>(t.numel()), per);
    if (c.used > 0 && c.total + items >= kMaxItems) break;
    c.start.s[c.used] = static_cast<cl_uint>(c.total);
    c.n.s[c.used] = static_cast<cl_uint>(t.numel());
    if (!c.dummy && t.numel() > 0) c.dummy = buffer_arg(t).buffer;
    c.total += items;
    ++c.used;
  }
  for (size_t j = c.used; j < kNT; ++j) c.start.s[j] = static_cast<cl_uint>(c.total);
  return c;
}

// Work items of a tensor of n elements: `per` (PER_ITEM) elements each, whole work groups
// (so a group works on one tensor).
uint64_t items_of(uint64_t n, uint64_t per) { return (n + per * kWG - 1) / (per * kWG) * kWG; }

// Elements per work-item on this device: the CPU and GPU forms differ (runtime/kernel_forms.h).
uint64_t per_item(int device) { return tocl::kernel_forms(device).foreach_per_item; }

cl_kernel foreach_kernel(const Tensor& like, const char* name) {
  const int device = like.device().index();
  const std::string per = "#define PER_ITEM " + std::to_string(per_item(device)) + "\n";
  return tocl::get_kernel(dtype_program(device, "foreach.cl", like.scalar_type(), at::kLong, kWG, per), name);
}

// Runs kernel `name` over the lists (output first; 2 lists for the unary signature, 3 for binary/ternary).
void launch(const char* name, std::initializer_list<TensorList> lists, const Scalars& sc) {
  const TensorList out = *lists.begin();
  if (out.empty()) return;
  const Tensor& ref = out[0];
  const c10::DeviceGuard guard(ref.device());
  const int device = ref.device().index();
  const int stream = tocl::current_stream(device);
  const bool wide = ref.scalar_type() == at::kDouble;
  cl_kernel k = foreach_kernel(ref, name);
  const bool inplace = lists.size() > 1 && lists.begin()[1].data() == out.data();
  for (size_t begin = 0; begin < out.size();) {
    const Chunk c = next_chunk(out, begin, per_item(device));
    begin += c.used;
    if (c.total == 0) continue;
    Args a(k);
    for (const TensorList list : lists) set_list(a, list, c.begin, c.used, c.dummy);
    a.set(c.start).set(c.n).set(static_cast<cl_uint>(c.total));
    if (wide) {
      cl_double16 v{};
      for (size_t j = 0; j < c.used; ++j) v.s[j] = sc.at(c.begin + j);
      a.set(v).set(static_cast<cl_double>(sc.alpha));
    } else {
      cl_float16 v{};
      for (size_t j = 0; j < c.used; ++j) v.s[j] = static_cast<float>(sc.at(c.begin + j));
      a.set(v).set(static_cast<cl_float>(sc.alpha));
    }
    const bool use_ts = sc.device_scalar.defined();
    const tocl::BufferArg ts = use_ts ? buffer_arg(sc.device_scalar) : tocl::BufferArg{c.dummy, 0};
    a.set(ts.buffer).set(static_cast<cl_ulong>(ts.offset)).set(static_cast<cl_int>(use_ts));
    a.set(static_cast<cl_int>(inplace));
    tocl::enqueue_1d(device, stream, k, c.total, kWG);
  }
}

std::vector<Tensor> empty_like_list(TensorList self) {
  std::vector<Tensor> out;
  out.reserve(self.size());
  for (const auto& t : self) out.push_back(at::empty_like(t));
  return out;
}

std::vector<Tensor> unary(const char* k, TensorList self, const Scalars& sc = {}) {
  auto out = empty_like_list(self);
  launch(k, {out, self}, sc);
  return out;
}
void unary_(const char* k, TensorList self, const Scalars& sc = {}) { launch(k, {self, self}, sc); }
std::vector<Tensor> binary(const char* k, TensorList self, TensorList other, const Scalars& sc = {}) {
  auto out = empty_like_list(self);
  launch(k, {out, self, other}, sc);
  return out;
}
void binary_(const char* k, TensorList self, TensorList other, const Scalars& sc = {}) {
  launch(k, {self, self, other}, sc);
}
// Ternary kernels work in place: the out-of-place form copies self first.
std::vector<Tensor> ternary(const char* k, TensorList self, TensorList a, TensorList b, const Scalars& sc) {
  auto out = empty_like_list(self);
  launch("foreach_copy", {out, self}, {});
  launch(k, {out, a, b}, sc);
  return out;
}
void ternary_(const char* k, TensorList self, TensorList a, TensorList b, const Scalars& sc) {
  launch(k, {self, a, b}, sc);
}

// ---- add, sub, mul, div, clamp_min/clamp_max (maximum/minimum) ----

// Scalar and ScalarList overloads of `op` through kernel `kernel` with alpha `alpha`.
#define SCALAR_FORMS(op, slow, kernel, alpha, accepts)                                                \
  std::vector<Tensor> op##_scalar(TensorList self, const Scalar& s) {                                 \
    if (fast_route({self}) && accepts(s, self)) return unary(kernel, self, Scalars::one(s, alpha));   \
    return native::foreach_tensor_##slow##_scalar_kernel_slow(self, s);                               \
  }                                                                                                   \
  void op##_scalar_(TensorList self, const Scalar& s) {                                               \
    if (fast_route({self}) && accepts(s, self)) return unary_(kernel, self, Scalars::one(s, alpha));  \
    native::foreach_tensor_##slow##_scalar_kernel_slow_(self, s);                                     \
  }                                                                                                   \
  std::vector<Tensor> op##_scalarlist(TensorList self, ScalarList s) {                                \
    if (fast_route({self}) && accepts(s, self)) return unary(kernel, self, Scalars::list(s, alpha));  \
    return native::foreach_tensor_##slow##_scalarlist_kernel_slow(self, s);                           \
  }                                                                                                   \
  void op##_scalarlist_(TensorList self, ScalarList s) {                                              \
    if (fast_route({self}) && accepts(s, self)) return unary_(kernel, self, Scalars::list(s, alpha)); \
    native::foreach_tensor_##slow##_scalarlist_kernel_slow_(self, s);                                 \
  }

// List overloads without alpha.
#define LIST_FORMS(op, slow, kernel)                                                   \
  std::vector<Tensor> op##_list(TensorList self, TensorList other) {                   \
    if (fast_route({self, other})) return binary(kernel, self, other);                 \
    return native::foreach_tensor_##slow##_list_kernel_slow(self, other);              \
  }                                                                                    \
  void op##_list_(TensorList self, TensorList other) {                                 \
    if (fast_route({self, other})) return binary_(kernel, self, other);                \
    native::foreach_tensor_##slow##_list_kernel_slow_(self, other);                    \
  }

// .Tensor overloads (a 0-d tensor) without alpha.
#define TENSOR_FORMS(op, kernel)                                                               \
  std::vector<Tensor> op##_tensor(TensorList self, const Tensor& other) {                      \
    if (fast_route({self}))                                                                    \
      if (auto sc = tensor_scalar(other, self[0])) return unary(kernel, self, *sc);            \
    return native::foreach_tensor_##op##_tensor_kernel_slow(self, other);                      \
  }                                                                                            \
  void op##_tensor_(TensorList self, const Tensor& other) {                                    \
    if (fast_route({self}))                                                                    \
      if (auto sc = tensor_scalar(other, self[0])) return unary_(kernel, self, *sc);           \
    native::foreach_tensor_##op##_tensor_kernel_slow_(self, other);                            \
  }

SCALAR_FORMS(add, add, "foreach_add_scalar", 1.0, unchecked)
SCALAR_FORMS(sub, sub, "foreach_add_scalar", -1.0, unchecked)
SCALAR_FORMS(mul, mul, "foreach_mul_scalar", 1.0, unchecked)
SCALAR_FORMS(div, div, "foreach_div_scalar", 1.0, unchecked)
SCALAR_FORMS(clamp_min, clamp_min, "foreach_clamp_min_scalar", 1.0, checked)
SCALAR_FORMS(clamp_max, clamp_max, "foreach_clamp_max_scalar", 1.0, checked)
LIST_FORMS(mul, mul, "foreach_mul_list")
LIST_FORMS(div, div, "foreach_div_list")
LIST_FORMS(clamp_min, clamp_min, "foreach_maximum_list")
LIST_FORMS(clamp_max, clamp_max, "foreach_minimum_list")
TENSOR_FORMS(mul, "foreach_mul_scalar")
TENSOR_FORMS(div, "foreach_div_scalar")

// add/sub List take alpha (sub is add with -alpha, as on CPU); add.Tensor too.
std::vector<Tensor> add_list(TensorList self, TensorList other, const Scalar& alpha) {
  if (fast_route({self, other}) && checked(alpha, self))
    return binary("foreach_add_list", self, other, {{0.0}, alpha.toDouble(), {}});
  return native::foreach_tensor_add_list_kernel_slow(self, other, alpha);
}
void add_list_(TensorList self, TensorList other, const Scalar& alpha) {
  if (fast_route({self, other}) && checked(alpha, self))
    return binary_("foreach_add_list", self, other, {{0.0}, alpha.toDouble(), {}});
  native::foreach_tensor_add_list_kernel_slow_(self, other, alpha);
}
std::vector<Tensor> sub_list(TensorList self, TensorList other, const Scalar& alpha) {
  if (fast_route({self, other}) && checked(alpha, self) && !alpha.isBoolean())
    return binary("foreach_add_list", self, other, {{0.0}, -alpha.toDouble(), {}});
  return native::foreach_tensor_sub_list_kernel_slow(self, other, alpha);
}
void sub_list_(TensorList self, TensorList other, const Scalar& alpha) {
  if (fast_route({self, other}) && checked(alpha, self) && !alpha.isBoolean())
    return binary_("foreach_add_list", self, other, {{0.0}, -alpha.toDouble(), {}});
  native::foreach_tensor_sub_list_kernel_slow_(self, other, alpha);
}
std::vector<Tensor> add_tensor(TensorList self, const Tensor& other, const Scalar& alpha) {
  if (fast_route({self}) && checked(alpha, self))
    if (auto sc = tensor_scalar(other, self[0], alpha.toDouble())) return unary("foreach_add_scalar", self, *sc);
  return native::foreach_tensor_add_tensor_kernel_slow(self, other, alpha);
}
void add_tensor_(TensorList self, const Tensor& other, const Scalar& alpha) {
  if (fast_route({self}) && checked(alpha, self))
    if (auto sc = tensor_scalar(other, self[0], alpha.toDouble())) return unary_("foreach_add_scalar", self, *sc);
  native::foreach_tensor_add_tensor_kernel_slow_(self, other, alpha);
}

// ---- addcmul, addcdiv (value, per-tensor values, or a 1-D tensor of values) ----

// The .Tensor overloads' 1-D tensor of one value per tensor, read on the host as CUDA does.
std::optional<Scalars> value_tensor(const Tensor& scalars, size_t n) {
  if (!scalars.defined() || scalars.dim() != 1 || static_cast<size_t>(scalars.numel()) != n || scalars.is_complex())
    return std::nullopt;
  const Tensor host = scalars.to(at::kCPU, at::kDouble).contiguous();
  const double* p = host.const_data_ptr<double>();
  return Scalars{std::vector<double>(p, p + n), 1, {}};
}

#define POINTWISE_FORMS(op)                                                                           \
  std::vector<Tensor> op##_scalar(TensorList self, TensorList a, TensorList b, const Scalar& value) { \
    if (fast_route({self, a, b}) && checked(value, self))                                             \
      return ternary("foreach_" #op, self, a, b, Scalars::one(value));                                \
    return native::foreach_tensor_##op##_scalar_slow(self, a, b, value);                              \
  }                                                                                                   \
  void op##_scalar_(TensorList self, TensorList a, TensorList b, const Scalar& value) {               \
    if (fast_route({self, a, b}) && checked(value, self))                                             \
      return ternary_("foreach_" #op, self, a, b, Scalars::one(value));                               \
    native::foreach_tensor_##op##_scalar_slow_(self, a, b, value);                                    \
  }                                                                                                   \
  std::vector<Tensor> op##_scalarlist(TensorList self, TensorList a, TensorList b, ScalarList s) {    \
    if (fast_route({self, a, b}) && checked(s, self))                                                 \
      return ternary("foreach_" #op, self, a, b, Scalars::list(s));                                   \
    return native::foreach_tensor_##op##_scalarlist_slow(self, a, b, s);                              \
  }                                                                                                   \
  void op##_scalarlist_(TensorList self, TensorList a, TensorList b, ScalarList s) {                  \
    if (fast_route({self, a, b}) && checked(s, self))                                                 \
      return ternary_("foreach_" #op, self, a, b, Scalars::list(s));                                  \
    native::foreach_tensor_##op##_scalarlist_slow_(self, a, b, s);                                    \
  }                                                                                                   \
  std::vector<Tensor> op##_tensor(TensorList self, TensorList a, TensorList b, const Tensor& s) {     \
    if (fast_route({self, a, b}))                                                                     \
      if (auto sc = value_tensor(s, self.size())) return ternary("foreach_" #op, self, a, b, *sc);    \
    return native::foreach_tensor_##op##_tensor_slow(self, a, b, s);                                  \
  }                                                                                                   \
  void op##_tensor_(TensorList self, TensorList a, TensorList b, const Tensor& s) {                   \
    if (fast_route({self, a, b}))                                                                     \
      if (auto sc = value_tensor(s, self.size())) return ternary_("foreach_" #op, self, a, b, *sc);   \
    native::foreach_tensor_##op##_tensor_slow_(self, a, b, s);                                        \
  }

POINTWISE_FORMS(addcmul)
POINTWISE_FORMS(addcdiv)

// ---- lerp: weight tensors, one weight, or a weight per tensor ----

std::vector<Tensor> lerp_list(TensorList self, TensorList end, TensorList weight) {
  if (fast_route({self, end, weight})) return ternary("foreach_lerp_list", self, end, weight, {});
  return native::foreach_tensor_ternary_lerp_slow(self, end, weight);
}
void lerp_list_(TensorList self, TensorList end, TensorList weight) {
  if (fast_route({self, end, weight})) return ternary_("foreach_lerp_list", self, end, weight, {});
  native::foreach_tensor_ternary_lerp_slow_(self, end, weight);
}
std::vector<Tensor> lerp_scalar(TensorList self, TensorList end, const Scalar& w) {
  if (fast_route({self, end}) && checked(w, self)) return binary("foreach_lerp_scalar", self, end, Scalars::one(w));
  return native::foreach_tensor_lerp_list_kernel_slow(self, end, w);
}
void lerp_scalar_(TensorList self, TensorList end, const Scalar& w) {
  if (fast_route({self, end}) && checked(w, self)) return binary_("foreach_lerp_scalar", self, end, Scalars::one(w));
  native::foreach_tensor_lerp_list_kernel_slow_(self, end, w);
}
std::vector<Tensor> lerp_scalarlist(TensorList self, TensorList end, ScalarList w) {
  if (fast_route({self, end}) && checked(w, self)) return binary("foreach_lerp_scalar", self, end, Scalars::list(w));
  return native::foreach_tensor_lerp_scalarlist_kernel_slow(self, end, w);
}
void lerp_scalarlist_(TensorList self, TensorList end, ScalarList w) {
  if (fast_route({self, end}) && checked(w, self))
    return binary_("foreach_lerp_scalar", self, end, Scalars::list(w));
  native::foreach_tensor_lerp_scalarlist_kernel_slow_(self, end, w);
}

// ---- sqrt, neg, zero_, copy_ ----

std::vector<Tensor> sqrt(TensorList self) {
  return fast_route({self}) ? unary("foreach_sqrt", self) : native::foreach_tensor_sqrt_slow(self);
}
void sqrt_(TensorList self) { fast_route({self}) ? unary_("foreach_sqrt", self) : native::foreach_tensor_sqrt_slow_(self); }
std::vector<Tensor> neg(TensorList self) {
  return fast_route({self}) ? unary("foreach_neg", self) : native::foreach_tensor_neg_slow(self);
}
void neg_(TensorList self) { fast_route({self}) ? unary_("foreach_neg", self) : native::foreach_tensor_neg_slow_(self); }
void zero_(TensorList self) { fast_route({self}) ? unary_("foreach_zero", self) : native::foreach_tensor_zero_slow_(self); }
void copy_(TensorList self, TensorList src, bool non_blocking) {
  if (fast_route({self, src})) return launch("foreach_copy", {self, src}, {});
  native::foreach_tensor_copy_list_kernel_slow_(self, src, non_blocking);
}

// ---- norm: ord 1, 2 or inf, two launches per 16 tensors ----

std::vector<Tensor> norm(TensorList self, const Scalar& ord, std::optional<at::ScalarType> dtype) {
  const double p = real(ord) ? ord.toDouble() : -1;
  const int code = p == INFINITY ? 0 : p == 1 ? 1 : p == 2 ? 2 : -1;
  bool fast = code >= 0 && fast_route({self}) && (!dtype || *dtype == self[0].scalar_type());
  for (size_t i = 0; fast && code == 0 && i < self.size(); ++i) fast = self[i].numel() > 0;  // CPU's error for empty
  if (!fast) return native::foreach_tensor_norm_slow(self, ord, dtype);
  const Tensor& ref = self[0];
  const c10::DeviceGuard guard(ref.device());
  const int device = ref.device().index();
  const int stream = tocl::current_stream(device);
  std::vector<Tensor> out;
  for (const auto& t : self) out.push_back(at::empty({}, t.options()));
  cl_kernel partial_k = foreach_kernel(ref, "foreach_norm_partial");
  cl_kernel final_k = foreach_kernel(ref, "foreach_norm_final");
  const auto acc_type = ref.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  for (size_t begin = 0; begin < self.size();) {
    const Chunk c = next_chunk(self, begin, per_item(device));
    begin += c.used;
    const cl_mem out_buffer = buffer_arg(out[c.begin]).buffer;
    const Tensor partial = at::empty({static_cast<int64_t>(c.total / kWG)}, ref.options().dtype(acc_type));
    const tocl::BufferArg pb = c.total ? buffer_arg(partial) : tocl::BufferArg{out_buffer, 0};
    if (c.total) {
      Args a(partial_k);
      set_list(a, self, c.begin, c.used, c.dummy);
      a.set(c.start).set(c.n).set(static_cast<cl_uint>(c.total)).set(static_cast<cl_int>(code));
      a.set(pb.buffer).set(static_cast<cl_ulong>(pb.offset));
      tocl::enqueue_1d(device, stream, partial_k, c.total, kWG);
    }
    cl_uint16 gstart{};
    for (size_t j = 0; j < kNT; ++j) gstart.s[j] = c.start.s[j] / static_cast<cl_uint>(kWG);
    Args f(final_k);
    f.set(pb.buffer).set(static_cast<cl_ulong>(pb.offset)).set(gstart).set(static_cast<cl_uint>(c.total / kWG));
    f.set(static_cast<cl_uint>(c.used)).set(static_cast<cl_int>(code));
    set_list(f, out, c.begin, c.used, out_buffer);
    tocl::enqueue_1d(device, stream, final_k, kNT * kWG, kWG);
  }
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
#define PAIR(op, overload, fn)                                      \
  m.impl("_foreach_" #op "." #overload, TORCH_FN(fn));              \
  m.impl("_foreach_" #op "_." #overload, TORCH_FN(fn##_));
  PAIR(add, Scalar, add_scalar)
  PAIR(add, List, add_list)
  PAIR(add, ScalarList, add_scalarlist)
  PAIR(add, Tensor, add_tensor)
  PAIR(sub, Scalar, sub_scalar)
  PAIR(sub, List, sub_list)
  PAIR(sub, ScalarList, sub_scalarlist)
  PAIR(mul, Scalar, mul_scalar)
  PAIR(mul, List, mul_list)
  PAIR(mul, ScalarList, mul_scalarlist)
  PAIR(mul, Tensor, mul_tensor)
  PAIR(div, Scalar, div_scalar)
  PAIR(div, List, div_list)
  PAIR(div, ScalarList, div_scalarlist)
  PAIR(div, Tensor, div_tensor)
  PAIR(clamp_min, Scalar, clamp_min_scalar)
  PAIR(clamp_min, List, clamp_min_list)
  PAIR(clamp_min, ScalarList, clamp_min_scalarlist)
  PAIR(clamp_max, Scalar, clamp_max_scalar)
  PAIR(clamp_max, List, clamp_max_list)
  PAIR(clamp_max, ScalarList, clamp_max_scalarlist)
  PAIR(maximum, Scalar, clamp_min_scalar)
  PAIR(maximum, List, clamp_min_list)
  PAIR(maximum, ScalarList, clamp_min_scalarlist)
  PAIR(minimum, Scalar, clamp_max_scalar)
  PAIR(minimum, List, clamp_max_list)
  PAIR(minimum, ScalarList, clamp_max_scalarlist)
  PAIR(addcmul, Scalar, addcmul_scalar)
  PAIR(addcmul, ScalarList, addcmul_scalarlist)
  PAIR(addcmul, Tensor, addcmul_tensor)
  PAIR(addcdiv, Scalar, addcdiv_scalar)
  PAIR(addcdiv, ScalarList, addcdiv_scalarlist)
  PAIR(addcdiv, Tensor, addcdiv_tensor)
  PAIR(lerp, List, lerp_list)
  PAIR(lerp, Scalar, lerp_scalar)
  PAIR(lerp, ScalarList, lerp_scalarlist)
#undef PAIR
  m.impl("_foreach_sqrt", TORCH_FN(sqrt));
  m.impl("_foreach_sqrt_", TORCH_FN(sqrt_));
  m.impl("_foreach_neg", TORCH_FN(neg));
  m.impl("_foreach_neg_", TORCH_FN(neg_));
  m.impl("_foreach_zero_", TORCH_FN(zero_));
  m.impl("_foreach_copy_", TORCH_FN(copy_));
  m.impl("_foreach_norm.Scalar", TORCH_FN(norm));
}

}  // namespace torch_opencl
