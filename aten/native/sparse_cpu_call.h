#pragma once
// A sparse kernel's hand-over to the CPU fallback for a call its device path does not take: the
// fallback runs CPU's kernel (its results, its errors), counts the call and honours
// TORCH_OPENCL_FALLBACK; `why` is what its warning and error say.
#include <ATen/core/boxing/impl/boxing.h>

#include <string>
#include <utility>

#include "aten/kernel_support/dtype_fallback.h"
#include "fallback/fallback.h"

namespace torch_opencl {

template <class Sig, class... Args>
decltype(auto) sparse_call_on_cpu(const char* op_name, const std::string& why, Args&&... args) {
  FallbackReason reason(why);
  return c10::impl::BoxedKernelWrapper<Sig>::call(c10::BoxedKernel::makeFromFunction<&cpu_fallback>(),
                                                  detail::operator_handle(op_name),
                                                  c10::DispatchKeySet(c10::DispatchKey::SparsePrivateUse1),
                                                  std::forward<Args>(args)...);
}

}  // namespace torch_opencl
