// torch_opencl._C: the Python face of the runtime, the allocator and the fallback.
// Loading it loads libtorch_opencl, whose static initialisers register the
// device guard, hooks, allocator, kernels and fallback with the dispatcher.
#include <ATen/core/PhiloxRNGEngine.h>
#include <torch/csrc/Event.h>
#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include "aten/autocast.h"
#include "aten/native/gemm_small.h"
#include "aten/native/gemm_tiled.h"
#include "aten/generator.h"

#include "fallback/fallback.h"
#include "python/torch_opencl/csrc/bindings.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/error.h"
#include "runtime/fork.h"
#include "runtime/gemm_tuning.h"
#include "runtime/item_vectorisation.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/pocl_cache.h"
#include "runtime/program_cache.h"
#include "runtime/stream.h"

#include <CL/cl.h>
#include <limits>
#include <clblast.h>

namespace py = pybind11;

namespace torch_opencl {
void bind_user_kernels(py::module& m);  // user_kernels.cpp
}

namespace {

py::dict device_properties(int index) {
  const auto& d = tocl::device_info(index);
  py::dict p;
  p["name"] = d.name;
  p["vendor"] = d.vendor;
  p["platform"] = d.platform_name;
  p["platform_vendor"] = d.platform_vendor;
  p["platform_version"] = d.platform_version;
  p["driver_version"] = d.driver_version;
  p["device_version"] = d.device_version;
  p["opencl_c_version"] = d.opencl_c_version;
  p["type"] = d.type_name();
  p["total_memory"] = d.global_mem_size;
  p["max_alloc_size"] = d.max_alloc_size;
  p["local_memory"] = d.local_mem_size;
  p["compute_units"] = d.compute_units;
  p["max_clock_mhz"] = d.max_clock_mhz;
  p["max_work_group_size"] = d.max_work_group_size;
  p["max_parameter_size"] = d.max_parameter_size;
  p["fp64"] = d.fp64;
  p["fp16"] = d.fp16;
  p["simd_width"] = d.simd_width;
  p["nv_compute_capability"] = d.nv_compute_capability;
  p["local_memory_dedicated"] = d.local_mem_dedicated;
  const auto& forms = tocl::kernel_forms(index);
  p["kernel_class"] = tocl::kernel_class_name(forms.kernel_class);
  p["kernel_class_reason"] = forms.reason;
  p["deferred_index_checks"] = forms.deferred_index_checks;
  p["own_float_math"] = forms.own_float_math;
  p["tensor_core_gemm"] = forms.tensor_core_gemm;
  p["kernel_fill_min_bytes"] = forms.kernel_fill_min_bytes;
  p["kernel_copy_min_bytes"] = forms.kernel_copy_min_bytes;
  p["row_group"] = forms.row_group;
  p["pointwise_vectors"] = forms.pointwise_vectors;
  p["vectorises_items"] = forms.vectorises_items;
  p["line_lanes"] = forms.line_lanes;
  p["lanes_reason"] = forms.lanes_reason;
  p["cpu_gemm_vector_width"] = forms.cpu_gemm_vector_width;
  p["cpu_gemm_rows"] = forms.cpu_gemm_rows;
  p["cpu_gemm_nt_rows"] = forms.cpu_gemm_nt_rows;
  p["cpu_gemm_nt_cols"] = forms.cpu_gemm_nt_cols;
  p["extensions"] = d.extensions;
  p["platform_index"] = d.platform_index;
  p["index_in_platform"] = d.index_in_platform;
  return p;
}

py::list platforms_list() {
  py::list out;
  for (const auto& p : tocl::platforms()) {
    py::dict entry;
    entry["index"] = p.index;
    entry["name"] = p.name;
    entry["vendor"] = p.vendor;
    entry["version"] = p.version;
    py::list devices;
    for (const auto& d : p.devices) {
      py::dict dev;
      dev["index"] = d.index_in_platform;
      dev["name"] = d.name;
      dev["type"] = d.type_name();
      dev["driver_version"] = d.driver_version;
      devices.append(dev);
    }
    entry["devices"] = devices;
    out.append(entry);
  }
  return out;
}

py::dict allocator_stats(int device) {
  const auto s = tocl::allocator(device).stats();
  py::dict out;
  const char* pools[] = {"all", "small_pool", "large_pool"};
  auto put = [&](const char* name, const tocl::StatArray& a) {
    for (int i = 0; i < 3; ++i) {
      const std::string prefix = std::string(name) + "." + pools[i] + ".";
      out[py::str(prefix + "current")] = a[i].current;
      out[py::str(prefix + "peak")] = a[i].peak;
      out[py::str(prefix + "allocated")] = a[i].allocated;
      out[py::str(prefix + "freed")] = a[i].freed;
    }
  };
  put("allocation", s.allocation);
  put("segment", s.segment);
  put("active", s.active);
  put("inactive_split", s.inactive_split);
  put("allocated_bytes", s.allocated_bytes);
  put("reserved_bytes", s.reserved_bytes);
  put("active_bytes", s.active_bytes);
  put("inactive_split_bytes", s.inactive_split_bytes);
  put("requested_bytes", s.requested_bytes);
  out["num_alloc_retries"] = s.num_alloc_retries;
  out["num_ooms"] = s.num_ooms;
  out["num_device_alloc"] = s.num_device_alloc;
  out["num_device_free"] = s.num_device_free;
  out["cache_hits"] = s.cache_hits;
  out["cache_misses"] = s.cache_misses;
  return out;
}

py::dict program_cache_stats() {
  const auto s = tocl::program_cache_stats();
  py::dict out;
  out["memory_hits"] = s.memory_hits;
  out["disk_loads"] = s.disk_loads;
  out["source_builds"] = s.source_builds;
  out["driver_cache_loads"] = s.driver_cache_loads;
  out["corrupt_files"] = s.corrupt_files;
  out["build_seconds"] = s.build_seconds;
  return out;
}

std::string clblast_version() {
#ifdef TORCH_OPENCL_CLBLAST_VERSION
  return TORCH_OPENCL_CLBLAST_VERSION;
#else
  return "unknown";
#endif
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_opencl native bindings";
  // Runtime errors reach Python as RuntimeError, and out-of-memory as torch.OutOfMemoryError.
  py::register_exception<tocl::Error>(m, "OpenCLError", PyExc_RuntimeError);
  // An index error a kernel recorded, raised at a wait called from here (_synchronize): IndexError, as
  // torch's own bindings raise c10::IndexError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const c10::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    }
  });

  m.def("_device_count", &tocl::device_count);
  m.def("_selection_reason", [] { return tocl::selection().reason; });
  m.def("_platforms", &platforms_list);
  m.def("_describe_platforms", &tocl::describe_platforms);
  m.def("_device_properties", &device_properties);
  m.def("_current_device", &tocl::current_device);
  m.def("_set_device", &tocl::set_current_device);
  m.def("_synchronize", &tocl::synchronize_device, py::call_guard<py::gil_scoped_release>());
  m.def("_current_stream_id", &tocl::current_stream);
  m.def("_set_current_stream", &tocl::set_current_stream);
  m.def("_is_in_bad_fork", &tocl::in_bad_fork);
  m.def("_is_initialized", &tocl::initialized);
  // torch.Event.elapsed_time refuses subclasses (torch.opencl.Event); this takes any torch.Event.
  m.def("_event_elapsed_time", [](py::handle start, py::handle end) {
    TORCH_CHECK_TYPE(THPEvent_Check(start.ptr()) && THPEvent_Check(end.ptr()),
                     "elapsed_time expects two torch.Event objects");
    const auto& a = reinterpret_cast<THPEvent*>(start.ptr())->event;
    const auto& b = reinterpret_cast<THPEvent*>(end.ptr())->event;
    py::gil_scoped_release no_gil;
    return a.elapsedTime(b);
  });

  m.def("_memory_stats", &allocator_stats);
  m.def("_empty_cache", [](int device) { tocl::allocator(device).empty_cache(); });
  m.def("_reset_peak_memory_stats", [](int device) { tocl::allocator(device).reset_peak_stats(); });
  m.def("_reset_accumulated_memory_stats", [](int device) { tocl::allocator(device).reset_accumulated_stats(); });
  m.def("_set_memory_limit", [](int device, uint64_t bytes) { tocl::allocator(device).set_memory_limit(bytes); });
  // The raw helpers release the GIL, so Python threads really race in the allocator.
  m.def("_raw_alloc", [](int device, size_t bytes) {
    return reinterpret_cast<uintptr_t>(tocl::allocator(device).allocate(bytes, tocl::current_stream(device)));
  }, py::call_guard<py::gil_scoped_release>());
  m.def("_raw_free", [](int device, uintptr_t ptr) { tocl::allocator(device).free(reinterpret_cast<void*>(ptr)); },
        py::call_guard<py::gil_scoped_release>());

  m.def("_program_cache_stats", &program_cache_stats);
  m.def("_clear_program_memory_cache", &tocl::clear_memory_cache);
  m.def("_cache_dir", &tocl::cache_dir);
  m.def("_build_program", [](int device, const std::string& source, const std::string& options) {
    tocl::get_program(device, source, options);
  }, py::call_guard<py::gil_scoped_release>());
  // The warnings check (test_kernel_warnings.py) and warmup (python -m torch_opencl warmup).
  m.def("_record_program_sources", &tocl::record_sources);
  m.def("_recorded_program_sources", &tocl::recorded_sources);
  m.def("_compile_log", &tocl::compile_log, py::call_guard<py::gil_scoped_release>());
  m.def("_embedded_sources", [] { return std::map<std::string, std::string>(tocl::embedded_sources().begin(),
                                                                          tocl::embedded_sources().end()); });
  m.def("_set_compile_notice", &tocl::set_compile_notice);
  m.def("_program_cache_location", &tocl::cache_location);
  m.def("_force_binaries_on_disk", &tocl::force_binaries_on_disk);
  // What was done to PoCL's kernel cache before the platform started (runtime/pocl_cache.h).
  m.def("_pocl_cache_report", [] {
    const auto& r = tocl::prepare_pocl_cache();
    py::dict d;
    d["pocl_installed"] = r.pocl_installed;
    d["directory"] = r.directory;
    d["used"] = r.used;
    d["problem"] = r.problem;
    d["checked"] = r.checked;
    d["removed"] = r.removed;
    return d;
  });
  m.def("_error_name", &tocl::error_name);
  m.def("_embedded_source", [](const std::string& name) {
    const auto& sources = tocl::embedded_sources();
    auto it = sources.find(name);
    TORCH_CHECK(it != sources.end(), "No embedded OpenCL source named '", name, "'");
    return it->second;
  });
  m.def("_launch_count", &tocl::launch_count);
  m.def("_record_kernel_names", &tocl::record_kernel_names);
  m.def("_recorded_kernel_names", &tocl::recorded_kernel_names);

  m.def("_clblast_version", &clblast_version);
  // GEMM tuning (python -m torch_opencl.tune).
  m.def("_gemm_tuning_path", &tocl::gemm_tuning_path);
  m.def("_gemm_tuning_source", &tocl::gemm_tuning_source);
  // The product template of torch.compile (python/torch_opencl/_inductor/gemm.py) packs B as eager does.
  m.def("_gemm_packs_b", &torch_opencl::small_gemm_packs_b);
  m.def("_gemm_pack_b", &torch_opencl::small_gemm_pack_b);
  m.def("_small_gemm_limit", [](std::optional<int64_t> limit) {
    const int64_t old = torch_opencl::small_gemm_limit();
    if (limit) torch_opencl::set_small_gemm_limit(*limit);
    return old;
  }, py::arg("limit") = py::none());
  // The tiled GPU GEMM's plan for a product, and a process-wide plan override for tests.
  m.def("_tiled_gemm_plan", [](int device, int64_t m, int64_t n, int64_t k, int64_t batch, bool dbl) {
    const auto p = torch_opencl::plan_tiled_gemm(device, dbl ? at::kDouble : at::kFloat, m, n, k, batch);
    return std::make_tuple(p.rm, p.rn, p.bk, p.splits);
  });
  m.def("_override_tiled_gemm_plan", [](std::optional<std::tuple<int, int, int, int>> plan) {
    if (!plan) return torch_opencl::override_tiled_gemm_plan(std::nullopt);
    const auto [rm, rn, bk, splits] = *plan;
    TORCH_CHECK(rm >= 1 && rm <= 2 && rn >= 1 && rn <= 2 && (bk == 4 || bk == 8 || bk == 16 || bk == 32) &&
                    splits >= 1,
                "a tiled GEMM plan is (rm, rn, bk, splits) with rm, rn in {1, 2}, bk in {4, 8, 16, 32}, splits >= 1");
    torch_opencl::override_tiled_gemm_plan(torch_opencl::TiledGemmPlan{rm, rn, bk, splits});
  });
  m.def("_fit_tiled_gemm_plan", [](std::tuple<int, int, int, int> plan, uint64_t local_bytes, size_t element)
            -> std::optional<std::tuple<int, int, int, int>> {
    const auto [rm, rn, bk, splits] = plan;
    const auto p =
        torch_opencl::fit_local_memory(torch_opencl::TiledGemmPlan{rm, rn, bk, splits}, local_bytes, element);
    if (!p) return std::nullopt;
    return std::make_tuple(p->rm, p->rn, p->bk, p->splits);
  });
  m.def("_set_tiled_gemm_enabled", &torch_opencl::set_tiled_gemm_enabled);
  // Winograd convolution (both classes): whether the device uses it, and its minimum channel count (tests lower it).
  m.def("_winograd_min_channels", [](int device, std::optional<size_t> channels) {
    const auto& forms = tocl::kernel_forms(device);
    const auto old = std::make_pair(forms.conv_winograd, forms.winograd_min_channels);
    if (channels) tocl::set_winograd_min_channels(device, *channels);
    return old;
  }, py::arg("device"), py::arg("channels") = py::none());
  m.def("_gemm_builtin_parameters", &tocl::builtin_gemm_parameters);
  // The measurement an unknown CPU implementation gets (runtime/item_vectorisation.h), made now.
  m.def("_measure_item_vectorisation", [](int device) {
    const auto t = tocl::measure_item_vectorisation(device, tocl::device_info(device));
    return py::dict(py::arg("per_item_us") = t.per_item_us, py::arg("across_items_us") = t.across_items_us,
                    py::arg("across_items") = t.across_items);
  });
  m.def("_gemm_override", [](int device, const std::string& kernel, int bits, const std::map<std::string, size_t>& p) {
    tocl::ensure_gemm_tuning(device);
    tocl::override_gemm_parameters(device, kernel, bits, p);
  });
  // False where torch lacks the PrivateUse1 profiler registry (torch 2.11): torch.profiler then shows
  // operators but not the device's kernels; the legacy profiler still times them.
  m.def("_has_kineto_plugin", [] { return static_cast<bool>(TORCH_OPENCL_KINETO_PLUGIN); });
  // Test support: a stream held until released (a barrier waiting on a user event), so a test can tell
  // which stream work went to whatever the device's speed.
  m.def("_hold_stream", [](int device, int stream) {
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(tocl::context(device), &err);
    TOCL_CHECK(err);
    TOCL_CHECK(clEnqueueBarrierWithWaitList(tocl::queue(device, stream), 1, &gate, nullptr));
    return reinterpret_cast<uintptr_t>(gate);
  });
  m.def("_release_stream_hold", [](uintptr_t handle) {
    cl_event gate = reinterpret_cast<cl_event>(handle);
    TOCL_CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    TOCL_CHECK(clReleaseEvent(gate));
  });
  m.def("_opencl_headers_version", [] { return CL_TARGET_OPENCL_VERSION; });

  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(torch_opencl::default_generator(static_cast<c10::DeviceIndex>(device))));
  });

  // Seeds for a compiled graph's random ops (_inductor/seeds.py), as a CPU tensor: what Inductor's
  // randint(-2^63, 2^63 - 1, [count]) on the device would draw (random_range64: two Philox words a value,
  // the same blocks of the device generator, which advances past them), without a launch.
  m.def("_philox_seeds", [](int device, int64_t count) {
    TORCH_CHECK(count >= 0, "_philox_seeds: count must be >= 0, got ", count);
    auto* impl = at::check_generator<torch_opencl::OpenCLGeneratorImpl>(
        torch_opencl::default_generator(static_cast<c10::DeviceIndex>(device)));
    const uint64_t blocks = (static_cast<uint64_t>(count) + 1) / 2;
    uint64_t seed = 0, offset = 0;
    {
      std::lock_guard<std::mutex> lock(impl->mutex_);
      seed = impl->current_seed();
      offset = impl->advance(4 * blocks);
    }
    auto out = at::empty({count}, at::kLong);
    auto* words = out.data_ptr<int64_t>();
    at::Philox4_32 engine(seed, 0, (offset + 3) / 4);  // block-aligned, as eager's draws
    constexpr uint64_t kRange = std::numeric_limits<uint64_t>::max();  // 2^63 - 1 - (-2^63)
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t lo = engine(), hi = engine();
      const uint64_t draw = lo | (hi << 32);
      words[i] = static_cast<int64_t>(static_cast<uint64_t>(std::numeric_limits<int64_t>::min()) + draw % kRange);
    }
    return out;
  });

  m.def("_fallback_stats", [] { return torch_opencl::fallback_stats(); });
  m.def("_reset_fallback_stats", &torch_opencl::reset_fallback_stats);
  m.def("_fallback_mode", &torch_opencl::fallback_mode_name);
  m.def("_set_fallback_mode", &torch_opencl::set_fallback_mode);

  torch_opencl::bind_user_kernels(m);

  m.def("_autocast_apply_default", &torch_opencl::apply_default_autocast_dtype);

  torch_opencl::bind_distributed(m);
}
