// torch_opencl._C._staging_backend: builds the opencl_gloo backend around a ProcessGroupGloo that
// torch_opencl/distributed.py creates. The result is a torch._C._distributed_c10d.Backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "aten/distributed/staging_backend.h"
#include "python/torch_opencl/csrc/bindings.h"

namespace py = pybind11;

namespace torch_opencl {

void bind_distributed(py::module& m) {
  m.def(
      "_staging_backend",
      [](c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout) {
        return c10::intrusive_ptr<c10d::Backend>(
            c10::make_intrusive<distributed::StagingBackend>(std::move(gloo), rank, size, timeout));
      },
      py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("timeout"));
}

}  // namespace torch_opencl
