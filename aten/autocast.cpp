// torch.autocast("opencl"): PyTorch's own autocast policies (the operator lists
// CUDA uses) registered for the AutocastPrivateUse1 key. The dtype comes from
// torch.get_autocast_dtype("opencl"), whose default this file also chooses lazily
// (aten/autocast.h): float16 where the devices have cl_khr_fp16, bfloat16 otherwise.
#include "aten/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include <thread>

#include "runtime/device.h"

namespace torch_opencl {
namespace {

using namespace at::autocast;
// The operator lists spell their signatures unqualified, as inside namespace at.
#if TORCH_OPENCL_HAS_DIMNAMES  // torch 2.11's operator lists name it too (gone in 2.13)
using at::DimnameList;
#endif
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

constexpr ScalarType kProvisional = at::kBFloat16;

// Set up during the library's load, in the thread that imports torch_opencl.
struct Starting {
  std::thread::id importing_thread = std::this_thread::get_id();
  ScalarType builtin = get_autocast_dtype(at::kPrivateUse1);  // PyTorch's, in every new thread
  Starting() { set_autocast_dtype(at::kPrivateUse1, kProvisional); }
};
const Starting starting;

thread_local bool applied = false;

bool all_devices_have_fp16() {
  const int count = tocl::device_count();
  for (int d = 0; d < count; ++d)
    if (!tocl::device_info(d).fp16) return false;
  return count > 0;
}

const bool hooked = [] {
  tocl::on_devices_selected([] {
    try {
      apply_default_autocast_dtype(all_devices_have_fp16());
    } catch (...) {
      // A selection without devices: nothing to choose for.
    }
  });
  return true;
}();

// As on CUDA: binary_cross_entropy is unsafe to autocast.
at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

// Operators with no policy run unchanged.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TOCL_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TOCL_LOWER_PRECISION_FP)
#define TOCL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TOCL_FP32)
#define TOCL_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TOCL_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TOCL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TOCL_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN((&binary_cross_entropy_banned)));
}

}  // namespace

void apply_default_autocast_dtype(bool fp16_everywhere) {
  // Inside an opencl autocast region the dtype is the region's: leave it, and try again later.
  if (applied || is_autocast_enabled(at::kPrivateUse1)) return;
  applied = true;
  const ScalarType untouched =
      std::this_thread::get_id() == starting.importing_thread ? kProvisional : starting.builtin;
  if (get_autocast_dtype(at::kPrivateUse1) != untouched) return;  // the user chose one
  set_autocast_dtype(at::kPrivateUse1, fp16_everywhere ? at::kHalf : at::kBFloat16);
}

}  // namespace torch_opencl
