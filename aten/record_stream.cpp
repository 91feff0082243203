// Tensor.record_stream(s): the caching allocator keeps the tensor's block from
// reuse until the work enqueued on `s` before the tensor is freed has finished.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/device_allocator.h"

namespace torch_opencl {
namespace {

void record_stream(at::Tensor& self, at::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream expects an opencl stream for an opencl tensor, got a stream of ", stream.device());
  TORCH_CHECK(stream.device_index() == self.device().index(), "record_stream: the stream is on ", stream.device(),
              " but the tensor is on ", self.device());
  device_allocator()->recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(record_stream)); }

}  // namespace
}  // namespace torch_opencl
