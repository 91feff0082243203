#include "aten/native/pointwise.h"

#include <ATen/ATen.h>

#include <array>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/tiled_geometry.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr int kMaxInputs = 3;

bool is_floating(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble; }

std::string conversion_into(c10::ScalarType compute) {
  if (compute == c10::kBool) return "#define CONV_C(x) ((uchar)((x) != 0))\n";
  return std::string("#define CONV_C(x) ((") + storage_type(compute) + ")(x))\n";
}

// Everything a program depends on, packed without building strings (this runs per launch):
// the expression texts by hash (checked by content on a hit) and one byte per dtype and flag.
struct Signature {
  size_t expr_hash;
  uint64_t types;   // compute, output, inputs: 8 bits each
  uint32_t flags;   // device, index64, nscalars, nin, scalar inputs
  bool operator==(const Signature& o) const {
    return expr_hash == o.expr_hash && types == o.types && flags == o.flags;
  }
};
struct SignatureHash {
  size_t operator()(const Signature& s) const {
    return s.expr_hash ^ (std::hash<uint64_t>()(s.types) * 31) ^ (std::hash<uint32_t>()(s.flags) * 131);
  }
};
// Owns copies of the texts: an expression need not outlive the call.
struct ProgramEntry {
  std::string name, float_expr, int_expr;
  bool has_float, has_int;
  cl_program program;
  bool matches(const PointwiseExpr& e) const {
    return name == e.name && has_float == (e.float_expr != nullptr) && has_int == (e.int_expr != nullptr) &&
           (!has_float || float_expr == e.float_expr) && (!has_int || int_expr == e.int_expr);
  }
};

size_t text_hash(const char* s) { return s ? std::hash<std::string_view>()(s) : 0; }

Signature make_signature(int device, const at::TensorIteratorBase& iter, const PointwiseExpr& expr,
                         c10::ScalarType compute, const std::array<bool, kMaxInputs>& scalar_inputs, int nscalars,
                         bool index64, uint32_t rounding, bool lines, bool vec16) {
  const int nin = iter.ninputs();
  Signature sig{};
  sig.expr_hash = text_hash(expr.name) ^ (text_hash(expr.float_expr) * 3) ^ (text_hash(expr.int_expr) * 7);
  sig.types = static_cast<uint64_t>(compute) | (static_cast<uint64_t>(iter.dtype(0)) << 8);
  for (int k = 0; k < nin; ++k) sig.types |= static_cast<uint64_t>(iter.dtype(k + 1)) << (16 + 8 * k);
  sig.flags = static_cast<uint32_t>(device) | (index64 ? 1u << 8 : 0u) | (static_cast<uint32_t>(nscalars) << 9) |
              (static_cast<uint32_t>(nin) << 12);
  for (int k = 0; k < nin; ++k)
    if (scalar_inputs[k]) sig.flags |= 1u << (16 + k);
  sig.flags |= rounding << 20;
  if (lines) sig.flags |= 1u << 26;
  if (vec16) sig.flags |= 1u << 27;
  return sig;
}

std::string make_source(const at::TensorIteratorBase& iter, const PointwiseExpr& expr, c10::ScalarType compute,
                        const std::array<bool, kMaxInputs>& scalar_inputs, int nscalars, bool index64,
                        uint32_t rounding, bool lines, bool vec16) {
  const int nin = iter.ninputs();
  const bool floating = is_floating(compute);
  const char* body = floating ? expr.float_expr : expr.int_expr;
  std::vector<c10::ScalarType> types{compute, iter.dtype(0)};
  for (int k = 0; k < nin; ++k) types.push_back(iter.dtype(k + 1));
  bool fp64 = false;
  for (auto t : types) fp64 |= t == c10::kDouble;
  std::string s = program_prelude({fp64 ? c10::kDouble : c10::kFloat});
  s += std::string("#define C_T ") + storage_type(compute) + "\n";
  s += std::string("#define C_IS_FLOAT ") + (floating ? "1" : "0") + "\n";
  s += std::string("#define C_IS_BOOL ") + (compute == c10::kBool ? "1" : "0") + "\n";
  s += conversion_into(compute);
  s += operand_defines("OUT", iter.dtype(0));
  for (int k = 0; k < nin; ++k) {
    const std::string name = "IN" + std::to_string(k);
    s += operand_defines(name, iter.dtype(k + 1));
    s += "#define " + name + "_SCALAR " + (scalar_inputs[k] ? "1" : "0") + "\n";
    const uint32_t round = (rounding >> (2 * k)) & 3u;
    s += "#define " + name + "_ROUND(v) " + (round == 1 ? "round_to_half(v)" : round == 2 ? "round_to_bf16(v)" : "(v)") +
         "\n";
  }
  s += "#define NIN " + std::to_string(nin) + "\n";
  s += "#define NSCALAR " + std::to_string(nscalars) + "\n";
  s += std::string("#define LINES ") + (lines ? "1" : "0") + "\n";
  s += std::string("#define VEC16 ") + (vec16 ? "1" : "0") + "\n";
  s += std::string("#define EXPR (") + body + ")\n";
  s += tiled_source(4, index64);
  const auto& sources = tocl::embedded_sources();
  s += sources.at("pointwise_functions.cl");
  if (floating && expr.special_functions) s += sources.at("special_functions.cl");
  s += sources.at("pointwise.cl");
  return s;
}

cl_program program_for(int device, const at::TensorIteratorBase& iter, const PointwiseExpr& expr,
                       c10::ScalarType compute, const std::array<bool, kMaxInputs>& scalar_inputs, int nscalars,
                       bool index64, uint32_t rounding, bool lines, bool vec16) {
  static std::mutex mutex;
  static std::unordered_multimap<Signature, ProgramEntry, SignatureHash> programs;
  const auto sig =
      make_signature(device, iter, expr, compute, scalar_inputs, nscalars, index64, rounding, lines, vec16);
  auto find = [&]() -> cl_program {
    auto range = programs.equal_range(sig);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.matches(expr)) return it->second.program;
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (cl_program p = find()) return p;
  }
  cl_program program =
      tocl::get_program(device, make_source(iter, expr, compute, scalar_inputs, nscalars, index64, rounding, lines, vec16));
  std::lock_guard<std::mutex> lock(mutex);
  if (!find()) 
    programs.emplace(sig, ProgramEntry{expr.name, expr.float_expr ? expr.float_expr : "",
                                       expr.int_expr ? expr.int_expr : "", expr.float_expr != nullptr,
                                       expr.int_expr != nullptr, program});
  return program;
}

// A scalar argument in the compute type's bytes.
struct ScalarArg {
  union {
    cl_float f;
    cl_double d;
    cl_char i8;
    cl_uchar u8;
    cl_short i16;
    cl_int i32;
    cl_long i64;
  } value;
  size_t size;
};

// `checked`: converted as Scalar::to converts (a scalar argument that does not fit is CPU's error); otherwise a
// plain cast, as TensorIterator converts an operand (integers wrap; a double beyond float's range is inf).
template <typename T>
T converted(const c10::Scalar& s, bool checked) {
  if (checked) return s.to<T>();
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(s.toDouble());
  else return static_cast<T>(s.toLong());
}

ScalarArg scalar_arg(const c10::Scalar& s, c10::ScalarType compute, bool checked = true) {
  ScalarArg a{};
  switch (compute) {
    case c10::kFloat: a.value.f = converted<float>(s, checked); a.size = 4; break;
    case c10::kDouble: a.value.d = converted<double>(s, checked); a.size = 8; break;
    case c10::kBool: a.value.u8 = converted<bool>(s, checked) ? 1 : 0; a.size = 1; break;
    case c10::kByte: a.value.u8 = converted<uint8_t>(s, checked); a.size = 1; break;
    case c10::kChar: a.value.i8 = converted<int8_t>(s, checked); a.size = 1; break;
    case c10::kShort: a.value.i16 = converted<int16_t>(s, checked); a.size = 2; break;
    case c10::kInt: a.value.i32 = converted<int32_t>(s, checked); a.size = 4; break;
    case c10::kLong: a.value.i64 = converted<int64_t>(s, checked); a.size = 8; break;
    default: TORCH_CHECK(false, "unsupported compute dtype ", compute);
  }
  return a;
}

// A CPU scalar operand (a Python number, a 0-d CPU tensor) is converted as TensorIterator converts operands
// to the common dtype, unchecked (uint8 + 300 adds 44); for half and bfloat16 tensors the number is rounded to
// their type first (half - 65519.0 subtracts 65504) unless the op reads it unrounded (PointwiseExpr).
ScalarArg operand_scalar_arg(at::TensorIteratorBase& iter, int arg, c10::ScalarType common, c10::ScalarType compute) {
  if (!is_floating(compute)) return scalar_arg(iter.original_scalar_value<int64_t>(arg), compute, /*checked=*/false);
  return scalar_arg(cast_to_dtype(iter.original_scalar_value<double>(arg), common), compute, /*checked=*/false);
}

void set_scalar(cl_kernel k, cl_uint& index, const ScalarArg& a) {
  TOCL_CHECK(clSetKernelArg(k, index++, a.size, &a.value));
}

void set_buffer(cl_kernel k, cl_uint& index, void* data, size_t element_size) {
  const tocl::Resolved r = tocl::resolve(data);
  const cl_ulong offset = r.offset / element_size;
  TOCL_CHECK(clSetKernelArg(k, index++, sizeof(cl_mem), &r.buffer));
  TOCL_CHECK(clSetKernelArg(k, index++, sizeof(cl_ulong), &offset));
}

void set_index(cl_kernel k, cl_uint& index, int64_t value, bool index64) {
  if (index64) {
    const cl_ulong v = value;
    TOCL_CHECK(clSetKernelArg(k, index++, sizeof(v), &v));
  } else {
    const cl_uint v = static_cast<cl_uint>(value);
    TOCL_CHECK(clSetKernelArg(k, index++, sizeof(v), &v));
  }
}

// The contiguous kernel serves one dim (or one element) whose operands read from memory step by their
// element size. Host scalars are kernel arguments, so their zero stride does not count (TensorIterator's
// is_contiguous() counts it, which sent x * 2.0 to the strided kernel: 6x the time on PoCL).
bool contiguous_for_kernel(const at::TensorIteratorBase& iter, const std::array<bool, kMaxInputs>& scalar_inputs) {
  if (iter.ndim() > 1) return false;
  if (iter.ndim() == 0 || iter.numel() == 1) return true;
  for (int k = 0; k < iter.ntensors(); ++k) {
    if (k > 0 && scalar_inputs[k - 1]) continue;
    if (iter.strides(k)[0] != iter.element_size(k)) return false;
  }
  return true;
}

// Whether the program carries the vector kernel (kernel_forms' pointwise_vectors): a float32 expression that
// vectorizes, every tensor operand float32.
bool vector_form(int device, const at::TensorIteratorBase& iter, const PointwiseExpr& expr, c10::ScalarType compute,
                 const std::array<bool, kMaxInputs>& scalar_inputs) {
  if (!expr.vectorizes || compute != c10::kFloat || !tocl::kernel_forms(device).pointwise_vectors) return false;
  if (iter.dtype(0) != c10::kFloat) return false;
  for (int k = 0; k < iter.ninputs(); ++k)
    if (!scalar_inputs[k] && iter.dtype(k + 1) != c10::kFloat) return false;
  return true;
}

}  // namespace

c10::Scalar stored_scalar(const c10::Scalar& s, c10::ScalarType dtype) {
  if (dtype == c10::kHalf || dtype == c10::kBFloat16) check_scalar_fits(s, dtype);
  return s;
}

void run_pointwise(at::TensorIteratorBase& iter, const PointwiseExpr& expr, std::initializer_list<c10::Scalar> scalars,
                   std::optional<c10::ScalarType> compute_opt) {
  TORCH_INTERNAL_ASSERT(iter.noutputs() == 1 && iter.ninputs() <= kMaxInputs && scalars.size() <= 3);
  const int64_t numel = iter.numel();
  const int device = iter.device(0).index();
  // Not value_or: a nullary iterator (arange) has no common dtype to ask for.
  const auto common = compute_opt ? *compute_opt : iter.common_dtype();
  const auto compute = compute_dtype(common);
  // Dtypes without an OpenCL form (complex; double or half the device lacks) send the call to the CPU
  // fallback (aten/kernel_support/dtype_fallback.h): checked before anything is enqueued.
  for (int k = 0; k < iter.ntensors(); ++k)
    if (!iter.is_cpu_scalar(k)) check_device_supports(iter.dtype(k), device, expr.name);
  check_device_supports(compute, device, expr.name);
  const bool floating = is_floating(compute);
  // As on CPU, a dtype the operator lacks is an error (NotImplementedError) even for empty tensors.
  // (A missing float form, as bitwise ops have, was once a null expression and a crash.)
  TORCH_CHECK_NOT_IMPLEMENTED(floating ? expr.float_expr != nullptr : expr.int_expr != nullptr, "\"", expr.name,
                              "\" is not implemented for '", compute, "' on opencl");
  // CPU's kernels convert their scalar arguments before the loop, so one that does not fit the compute
  // type is an error even for empty tensors (clamp(min=300) or masked_fill of an empty uint8 tensor).
  std::array<ScalarArg, 3> scalar_args{};
  for (size_t i = 0; i < scalars.size(); ++i) scalar_args[i] = scalar_arg(scalars.begin()[i], compute);
  if (numel == 0) return;

  const int nin = iter.ninputs();
  std::array<bool, kMaxInputs> scalar_inputs{};  // not std::vector: no allocation per launch
  for (int k = 0; k < nin; ++k) scalar_inputs[k] = iter.is_cpu_scalar(k + 1);
  const bool contiguous = contiguous_for_kernel(iter, scalar_inputs);
  TiledLaunch launch;
  TORCH_CHECK(contiguous || tiled_launch(iter, 4, launch), expr.name, ": tensors with ", iter.ndim(),
              " non-mergeable dimensions exceed the opencl limit of ", kTiledMaxDims);
  // 32-bit index math unless the element count (contiguous) or an operand's extent (strided) needs 64.
  const bool index64 = contiguous ? force_index64() || !iter.can_use_32bit_indexing() : launch.index64;

  // As CPU's TensorIterator, an input of another dtype is converted to a half or bfloat16 common dtype before
  // the float computation: rounded (an int64 70000 is inf, 2049 is 2048). Two bits per input: 1 half, 2 bfloat16.
  uint32_t rounding = 0;
  if (common == c10::kHalf || common == c10::kBFloat16)
    for (int k = 0; k < nin; ++k)
      if (!scalar_inputs[k] && iter.dtype(k + 1) != common) rounding |= (common == c10::kHalf ? 1u : 2u) << (2 * k);
  const auto& forms = tocl::kernel_forms(device);
  uint32_t scalar_bits = 0;
  for (int k = 0; k < nin; ++k) scalar_bits |= static_cast<uint32_t>(scalar_inputs[k]) << k;
  const int steps = !contiguous && forms.pointwise_lines ? line_steps(iter, scalar_bits) : -1;
  const bool lines = steps >= 0;
  const bool vec16 = vector_form(device, iter, expr, compute, scalar_inputs);
  cl_program program = program_for(device, iter, expr, compute, scalar_inputs, static_cast<int>(scalars.size()),
                                   index64, rounding, lines, vec16);
  cl_kernel k = contiguous && vec16 ? tocl::get_kernel(program, "pointwise_contiguous_v16")
                : contiguous ? tocl::get_kernel(program, "pointwise_contiguous")
                : lines    ? tocl::get_kernel(program, "pointwise_lines")
                           : tocl::get_kernel(program, launch.nd ? "pointwise_strided_nd" : "pointwise_strided");
  cl_uint index = 0;
  set_buffer(k, index, iter.data_ptr(0), iter.element_size(0));
  for (int i = 0; i < nin; ++i) {
    if (scalar_inputs[i]) {
      set_scalar(k, index, operand_scalar_arg(iter, i + 1, expr.unrounded_scalar_operand && i == 1 ? compute : common,
                                              compute));
    } else {
      set_buffer(k, index, iter.data_ptr(i + 1), iter.element_size(i + 1));
    }
  }
  set_index(k, index, numel, index64);
  const cl_uint geometry_index = index;
  if (!contiguous) ++index;  // TiledGeometry, set by enqueue_tiled
  for (size_t i = 0; i < scalars.size(); ++i) set_scalar(k, index, scalar_args[i]);
  if (contiguous) {
    tocl::enqueue_1d(device, tocl::current_stream(device), k, vec16 ? (numel + 15) / 16 : numel,
                     forms.elementwise_group);
  } else if (lines) {
    const cl_int step_bits = steps;  // after the scalars and the three run arguments
    TOCL_CHECK(clSetKernelArg(k, index + 3, sizeof(step_bits), &step_bits));
    enqueue_lines(device, tocl::current_stream(device), k, geometry_index, index, launch, iter,
                  static_cast<int64_t>(forms.copy_run));
  } else {
    enqueue_tiled(device, tocl::current_stream(device), k, geometry_index, launch);
  }
}

}  // namespace torch_opencl
