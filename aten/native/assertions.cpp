// torch._assert_async (ATen's fast path of multinomial, torch.export's runtime asserts): CPU's own
// device-generic kernels, which read the one value back (CUDA defers the check to a device-side assert;
// here it costs one synchronization, as on CPU).
#include <ATen/ops/_assert_async_native.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"

namespace torch_opencl {

TOCL_LIBRARY_IMPL(m) {
  m.impl("_assert_async", TORCH_FN(at::native::_assert_async_cpu));
  m.impl("_assert_async.msg", TORCH_FN(at::native::_assert_async_msg_cpu));
}

}  // namespace torch_opencl
