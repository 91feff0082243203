// The boxed global fallback for PrivateUse1: operators without an opencl
// kernel run on the CPU. Counts what it served and honours TORCH_OPENCL_FALLBACK.
//
// Modelled on ATen's cpu_fallback (aten/src/ATen/native/CPUFallback.cpp), with what an
// honest backend needs on top: tensors on two devices are an error (CPU 0-dim tensors
// and CPU index tensors excepted, as on CUDA); Device arguments run on the CPU and the
// results go to the asked device; an opencl (or absent) Generator becomes a CPU one
// seeded from the opencl generator's seed and offset; mutated inputs (in-place, out=,
// TensorList) are written back; views are real views (geometry from the Meta kernel,
// then as_strided of the opencl input) or a clear error, never a silent copy.
#include "fallback/fallback.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "aten/generator.h"
#include "aten/kernel_support/out_arguments.h"

namespace torch_opencl {
namespace {

enum class Mode { kWarn, kSilent, kError };

thread_local std::string tls_reason;  // FallbackReason's, while one is alive

Mode parse_mode(const std::string& value) {
  if (value == "warn") return Mode::kWarn;
  if (value == "silent") return Mode::kSilent;
  if (value == "error") return Mode::kError;
  TORCH_CHECK(false, "TORCH_OPENCL_FALLBACK='", value, "' is not a fallback mode; use one of: warn, silent, error.");
}

struct State {
  std::mutex mutex;
  std::map<std::string, int64_t> counts;
  std::set<std::string> warned;
  Mode mode = Mode::kWarn;
  bool mode_read = false;

  Mode current_mode() {
    if (!mode_read) {
      const char* env = std::getenv("TORCH_OPENCL_FALLBACK");
      mode = (env && *env) ? parse_mode(env) : Mode::kWarn;  // a bad value raises every time it is read
      mode_read = true;
    }
    return mode;
  }
};

State& state() {
  static State s;
  return s;
}

std::string operator_name(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

bool is_opencl(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

bool is_write(const c10::Argument& a) { return a.alias_info() != nullptr && a.alias_info()->isWrite(); }

bool is_generator_arg(const c10::Argument& a) {
  c10::TypePtr type = a.type();
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::GeneratorType;
}

// A return that aliases an input without writing it: the operator is a view.
bool is_view_return(const c10::Argument& r) { return r.alias_info() != nullptr && !r.alias_info()->isWrite(); }

// Calls `f(tensor)` for every defined tensor in an argument: Tensor, Tensor?, Tensor[] and Tensor?[].
template <typename F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) f(v.toTensor(), /*in_optional_list=*/false);
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined()) f(t, false);
  } else if (v.isOptionalTensorList()) {
    for (const auto& t : v.toOptionalTensorVector())
      if (t.has_value() && t->defined()) f(*t, true);
  }
}

// The argument with every defined tensor in it (Tensor, Tensor[], Tensor?[]) replaced by f(tensor).
template <typename F>
c10::IValue map_tensors(const c10::IValue& v, F&& f) {
  if (v.isTensor()) return v.toTensor().defined() ? c10::IValue(f(v.toTensor())) : v;
  if (v.isTensorList()) {
    std::vector<at::Tensor> list;
    for (const at::Tensor& t : v.toTensorVector()) list.push_back(t.defined() ? f(t) : t);
    return c10::List<at::Tensor>(list);
  }
  if (v.isOptionalTensorList()) {
    std::vector<std::optional<at::Tensor>> list;
    for (const auto& t : v.toOptionalTensorVector())
      list.emplace_back(t.has_value() && t->defined() ? std::optional<at::Tensor>(f(*t)) : t);
    return c10::List<std::optional<at::Tensor>>(list);
  }
  return v;
}

c10::DeviceIndex resolve_index(c10::Device device) {
  if (device.has_index()) return device.index();
  return c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).getDevice().index();
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A CPU generator for one fallback call, seeded from the opencl generator's seed and
// offset; the opencl generator's offset advances, so the next call draws other numbers
// and the same seed replays the same sequence.
at::Generator cpu_generator_from(at::Generator opencl_gen, uint64_t increment) {
  auto* impl = at::check_generator<OpenCLGeneratorImpl>(opencl_gen);
  uint64_t seed = 0, offset = 0;
  {
    std::lock_guard<std::mutex> lock(opencl_gen.mutex());
    seed = impl->current_seed();
    offset = impl->advance(increment);
  }
  return at::detail::createCPUGenerator(splitmix64(seed ^ splitmix64(offset)));
}

[[noreturn]] void two_devices(c10::Device a, c10::Device b) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", a, " and ",
              b, "!");
}

// The layouts among a call's tensors pick the CPU kernel the fallback runs: a sparse COO tensor
// anywhere makes it SparseCPU's, a compressed one (CSR, CSC, BSR, BSC) SparseCsrCPU's, as dispatch
// would pick for CPU tensors.
struct Layouts {
  bool coo = false;
  bool compressed = false;
  std::set<std::string> names;  // the sparse layouts seen, for messages

  bool any_sparse() const { return coo || compressed; }
  c10::DispatchKey cpu_key() const {
    if (compressed) return c10::DispatchKey::SparseCsrCPU;
    if (coo) return c10::DispatchKey::SparseCPU;
    return c10::DispatchKey::CPU;
  }
  std::string describe() const {
    if (names.empty()) return "strided tensors";
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return "tensors of layout " + out;
  }
};

Layouts layouts_of(c10::ArrayRef<c10::IValue> arguments) {
  Layouts l;
  for (const auto& v : arguments) {
    for_each_tensor(v, [&](const at::Tensor& t, bool) {
      const at::Layout layout = t.layout();
      if (layout == at::kStrided) return;
      if (layout == at::kSparse) l.coo = true;
      else if (at::sparse_csr::is_sparse_compressed(layout)) l.compressed = true;
      switch (layout) {
        case at::kSparse: l.names.insert("torch.sparse_coo"); break;
        case at::kSparseCsr: l.names.insert("torch.sparse_csr"); break;
        case at::kSparseCsc: l.names.insert("torch.sparse_csc"); break;
        case at::kSparseBsr: l.names.insert("torch.sparse_bsr"); break;
        case at::kSparseBsc: l.names.insert("torch.sparse_bsc"); break;
        default: {
          std::ostringstream name;
          name << layout;
          l.names.insert(name.str());
        }
      }
    });
  }
  return l;
}

// What one call looks like: the opencl device its tensors are on, the device its
// results go to, and whether any tensor needs copying.
struct CallDevices {
  std::optional<c10::Device> tensor_device;  // the opencl device of the tensor arguments
  std::optional<c10::Device> device_arg;     // an explicit `Device? device` argument
  std::optional<c10::Device> target() const { return device_arg ? device_arg : tensor_device; }
};

CallDevices check_devices(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> arguments) {
  CallDevices d;
  std::optional<c10::Device> stray;  // a CPU (or other) tensor that may not mix with opencl ones
  std::vector<at::Tensor> written;   // in-place and out= tensors: on the opencl device, CPU scalars too
  const auto& schema_args = op.schema().arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto& v = arguments[i];
    if (is_write(schema_args[i])) for_each_tensor(v, [&](const at::Tensor& t, bool) { written.push_back(t); });
    if (v.isDevice()) {
      d.device_arg = v.toDevice();
      continue;
    }
    for_each_tensor(v, [&](const at::Tensor& t, bool in_optional_list) {
      const c10::Device dev = t.device();
      if (dev.type() == c10::DeviceType::PrivateUse1) {
        if (!d.tensor_device) d.tensor_device = dev;
        else if (*d.tensor_device != dev) two_devices(*d.tensor_device, dev);
      } else if (dev.is_cpu()) {
        // CPU 0-dim tensors mix with device tensors (as CUDA takes CPU scalars), and
        // indexing takes CPU index tensors (Tensor?[] appears only in indexing ops).
        if (t.dim() != 0 && !in_optional_list && !stray) stray = dev;
      } else {
        TORCH_CHECK(false, "The opencl CPU fallback for '", operator_name(op), "' got a tensor on ", dev,
                    "; only opencl and CPU tensors can be used with opencl tensors.");
      }
    });
  }
  if (stray && d.tensor_device) two_devices(*d.tensor_device, *stray);
  if (d.tensor_device) {
    const std::string name = operator_name(op);
    for (const at::Tensor& t : written) check_out_device(t, *d.tensor_device, name.c_str());
  }
  return d;
}

// Copies of `tensors` on `device` that keep their layouts: each storage's bytes that the tensors
// span travel once, and every copy is a view with the original's sizes, strides and place in
// them. So a kernel on the other side sees what it would see here (a transposed or sliced input
// is not made contiguous, which changes what some CPU kernels return, as linalg_det's LU), and
// results come back with the strides CPU gave them. Keyed by TensorImpl.
std::unordered_map<c10::TensorImpl*, at::Tensor> mirror_tensors(const std::vector<at::Tensor>& tensors,
                                                                at::Device device) {
  constexpr int64_t kAlign = 16;  // the largest element size: every tensor's offset stays whole
  struct Span {
    int64_t begin = INT64_MAX, end = 0;  // bytes of the storage
    at::Tensor copy;                     // those bytes on `device`, from begin rounded down
  };
  auto byte_span = [](const at::Tensor& t) {
    int64_t last = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const int64_t itemsize = static_cast<int64_t>(t.element_size());
    return std::make_pair(t.storage_offset() * itemsize, (last + 1) * itemsize);
  };
  std::unordered_map<c10::StorageImpl*, Span> spans;
  for (const at::Tensor& t : tensors) {
    if (t.numel() == 0 || t.layout() != at::kStrided || !t.has_storage()) continue;
    Span& s = spans[t.storage().unsafeGetStorageImpl()];
    const auto [begin, end] = byte_span(t);
    s.begin = std::min(s.begin, begin / kAlign * kAlign);
    s.end = std::max(s.end, end);
  }
  std::unordered_map<c10::TensorImpl*, at::Tensor> out;
  for (const at::Tensor& t : tensors) {
    if (out.count(t.unsafeGetTensorImpl())) continue;
    const auto options = t.options().device(device);
    if (t.layout() != at::kStrided || !t.has_storage()) {  // sparse results: no strides to keep
      out.emplace(t.unsafeGetTensorImpl(), t.to(device));
      continue;
    }
    if (t.numel() == 0) {
      out.emplace(t.unsafeGetTensorImpl(), at::empty_strided(t.sizes(), t.strides(), options));
      continue;
    }
    Span& s = spans.at(t.storage().unsafeGetStorageImpl());
    if (!s.copy.defined()) {
      const at::Tensor bytes = at::empty({0}, t.options().dtype(at::kByte))
                                   .set_(t.storage(), s.begin, {s.end - s.begin}, {1});
      s.copy = bytes.to(device);
    }
    const int64_t itemsize = static_cast<int64_t>(t.element_size());
    const int64_t offset = (t.storage_offset() * itemsize - s.begin) / itemsize;
    at::Tensor mirror = at::empty({0}, options).set_(s.copy.storage(), offset, t.sizes(), t.strides());
    mirror._set_conj(t.is_conj());  // the lazy conjugate and negative bits travel with the view
    mirror._set_neg(t.is_neg());
    out.emplace(t.unsafeGetTensorImpl(), std::move(mirror));
  }
  return out;
}

// Views: the operator's geometry comes from its Meta kernel run on meta tensors that
// mirror the inputs (same sizes, strides, storage offset and storage size), and the
// result is as_strided of the original opencl input: a real view, never a copy.
void view_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack, const std::string& name) {
  const auto& schema = op.schema();
  const auto num_arguments = schema.arguments().size();
  const auto arguments_begin = stack->size() - num_arguments;

  std::vector<at::Tensor> originals;  // index: position in `metas`
  std::vector<at::Tensor> metas;
  auto to_meta = [&](const at::Tensor& t) {
    const int64_t itemsize = static_cast<int64_t>(t.element_size());
    const int64_t storage_elements =
        t.has_storage() ? static_cast<int64_t>((t.storage().nbytes() + itemsize - 1) / itemsize) : t.numel();
    auto base = at::empty({storage_elements}, t.options().device(c10::kMeta));
    auto meta = base.as_strided(t.sizes(), t.strides(), t.storage_offset());
    originals.push_back(t);
    metas.push_back(meta);
    return meta;
  };

  torch::jit::Stack meta_stack(stack->begin() + arguments_begin, stack->end());
  for (auto& v : meta_stack) v = map_tensors(v, to_meta);
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "The view operator '", name,
                "' has no opencl kernel, and its Meta kernel, which the fallback uses to make a real view, "
                "failed: ", e.what_without_backtrace(),
                "\nA view cannot fall back to the CPU (the storage cannot be shared across devices); "
                "the operator needs an opencl kernel.");
  }

  auto as_view = [&](const at::Tensor& meta_out) -> at::Tensor {
    if (!meta_out.defined()) return meta_out;
    for (size_t i = 0; i < metas.size(); ++i) {
      if (meta_out.is_alias_of(metas[i])) {
        TORCH_CHECK(meta_out.dtype() == originals[i].dtype(), "The view operator '", name,
                    "' has no opencl kernel, and its result changes the dtype (", originals[i].dtype(), " -> ",
                    meta_out.dtype(), "), which as_strided cannot express; the operator needs an opencl kernel.");
        return at::as_strided(originals[i], meta_out.sizes(), meta_out.strides(), meta_out.storage_offset());
      }
    }
    TORCH_CHECK(false, "The view operator '", name,
                "' has no opencl kernel, and its Meta kernel returned a tensor that is not a view of an input, "
                "so the fallback cannot make a real view; the operator needs an opencl kernel.");
  };
  std::vector<c10::IValue> results;
  for (auto& v : meta_stack) results.push_back(map_tensors(v, as_view));
  torch::jit::drop(stack, num_arguments);
  for (auto& r : results) stack->push_back(std::move(r));
}

void opencl_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const auto& schema_args = schema.arguments();
  const auto& schema_returns = schema.returns();
  const auto num_arguments = schema_args.size();
  const auto arguments_begin = stack->size() - num_arguments;
  const std::string name = operator_name(op);

  const CallDevices devices = check_devices(op, torch::jit::last(stack, num_arguments));
  const bool on_opencl = devices.target() && devices.target()->type() == c10::DeviceType::PrivateUse1;

  const Layouts layouts = layouts_of(torch::jit::last(stack, num_arguments));
  const c10::DispatchKey cpu_key = layouts.cpu_key();
  // A "view" of a sparse tensor (permute, unsqueeze, select, ...) is a new sparse tensor on CPU
  // too, sharing no storage with its input: it runs on the CPU like any other operator.
  const bool is_view = !layouts.any_sparse() &&
                       std::any_of(schema_returns.begin(), schema_returns.end(), is_view_return);
  TORCH_CHECK(is_view || op.hasComputedKernelForDispatchKey(cpu_key), "The operator '", name,
              "' has no opencl kernel, and no CPU kernel for the fallback to run either (", layouts.describe(),
              "); it is not available on opencl tensors",
              layouts.any_sparse() ? " of that layout, as on the CPU. Convert first: to_dense(), or to_sparse() / "
                                     "to_sparse_csr() for a layout the operator supports."
                                   : ".");

  record_fallback_call(name);

  if (is_view) {
    view_fallback(op, stack, name);
    return;
  }

  // Step 1: copy the opencl tensors to the CPU with their layouts: each storage once, and
  // every tensor a CPU view with its sizes, strides and place in that storage (an argument
  // passed twice, as in `torch.add(a, b, out=a)`, and overlapping views stay so there).
  int64_t largest = 0;
  std::vector<at::Tensor> device_tensors;
  for (size_t i = 0; i < num_arguments; ++i) {
    for_each_tensor((*stack)[arguments_begin + i], [&](const at::Tensor& t, bool) {
      largest = std::max<int64_t>(largest, t.numel());
      if (is_opencl(t)) device_tensors.push_back(t);
    });
  }
  const auto cpu_tensors = mirror_tensors(device_tensors, at::Device(at::kCPU));
  auto cpu_of = [&](const at::Tensor& t) -> at::Tensor {
    if (!is_opencl(t)) return t;
    return cpu_tensors.at(t.unsafeGetTensorImpl());
  };

  // Step 2: put CPU tensors, CPU devices and CPU generators on the stack.
  std::vector<c10::IValue> original_args(stack->begin() + arguments_begin, stack->end());
  const uint64_t increment = static_cast<uint64_t>((std::max<int64_t>(largest, 1) + 3) / 4 * 4);
  for (size_t i = 0; i < num_arguments; ++i) {
    auto& v = (*stack)[arguments_begin + i];
    if (v.isTensor() || v.isTensorList() || v.isOptionalTensorList()) {
      v = map_tensors(v, cpu_of);
    } else if (v.isDevice()) {
      v = c10::Device(c10::kCPU);
    } else if (is_generator_arg(schema_args[i])) {
      if (v.isGenerator()) {
        const at::Generator gen = v.toGenerator();
        const auto gen_type = gen.device().type();
        if (gen_type == c10::DeviceType::PrivateUse1) {
          TORCH_CHECK(on_opencl, "Expected a 'cpu' device type for generator but found '", gen.device().type(),
                      "' (operator '", name, "')");
          v = cpu_generator_from(gen, increment);
        } else {
          TORCH_CHECK(!on_opencl, "Expected a '", devices.target()->type(), "' device type for generator but found '",
                      gen_type, "' (operator '", name, "')");
        }
      } else if (v.isNone() && on_opencl) {
        v = cpu_generator_from(default_generator(resolve_index(*devices.target())), increment);
      }
    }
  }

  // Step 3: the CPU kernel.
  try {
    op.redispatchBoxed(c10::DispatchKeySet(cpu_key), stack);
  } catch (c10::Error& e) {
    // A sparse layout the CPU kernel refuses (BSR where it takes CSR, say): its error names the
    // layout; the context says where it came from and what works.
    if (layouts.any_sparse())
      e.add_context("(raised by CPU's '" + name + "', which the opencl fallback ran for " + layouts.describe() +
                    "; CPU PyTorch raises the same. to_dense() gives a tensor every operator takes, and COO and "
                    "CSR tensors support the conversions, coalesce, sparse @ dense, add, mul and sum.)");
    throw;
  }

  // Step 4: write mutated opencl inputs back (in-place and out= arguments), resizing
  // out= tensors the CPU kernel resized.
  std::unordered_set<c10::TensorImpl*> written;
  for (size_t i = 0; i < num_arguments; ++i) {
    if (!is_write(schema_args[i])) continue;
    for_each_tensor(original_args[i], [&](const at::Tensor& t, bool) {
      if (!is_opencl(t) || !written.insert(t.unsafeGetTensorImpl()).second) return;
      const at::Tensor& cpu = cpu_of(t);
      if (t.layout() != at::kStrided) {  // sparse: copy_ takes the CPU result's indices, values and sizes
        if (t.layout() != at::kSparse) at::resize_as_sparse_(t, cpu);
        t.copy_(cpu);
        return;
      }
      if (cpu.sizes() != t.sizes()) t.resize_(cpu.sizes());
      // An out= tensor the CPU kernel restrided (a memory format) takes the CPU's strides.
      if (cpu.strides() != t.strides() && cpu.is_non_overlapping_and_dense())
        t.as_strided_(cpu.sizes(), cpu.strides());
      t.copy_(cpu);
    });
  }

  // Step 5: results. A mutable alias returns the original input; anything else is
  // copied to the target device (the opencl device, or an explicit device argument).
  const auto num_returns = schema_returns.size();
  const auto returns_begin = stack->size() - num_returns;
  const auto target = devices.target();
  for (size_t r = 0; r < num_returns; ++r) {
    auto& v = (*stack)[returns_begin + r];
    const c10::AliasInfo* alias = schema_returns[r].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      bool found = false;
      for (size_t i = 0; i < num_arguments && !found; ++i) {
        const c10::AliasInfo* in = schema_args[i].alias_info();
        if (in != nullptr && *in == *alias) {
          v = original_args[i];
          found = true;
        }
      }
      TORCH_CHECK(found, "The operator '", name, "' returns a mutable alias (", schema_returns[r],
                  ") that matches none of its arguments; the opencl CPU fallback cannot return it.");
    }
  }
  // The other results go to the target device with CPU's layouts (strides, overlap, and
  // storage shared between results).
  if (!target || target->is_cpu()) return;
  std::vector<at::Tensor> results;
  for (size_t r = 0; r < num_returns; ++r) {
    const c10::AliasInfo* alias = schema_returns[r].alias_info();
    if (alias != nullptr && alias->isWrite()) continue;
    for_each_tensor((*stack)[returns_begin + r], [&](const at::Tensor& t, bool) { results.push_back(t); });
  }
  const auto device_results = mirror_tensors(results, *target);
  for (size_t r = 0; r < num_returns; ++r) {
    const c10::AliasInfo* alias = schema_returns[r].alias_info();
    if (alias != nullptr && alias->isWrite()) continue;
    auto& v = (*stack)[returns_begin + r];
    v = map_tensors(v, [&](const at::Tensor& t) { return device_results.at(t.unsafeGetTensorImpl()); });
  }
}

}  // namespace

void record_fallback_call(const std::string& name) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Mode mode = s.current_mode();
  const std::string why = tls_reason.empty() ? std::string("has no opencl kernel")
                                             : "has no opencl kernel for these arguments (" + tls_reason + ")";
  TORCH_CHECK(mode != Mode::kError, "The operator '", name, "' ", why,
              ", and TORCH_OPENCL_FALLBACK=error forbids running it on the CPU. "
              "Unset TORCH_OPENCL_FALLBACK (or set it to 'warn' or 'silent') to allow the CPU fallback.");
  s.counts[name]++;
  if (mode == Mode::kWarn && s.warned.insert(name).second)
    TORCH_WARN("The operator '", name, "' ", why, "; it runs on the CPU with copies to and from the device. "
               "torch.opencl.fallback_stats() counts these; TORCH_OPENCL_FALLBACK=silent hides this warning.");
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { opencl_cpu_fallback(op, stack); }

FallbackReason::FallbackReason(std::string reason) : previous_(std::exchange(tls_reason, std::move(reason))) {}

FallbackReason::~FallbackReason() { tls_reason = std::move(previous_); }

std::map<std::string, int64_t> fallback_stats() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.counts;
}

void reset_fallback_stats() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.counts.clear();
}

std::string fallback_mode_name() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  switch (s.current_mode()) {
    case Mode::kWarn: return "warn";
    case Mode::kSilent: return "silent";
    case Mode::kError: return "error";
  }
  return "warn";
}

void set_fallback_mode(const std::string& mode) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.mode = parse_mode(mode);
  s.mode_read = true;
  s.warned.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&opencl_cpu_fallback>());
}

// Sparse tensors take the same path: the CPU kernel runs on CPU copies of them (indices and values
// carried over) and sparse results come back through their indices and values.
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&opencl_cpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&opencl_cpu_fallback>());
}

}  // namespace torch_opencl
