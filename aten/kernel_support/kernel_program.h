#pragma once
// Programs of the hand-written kernel files (kernels_cl/softmax.cl, loss.cl, ...):
// one program per (device, file, data dtype, index dtype), whatever the shapes.
// The source is prefixed with T_T/T_CT/LOAD_T/STORE_T for the data dtype, ACC (the
// accumulation type: float for float/half/bfloat16, double for double), ACC_ISNAN(x), ACC_LOWEST (the start of a max) and
// I_T/LOAD_I for the index dtype.
#include <ATen/core/Tensor.h>

#include "runtime/opencl.h"

#include <functional>
#include <initializer_list>
#include <string>

namespace torch_opencl {

// WG in the source is `group` work-items, or the device's row group (row_group(device)) when 0. `defines`
// ("#define NAME value\n" lines) goes before the file, for a constant the device's forms choose.
cl_program dtype_program(int device, const char* file, c10::ScalarType type,
                         c10::ScalarType index_type = c10::ScalarType::Long, size_t group = 0,
                         const std::string& defines = {});

// "#define ROUND_T(x) ...\n" for dtype_program's `defines`: x (an ACC value) rounded to the dtype, as CPU's
// arithmetic in half and bfloat16 rounds every step (bool: nonzero is true); x itself for other dtypes.
std::string round_to_dtype_define(c10::ScalarType type);

// Kernel of that program (per thread, as tocl::get_kernel).
cl_kernel dtype_kernel(const at::Tensor& like, const char* file, const char* name,
                       c10::ScalarType index_type = c10::ScalarType::Long);

// Raises CPU's error when the defined tensors are not all on one device.
void check_same_device(std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors);

// Work-group size of the row-wise kernels (WG in the sources): runtime/kernel_forms.h chooses it
// for the device's kernel class.
size_t row_group(int device);

}  // namespace torch_opencl
