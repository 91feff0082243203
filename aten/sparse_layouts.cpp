// Sparse COO and compressed (CSR, CSC, BSR, BSC) tensors on opencl: what a sparse tensor is made of.
//
// ATen writes a sparse tensor's structure (construction from indices and values, the accessors,
// resizing, copying, the coalesced flag) once for every device, over the dense tensors it holds:
// those kernels are registered here for the opencl sparse keys, so indices and values live on the
// device and a sparse tensor moves with .to()/.cpu() as on CUDA. Sparse COO @ dense, dense + sparse
// and to_dense run on the device (aten/native/sparse_mm.cpp, sparse_accumulate.cpp). The rest of sparse arithmetic (coalesce, add, mul, sum, the
// conversions) has device-specific kernels in ATen and reaches the sparse-aware CPU fallback
// (fallback/fallback.cpp), which carries sparse tensors to the CPU and back, counts every call and
// honours TORCH_OPENCL_FALLBACK.
#include <ATen/ATen.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_mm_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_to_dense_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <vector>

#include "aten/native/sparse_accumulate.h"
#include "aten/native/sparse_mm.h"
#include "fallback/fallback.h"

namespace torch_opencl {
namespace {

// sparse_dim/dense_dim/_dimI/_dimV name the same two kernels; the casts pick an overload.
using DimOf = int64_t (*)(const at::Tensor&);
using DenseToSparseDim = at::Tensor (*)(const at::Tensor&, int64_t);
using DenseToSparse = at::Tensor (*)(const at::Tensor&, std::optional<at::Layout>, at::OptionalIntArrayRef,
                                     std::optional<int64_t>);

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_symint));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_coo));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", static_cast<DimOf>(at::native::sparse_dim_sparse));
  m.impl("dense_dim", static_cast<DimOf>(at::native::dense_dim_sparse));
  m.impl("_dimI", static_cast<DimOf>(at::native::sparse_dim_sparse));
  m.impl("_dimV", static_cast<DimOf>(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("_to_sparse.sparse_dim", static_cast<DenseToSparseDim>(at::native::sparse_coo_to_sparse));
  m.impl("_to_sparse", static_cast<DenseToSparse>(at::native::sparse_coo_to_sparse));
  // sparse @ dense: mm is ATen's generic _sparse_mm, which reaches addmm, computed on the device.
  m.impl("mm", static_cast<at::Tensor (*)(const at::Tensor&, const at::Tensor&)>(at::native::_sparse_mm));
  m.impl("addmm", TORCH_FN(addmm_sparse_dense));
  m.impl("addmm.out", TORCH_FN(addmm_sparse_dense_out));
  m.impl("addmm_", TORCH_FN(addmm_sparse_dense_));
  // dense + sparse on the device; to_dense is ATen's generic zeros + add_.
  m.impl("add.Tensor", TORCH_FN(add_sparse_into_dense));
  m.impl("add_.Tensor", TORCH_FN(add_sparse_into_dense_));
  m.impl("add.out", TORCH_FN(add_sparse_into_dense_out));
  m.impl("_to_dense", TORCH_FN(at::native::sparse_to_dense));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_compressed_symint));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_csr));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", static_cast<DimOf>(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", static_cast<DimOf>(at::native::dense_dim_sparse_csr));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_compressed_));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_compressed_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse_compressed));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_csr_));
}

// Dense to COO is written over nonzero and indexing, which run on the device.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_to_sparse.sparse_dim", static_cast<DenseToSparseDim>(at::native::dense_to_sparse));
  m.impl("_to_sparse", static_cast<DenseToSparse>(at::native::dense_to_sparse));
}

// An operator with a CPU sparse kernel and a composite one (sum, mm, permute, sin for CSR, ...)
// would run the composite on opencl sparse tensors, which is dense code meeting a sparse tensor:
// wrong results or odd errors. Each such operator without an opencl sparse kernel here is routed
// to the CPU fallback explicitly, so it runs CPU's sparse kernel. Operators that decompose
// (CompositeImplicitAutograd) are left alone: a backend kernel would take their autograd formula.
// Static initialisation runs this after the TORCH_LIBRARY_IMPL blocks above (same file, in order).
struct SparseFallbackRoutes {
  std::vector<std::unique_ptr<torch::Library>> libraries;

  SparseFallbackRoutes() {
    const std::pair<c10::DispatchKey, c10::DispatchKey> keys[] = {
        {c10::DispatchKey::SparseCPU, c10::DispatchKey::SparsePrivateUse1},
        {c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::SparseCsrPrivateUse1}};
    auto& dispatcher = c10::Dispatcher::singleton();
    const auto names = dispatcher.getAllOpNames();
    for (const auto& [cpu_key, opencl_key] : keys) {
      auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", opencl_key, __FILE__, __LINE__);
      for (const auto& name : names) {
        if (name.name.rfind("aten::", 0) != 0) continue;
        const auto op = dispatcher.findOp(name);
        if (!op || !op->hasKernelForDispatchKey(cpu_key) || op->hasKernelForDispatchKey(opencl_key) ||
            op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd))
          continue;
        std::string full_name = name.name.substr(6);
        if (!name.overload_name.empty()) full_name += "." + name.overload_name;
        library->impl(full_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
      }
      libraries.push_back(std::move(library));
    }
  }
};

const SparseFallbackRoutes sparse_fallback_routes;

}  // namespace
}  // namespace torch_opencl
