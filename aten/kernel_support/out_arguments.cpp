#include "aten/kernel_support/out_arguments.h"

#include <c10/util/Exception.h>

namespace torch_opencl {

void check_out_device(const at::Tensor& out, c10::Device device, const char* op) {
  if (!out.defined()) return;
  TORCH_CHECK(out.device() == device, op, ": the out= tensor is on ", out.device(), " but the operator runs on ",
              device, "; expected all tensors to be on the same device (pass an out= tensor on ", device,
              ", or move the inputs).");
}

void check_out_dtype(c10::ScalarType result, const at::Tensor& out, const char* op) {
  if (!out.defined()) return;
  TORCH_CHECK(at::canCast(result, out.scalar_type()), op, ": result type ", result,
              " can't be cast to the desired output type ", out.scalar_type(), " (pass an out= tensor of dtype ",
              result, ").");
}

}  // namespace torch_opencl
