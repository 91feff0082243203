#pragma once
// Calls a kernel cannot take run on the CPU fallback. A kernel refuses the dtypes it has no OpenCL
// form for (complex; double or half where the device lacks cl_khr_fp64 / cl_khr_fp16) by throwing
// DtypeNotNative (cl_types.h's checks do, before any work is enqueued). Kernels registered through
// TOCL_LIBRARY_IMPL catch it (and any error of a call with a complex or other OpenCL-less dtype
// among its tensors) and run that call on the boxed CPU fallback (fallback/fallback.h),
// which counts it in fallback_stats and honours TORCH_OPENCL_FALLBACK like any operator without a
// kernel. One mechanism for every kernel: a registration block reads
//
//   TOCL_LIBRARY_IMPL(m) {                // instead of TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
//     m.impl("mul.Tensor", TORCH_FN(mul));
//   }
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "fallback/fallback.h"

namespace torch_opencl {

// "This kernel has no OpenCL form for these dtypes." A c10::Error: where nothing catches it, it
// reads as any other error.
class DtypeNotNative : public c10::Error {
 public:
  using c10::Error::Error;
};

[[noreturn]] void throw_dtype_not_native(const std::string& message);

namespace detail {

// The schema of a registration name ("mul.Tensor", "aten::mul.Tensor", "neg").
const c10::OperatorHandle& operator_handle(const std::string& name);

// Whether a dtype has an OpenCL storage type at all (complex, quantized, ... have none).
bool has_opencl_form(c10::ScalarType type);

// The first tensor argument's dtype that has no OpenCL form, if any.
inline std::optional<c10::ScalarType> formless(const at::Tensor& t) {
  if (t.defined() && !has_opencl_form(t.scalar_type())) return t.scalar_type();
  return std::nullopt;
}
inline std::optional<c10::ScalarType> formless(const std::optional<at::Tensor>& t) {
  return t ? formless(*t) : std::nullopt;
}
inline std::optional<c10::ScalarType> formless(at::TensorList ts) {
  for (const auto& t : ts)
    if (auto d = formless(t)) return d;
  return std::nullopt;
}
inline std::optional<c10::ScalarType> formless(const at::ITensorListRef& ts) {
  for (const auto& t : ts)
    if (auto d = formless(t)) return d;
  return std::nullopt;
}
inline std::optional<c10::ScalarType> formless(const c10::List<std::optional<at::Tensor>>& ts) {
  for (const std::optional<at::Tensor>& t : ts)
    if (auto d = formless(t)) return d;
  return std::nullopt;
}
template <class T>
std::optional<c10::ScalarType> formless(const T&) {
  return std::nullopt;
}

template <class Sig>
struct WithCpuFallback;

// Runs the kernel; a call it refuses (DtypeNotNative), or one it fails with a tensor of a dtype that
// has no OpenCL form among its arguments (its iterator may reject complex before any dtype check),
// runs on the CPU fallback instead. Kernels refuse before enqueueing, so nothing ran on the device.
template <class Ret, class... Args>
struct WithCpuFallback<Ret(Args...)> {
  template <class FuncPtr>
  static auto wrap(std::string name) {
    return [name = std::move(name)](Args... args) -> Ret {
      std::string why;
      try {
        return FuncPtr::func_ptr()(args...);
      } catch (const DtypeNotNative& e) {
        why = e.what_without_backtrace();
      } catch (const c10::Error&) {
        std::optional<c10::ScalarType> dtype;
        ((dtype = dtype ? dtype : formless(args)), ...);
        if (!dtype) throw;
        why = c10::str("dtype ", *dtype, " has no OpenCL storage type");
      }
      FallbackReason reason(why);
      return c10::impl::BoxedKernelWrapper<Ret(Args...)>::call(
          c10::BoxedKernel::makeFromFunction<&cpu_fallback>(), operator_handle(name),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), args...);
    };
  }
};

}  // namespace detail

// The registration block's `m`: impl() wraps function kernels as above; anything else (a
// CppFunction such as makeFallthrough) passes through unchanged.
class KernelRegistrar {
 public:
  explicit KernelRegistrar(torch::Library& library) : library_(library) {}

  template <class FuncPtr, std::enable_if_t<c10::is_compile_time_function_pointer<FuncPtr>::value, int> = 0>
  KernelRegistrar& impl(const char* name, FuncPtr) {
    using Sig = typename FuncPtr::FuncType;
    library_.impl(name, detail::WithCpuFallback<Sig>::template wrap<FuncPtr>(name));
    return *this;
  }

  KernelRegistrar& impl(const char* name, torch::CppFunction&& f) {
    library_.impl(name, std::move(f));
    return *this;
  }

 private:
  torch::Library& library_;
};

}  // namespace torch_opencl

#define TOCL_LIBRARY_IMPL(m) TOCL_LIBRARY_IMPL_UID(m, C10_UID)
#define TOCL_LIBRARY_IMPL_UID(m, uid) TOCL_LIBRARY_IMPL_NAMED(m, C10_CONCATENATE(tocl_kernels_, uid))
#define TOCL_LIBRARY_IMPL_NAMED(m, fn)                       \
  static void fn(::torch_opencl::KernelRegistrar& m);        \
  TORCH_LIBRARY_IMPL(aten, PrivateUse1, tocl_library) {      \
    ::torch_opencl::KernelRegistrar registrar(tocl_library); \
    fn(registrar);                                           \
  }                                                          \
  static void fn(::torch_opencl::KernelRegistrar& m)
