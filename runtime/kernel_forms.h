#pragma once
// The one place where the shape of every kernel family is chosen from the device's description
// (runtime/device.h), as CLBlast keeps its per-device parameters in one database: the kernel class
// (CPU-shaped or GPU-shaped forms) and the sizes that follow from it. Operator code asks
// kernel_forms(device) and never tests device types or vendors itself.
//
// TORCH_OPENCL_KERNEL_CLASS=cpu|gpu forces the class, so the GPU forms run (and are tested) on PoCL.
#include <cstddef>
#include <optional>
#include <string>

namespace tocl {

enum class KernelClass { cpu, gpu };

struct KernelForms {
  KernelClass kernel_class = KernelClass::cpu;
  std::string reason;  // why this class: "device type cpu", "TORCH_OPENCL_KERNEL_CLASS=gpu", ...

  // Work-items per row of the row-wise kernels (softmax, norms, losses): the WG of their sources.
  // CPU devices run a work-group on one core, so a small group keeps rows apart; GPUs want a group
  // wide enough to hide memory latency with coalesced loads.
  size_t row_group = 64;

  // The SIMD width the device runs in lockstep where known (NVIDIA warp, AMD wavefront), else 0.
  size_t simd_width = 0;

  // mm/addmm/bmm/baddbmm on our register-tiled CPU kernel (kernels_cl/gemm.cl) for products up to
  // TORCH_OPENCL_SMALL_GEMM_LIMIT; the GPU class uses CLBlast and the GPU GEMM forms instead.
  bool cpu_register_gemm = true;

  // ---- Row-wise families: softmax/log_softmax, layer_norm, batch_norm, nll_loss (cross_entropy) ----
  // GPU forms (kernels_cl/line_reduce.cl and the *_gpu.cl files that include it): the lines of a
  // kernel (rows, or the columns of a softmax over a non-last dim) share work-groups of row_group
  // items, a power-of-two segment of items per line, consecutive items on consecutive elements or
  // columns, reductions in local memory; batch norm's statistics, layer norm's weight/bias
  // gradients and nll_loss's sum in two stages (partial sums per block, then a combine) so every
  // compute unit works.
  bool row_gpu_forms = false;
  // Elements of its line each work-item is sized for (the sources keep up to 8 in registers and
  // read a line from memory once; longer lines are re-read).
  size_t line_items = 8;
  // Adjacent columns one group reads together (a non-last-dim softmax, layer norm's parameter
  // gradients): enough for whole memory transactions, few enough that long columns get enough
  // items to stay in registers.
  size_t column_lines = 16;
  // Work-groups that fill the device: segments widen and two-stage reductions split until a
  // launch has about this many.
  size_t busy_groups = 0;

  bool gpu() const { return kernel_class == KernelClass::gpu; }
};

// The forms of selected device `device`, computed once per device. Throws tocl::Error when
// TORCH_OPENCL_KERNEL_CLASS names no class.
const KernelForms& kernel_forms(int device);

const char* kernel_class_name(KernelClass c);

// The class TORCH_OPENCL_KERNEL_CLASS forces, if set; throws tocl::Error when it names no class (checked
// when the devices are selected, so the first use of the device reports it).
std::optional<KernelClass> kernel_class_from_env();

}  // namespace tocl
