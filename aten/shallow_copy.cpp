// Whether `self` can take `from`'s data in place (`self.data = from`, and nn.Module._apply, which keeps a
// Parameter and swaps its data when this is true). c10's TensorImpl::has_compatible_shallow_copy_type knows
// the in-tree dense backends only and leaves a PrivateUse1 backend to answer for itself. CUDA's answer for
// a dense CPU tensor and a dense CUDA one is yes, so opencl's is yes for any two dense, strided tensors of
// the dense backends and opencl: Module.to("opencl") then keeps Parameter objects (tied weights stay tied,
// an optimizer made before .to() steps the model), as it does on CUDA.
#include <c10/core/DispatchKeySet.h>

#include "aten/minimal_ops.h"

namespace torch_opencl {

namespace {

bool is_dense_strided(c10::DispatchKeySet keys) {
  constexpr auto dense_backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit, c10::BackendComponent::MPSBit,
       c10::BackendComponent::HIPBit, c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  return keys.has(c10::DispatchKey::Dense) && keys.has_any(dense_backends) &&
         !keys.has_any(c10::DispatchKeySet({c10::DispatchKey::Sparse, c10::DispatchKey::SparseCsr,
                                            c10::DispatchKey::NestedTensor, c10::DispatchKey::Quantized}));
}

}  // namespace

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) return true;
  return is_dense_strided(self.key_set()) && is_dense_strided(from.key_set());
}

}  // namespace torch_opencl
