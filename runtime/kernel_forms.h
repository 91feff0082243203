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

  // Work-items per group of the per-element kernels (pointwise, copies and their strided tiles, convolution's
  // layout kernels, split K's sum): 256, or the largest power of two the device's groups allow below that
  // (Oclgrind's --max-wgsize 128 showed every such launch failing with CL_INVALID_WORK_ITEM_SIZE when it
  // was a constant).
  size_t elementwise_group = 256;

  // The SIMD width the device runs in lockstep where known (NVIDIA warp, AMD wavefront), else 0.
  size_t simd_width = 0;

  // How the implementation maps work-items to SIMD lanes, which the CPU forms' runs follow. PoCL's CPU driver
  // runs a group's work-items one after another and vectorises each item's own loops; Intel's CPU runtime, as
  // GPUs, puts consecutive work-items in the lanes of one vector and leaves an item's loop scalar, so an item
  // that walks a run alone makes every vector a gather of addresses a run apart (cat of two 1024x1024 floats:
  // 5.1 ms on Intel's runtime, 0.12 on PoCL). Where items are vectorised, line_lanes consecutive items share a
  // run, lane l taking its elements l, l + line_lanes, ... (kernels_cl/prelude.cl's RUN_ID and RUN_LANE).
  // From the implementation (PoCL: its loops; Intel's CPU runtime and GPUs: across items); an unknown CPU
  // implementation is measured once (runtime/item_vectorisation.h). TORCH_OPENCL_LINE_LANES=N overrides.
  bool vectorises_items = false;
  std::string lanes_reason;  // how that was decided
  size_t line_lanes = 1;

  // mm/addmm/bmm/baddbmm on our register-tiled CPU kernel (kernels_cl/gemm.cl) for products up to
  // TORCH_OPENCL_SMALL_GEMM_LIMIT; the GPU class uses CLBlast and the GPU GEMM forms instead.
  bool cpu_register_gemm = true;
  // Its tile: floats per vector (the device's native float vector width: 16 on AVX-512, 8 on AVX2) and rows
  // per work-item (32 vector registers on AVX-512 hold 8 x 2 accumulators; AVX2's 16 hold 6 x 2). Also the
  // tile of the products torch.compile generates with their epilogues (kernels_cl/inductor_gemm.cl). 0 where
  // the class has no register GEMM.
  int cpu_gemm_vector_width = 0;
  int cpu_gemm_rows = 0;
  // The compiled products' dot-product tile (x @ w.t(), inductor_gemm.cl's tocl_gemm_nt): 4 rows x 4 columns
  // of vector accumulators on AVX-512, 4 x 2 in AVX2's 16 registers.
  int cpu_gemm_nt_rows = 0;
  int cpu_gemm_nt_cols = 0;

  // GEMM shaped for GPUs (kernels_cl/gemm_tiled.cl) for mm/addmm/bmm/baddbmm, one launch per batch:
  // tiles of 64 rm x 64 rn with K stages of bk. The plan (aten/native/gemm_tiled.cpp) takes the large
  // tile where it fills the device with work-groups, else the small one, and splits K when even the
  // small tiles leave compute units idle.
  struct GemmTile {
    int rm = 1, rn = 1, bk = 16;
  };
  bool tiled_gemm = false;
  // Defaults measured on an H100 (NVIDIA OpenCL 3.0): once the operand layout was compiled in (115-125
  // registers instead of 254), K stages of 16 ran the large tile 4-6% faster than 8 on the GPT's products
  // (8192x1152x384: 281 against 295 us); with the layout a runtime branch, 8 had been 1.44x faster.
  GemmTile gemm_large{2, 2, 16};
  GemmTile gemm_small{1, 1, 16};
  size_t compute_units = 1;  // work-groups in flight per wave, for the plans
  // Tensor cores through inline PTX (kernels_cl/gemm_mma.cl, aten/native/gemm_mma.cpp): mma.sync on NVIDIA
  // devices of compute capability 8.0 and up, for float16/bfloat16 products (the same float products and
  // float sums as the tiled kernel; on the H100 autocast's GPT step went 48.9 -> 38.2 ms) and float32 ones where torch's float32 matmul precision
  // is not "highest" (TF32, as CUDA). TORCH_OPENCL_TENSOR_CORES=0|1 overrides; where the driver cannot
  // build the kernel, the products go on without it (one warning).
  bool tensor_core_gemm = false;

  // Convolution's GEMMs with the batch folded into their columns, (O, K) @ (K, N * OH * OW), fed by
  // per-element layout kernels (aten/native/convolution.cpp); the CPU form keeps the patches as rows,
  // (N * OH * OW, K) @ (K, O), with a work-item per row.
  bool conv_batch_folded = false;
  // 3x3, stride-1, dilation-1, single-group 2-D convolutions, forward and input gradient, as Winograd
  // F(2x2, 3x3) (aten/native/conv_winograd.h): 16 multiplies per 2x2 output tile and channel pair
  // instead of 36, as 16 batched GEMMs. Below winograd_min_channels input or output channels the
  // GEMMs are too shallow (or short) to pay for the transforms, and the im2col path stays. Both classes.
  bool conv_winograd = false;
  size_t winograd_min_channels = 16;
  // Its input and output transforms' CPU form: a work-item per row of tiles, sliding along it (each input
  // column read once, index arithmetic per row). GPUs keep a work-item per tile (coalesced).
  bool winograd_lines = false;
  // Depthwise convolution (kernels_cl/conv_depthwise.cl): a work-item per row of outputs and per weight
  // element (CPUs: the index arithmetic once a row), or a work-item per element and a work-group per weight
  // element (GPUs: neighbouring items read neighbouring pixels).
  bool conv_depthwise_rows = true;

  // ---- Reductions, scans, embedding backward, index_add (aten/native/reduce.cpp, scan.cpp,
  // segment_sum.cpp). CPU forms give each work-item a contiguous run (which PoCL vectorises); GPU
  // forms put consecutive work-items on consecutive elements (coalesced loads) and split long
  // reductions and scans over enough work-groups to fill every compute unit.
  bool reduce_coalesced = false;   // reduce_rows/reduce_cols kernels (a group of lanes per output)
  size_t reduce_group = 256;       // work-items per reduction group in the GPU forms
  size_t reduce_fill_groups = 64;  // groups a reduction (or scan) aims for so that all compute units work
  bool scan_parallel = false;      // a work-group per line (or chunk of one) with a local-memory scan
  // embedding backward and index_add: stable sort of the indices, then segmented sums of each run of
  // equal indices (deterministic, no atomics, parallel); off (CPU form): where the sums are added without
  // scale_by_freq, a work-item per group of columns walking the indices in order (segment_column_walk).
  bool sorted_segment_sums = false;
  // Sorts of few long rows (aten/native/sort.cpp): the CPU form cuts each row into chunks, a work-item
  // merge-sorts each, then merge passes give each work-item a span of the output (found by a binary search
  // along the merge path) to merge serially; the GPU form keeps the bitonic network (local memory, then global
  // steps). PoCL ran the network's local steps at about 10 ns a compare-exchange: a sort of 1M floats took 1.1 s.
  bool sort_chunk_merges = false;
  // kthvalue, median and nanmedian (aten/native/order_stats.cpp): the CPU form gives a work-item a row and
  // selects by quickselect (O(n), as CPU's nth_element), where the GPU form sorts the rows (every item busy)
  // and picks from them. The sort made the median of 1M floats 12x CPU's time on PoCL.
  bool quickselect_rows = false;
  // bincount and histc (aten/native/histogram.cpp): the CPU form gives each of a few work-items a long span of
  // the input and a row of counts of its own (no atomics), the rows summed after; the GPU form has every
  // work-item add atomically into one row. PoCL's atomic increments took 3 ns an element (bincount of 1M into
  // 1000 bins: 3.6 ms, CPU 0.8).
  bool private_bin_counts = false;

  // ---- Copies that rearrange: cat, flip/roll/repeat, index_select (aten/native/shape_ops.cpp, indexing.cpp),
  // and strided copies whose source steps by one or zero along the innermost dim (slices, expansions:
  // aten/copy_kernels.cpp) ----
  // Line forms: a work-item copies a run of up to copy_run elements along the innermost dim and does the
  // other dims' index arithmetic once per run. CPUs need them (a division per dim per element dominated:
  // cat of two 1024x1024 floats took 20 ms on PoCL); GPUs keep a work-item per element, whose
  // neighbours read and write neighbouring elements (coalesced).
  bool copy_lines = false;
  size_t copy_run = 4096;
  // Pointwise ops whose operands step by one element or not at all along the innermost dim (broadcasts)
  // take the same runs instead of the strided kernel's tiles (kernels_cl/pointwise.cl's pointwise_lines);
  // the CPU form, for the same reason: PoCL kept the tiles' loads scalar (x + bias row, 1M floats: 17x CPU).
  bool pointwise_lines = false;
  // Contiguous float32 pointwise ops whose expression vectorizes (PointwiseExpr::vectorizes) take 16 elements
  // a work-item as float16 vectors (pointwise.cl's pointwise_contiguous_v16): PoCL's work-item loop stays
  // scalar around a builtin's call (exp), and its vector builtins are 2.5-3.5x faster. GPUs keep a work-item
  // per element.
  bool pointwise_vectors = false;

  // ---- Multi-tensor apply (the _foreach_* ops of torch.optim and clip_grad_norm_: aten/native/foreach.cpp) ----
  // Consecutive elements per work-item. Each item first finds its tensor and picks that tensor's pointers
  // out of 16 (a few dozen instructions); GPUs hide that behind memory, CPUs pay it per item, so the CPU
  // form gives an item a run long enough for its vectorised loop to dominate.
  size_t foreach_per_item = 16;

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

  // ---- scaled_dot_product_attention (aten/native/attention.cpp, kernels_cl/attention.cl) ----
  // Neither form materialises the scores. The GPU form gives a work-item one query row (or, for dK/dV,
  // one key row) and a work-group attention_rows consecutive rows of one head, and stages the key/value
  // (or query/gradient) rows they all read in local-memory tiles of at most attention_tile_bytes,
  // loaded coalesced. The CPU form gives a work-item 16 rows as the lanes of vectors (each element it
  // reads feeds 16 rows; 1.4x faster than 8 on AVX2), attention_rows work-items a group, and reads
  // through the cache.
  bool attention_tiled = false;
  size_t attention_rows = 64;
  size_t attention_tile_bytes = 16384;
  // F.scaled_dot_product_attention takes the fused kernels for head dims up to this and the math path
  // (GEMMs and a softmax) above it, unless the user's sdpa_kernel asks otherwise: a work-item per row
  // walks every key serially, which loses to GEMMs on a GPU once a row is long (bench_attention.py --sweep).
  size_t attention_fused_max_head_dim = 128;

  // ---- Dense linear algebra (aten/native/linalg_*.cpp, kernels_cl/linalg.cl) ----
  // Matrices of at most this many rows and columns take the kernels of a work-item per matrix (LU) or per
  // (matrix, right-hand side) (the solves); larger ones a work-group per matrix (or per block of right-hand
  // sides), stepping column by column with barriers between. PoCL runs a group's barriers at a high cost (LU of
  // 256 32x32 matrices: 15.4 ms a group each, 0.93 ms an item each; one 64x64: 236 us against 77): the CPU
  // form walks matrices up to 64x64 in one work-item; GPUs, slow per thread, only up to 16x16.
  size_t linalg_serial_max = 16;

  // ---- Index checks of nll_loss targets, embedding indices and compiled graphs' indirect loads ----
  // Deferred (runtime/deferred_errors.h): the bad index is recorded on the device and raised at the next
  // wait, so the op does not stall the queue; GPU class. Otherwise the op waits for its check and raises
  // at the call, as CPU PyTorch. TORCH_OPENCL_SYNC_INDEX_CHECKS=1 makes every device check at the call.
  bool deferred_index_checks = false;

  // ---- Math library ----
  // Float log, log2, log10, log1p, expm1, pow, sin, cos, tan, atan, asin and acos from kernels_cl/float_math.cl
  // instead of the driver's, where the driver's are slow: PoCL's CPU device (8-16 ns an element, pow 70, against
  // 0.5-3.5, 1M floats on a 2-core EPYC; bench/bench_math.py). Not a kernel-class choice: it follows the driver, whatever the class.
  // TORCH_OPENCL_OWN_FLOAT_MATH=0|1 overrides it.
  bool own_float_math = false;

  // ---- Bulk memory ----
  // Contiguous fills and device-to-device copies of at least these many bytes run as kernels
  // (kernels_cl/bulk_memory.cl) instead of clEnqueueFillBuffer / clEnqueueCopyBuffer, where the driver's
  // run on one host thread: PoCL's CPU device (zero_ of 1M floats 299 us, a kernel 82; a copy of 4M floats
  // 941 us, a kernel 440-470; 2-core EPYC). 0: never (the driver's are DMA engines or kernels of their own
  // on GPUs). Like own_float_math, this follows the driver, not the class.
  size_t kernel_fill_min_bytes = 0;
  size_t kernel_copy_min_bytes = 0;
  // Options every program of the device is built with (-D lines for the choices above that the OpenCL C
  // sources read); part of the program cache's key.
  std::string build_options;

  bool gpu() const { return kernel_class == KernelClass::gpu; }
};

// The forms of selected device `device`, computed once per device. Throws tocl::Error when
// TORCH_OPENCL_KERNEL_CLASS names no class.
const KernelForms& kernel_forms(int device);

// Tuned tiles for the tiled GEMM (runtime/gemm_tuning.cpp applies the saved ones before the device's
// first GEMM). Throws tocl::Error for a tile the kernel has no form of (rm, rn in {1, 2}, bk in {4, 8, 16, 32}).
void set_gemm_tiles(int device, KernelForms::GemmTile large, KernelForms::GemmTile small);

// Tests reach the Winograd form with few channels through this (0 or 1: every channel count).
void set_winograd_min_channels(int device, size_t channels);

const char* kernel_class_name(KernelClass c);

// The class TORCH_OPENCL_KERNEL_CLASS forces, if set; throws tocl::Error when it names no class (checked
// when the devices are selected, so the first use of the device reports it).
std::optional<KernelClass> kernel_class_from_env();

}  // namespace tocl
