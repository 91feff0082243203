#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include "aten/copy_kernels.h"
#include "aten/minimal_ops.h"

namespace torch_opencl {

at::Tensor& fill_scalar_(at::Tensor& self, const c10::Scalar& value) {
  const c10::DeviceGuard guard(self.device());
  if (!device_fill(self, value)) {
    // dtypes the device cannot compute with: fill on the host over the tensor's bytes.
    auto mirror = host_mirror(self);
    mirror.fill_(value);
    write_back_mirror(self, mirror);
  }
  return self;
}

at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return fill_scalar_(self, value.item());
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar_(self, 0); }

}  // namespace torch_opencl
