// Bindings of aten/user_kernel.h: the program and launch behind torch.opencl.compile_shader
// (python/torch_opencl/shader.py) and behind the kernels torch.compile generates.
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

#include "aten/native/index_bounds.h"
#include "aten/user_kernel.h"

namespace py = pybind11;

namespace torch_opencl {
namespace {

// The integer value of an object with __index__ (int, numpy integers, 0-d integer tensors).
long long index_value(py::handle obj) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  TORCH_CHECK_VALUE(!overflow, py::str(obj).cast<std::string>(), " does not fit in 64 bits");
  return v;
}

KernelArgument to_argument(py::handle obj, size_t position) {
  if (THPVariable_Check(obj.ptr())) return THPVariable_Unpack(obj.ptr());
  if (py::isinstance<py::bool_>(obj)) return static_cast<int64_t>(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) return static_cast<int64_t>(index_value(obj));
  if (py::isinstance<py::float_>(obj)) return obj.cast<double>();
  if (py::isinstance<LocalMemory>(obj)) return obj.cast<LocalMemory>();
  // numpy and torch scalars, SymInts that are known by now
  if (PyIndex_Check(obj.ptr())) return static_cast<int64_t>(index_value(obj));
  if (py::hasattr(obj, "__float__")) {
    const double v = PyFloat_AsDouble(obj.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return v;
  }
  TORCH_CHECK_TYPE(false, "argument ", position, ": kernels take tensors, ints, floats and LocalMemory; got ",
                   py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>());
}

std::vector<size_t> to_sizes(py::handle obj, const char* what) {
  std::vector<size_t> out;
  if (obj.is_none()) return out;
  auto one = [&](py::handle v) {
    TORCH_CHECK_TYPE(PyIndex_Check(v.ptr()), what, " takes ints, got ",
                     py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>());
    const long long n = index_value(v);
    TORCH_CHECK_VALUE(n >= 0, what, " must not be negative, got ", n);
    out.push_back(static_cast<size_t>(n));
  };
  if (PyIndex_Check(obj.ptr())) {
    one(obj);
  } else {
    for (auto v : py::iter(obj)) one(v);
  }
  return out;
}

}  // namespace

void bind_user_kernels(py::module& m) {
  py::class_<LocalMemory>(m, "LocalMemory",
                          "Local (work-group) memory for a kernel's `__local T*` parameter, nbytes in size.")
      .def(py::init([](size_t nbytes) { return LocalMemory{nbytes}; }), py::arg("nbytes"))
      .def_property_readonly("nbytes", [](const LocalMemory& l) { return l.bytes; })
      .def("__repr__", [](const LocalMemory& l) { return "LocalMemory(" + std::to_string(l.bytes) + ")"; });

  py::class_<UserProgram, std::shared_ptr<UserProgram>>(m, "_UserProgram")
      .def(py::init<const std::string&, std::string>(), py::arg("source"), py::arg("options") = "")
      .def("kernel_names",
           [](const UserProgram& p) {
             std::vector<std::string> names;
             for (const auto& k : p.kernels()) names.push_back(k.name);
             return names;
           })
      .def("kernel_index", &UserProgram::kernel_index)
      .def("parameters",
           [](const UserProgram& p, size_t index) {
             std::vector<std::string> out;
             for (const auto& param : p.kernels().at(index).params) out.push_back(param.text);
             return out;
           })
      .def("build", [](UserProgram& p, int device) { p.program(device); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("built_source", &UserProgram::built_source)
      .def(
          "launch",
          [](UserProgram& p, size_t index, py::sequence args, py::handle threads, py::handle group_size,
             bool require_contiguous) {
            std::vector<KernelArgument> converted;
            converted.reserve(args.size());
            size_t position = 0;
            for (auto a : args) converted.push_back(to_argument(a, position++));
            LaunchSizes sizes{to_sizes(threads, "threads"), to_sizes(group_size, "group_size")};
            p.launch(index, converted, sizes, require_contiguous);
          },
          py::arg("index"), py::arg("args"), py::arg("threads"), py::arg("group_size") = py::none(),
          py::arg("require_contiguous") = true);
  // A compiled graph's index-error buffer, armed for the next wait (aten/native/index_bounds.h).
  m.def("_arm_compiled_graph_errors", &arm_compiled_graph_errors);
}

}  // namespace torch_opencl
