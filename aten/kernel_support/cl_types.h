#pragma once
// How each ATen dtype is stored and computed in OpenCL C: the text that
// generated programs start with.
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace torch_opencl {

// True if tensors of this dtype can be computed on `device`
// (float64 needs cl_khr_fp64; complex and the barebones unsigned types are not supported).
bool device_supports(c10::ScalarType type, int device);

// Raises a clear error when the device cannot compute with `type`.
void check_device_supports(c10::ScalarType type, int device, const char* op);

// The OpenCL C type that stores one element ("float", "half", "ushort" for bfloat16, "uchar" for bool).
const char* storage_type(c10::ScalarType type);

// The type math is done in: float for half and bfloat16, the storage type otherwise.
c10::ScalarType compute_dtype(c10::ScalarType type);

// float16 and bfloat16: stored as such, computed in float (compute_dtype).
inline bool computed_in_float(c10::ScalarType type) { return compute_dtype(type) != type; }

// Defines PREFIX_T (storage type), PREFIX_CT (compute type), LOAD_PREFIX(p, i) (to the compute type) and
// STORE_PREFIX(p, i, v) (converting v to the storage type) for one operand.
std::string operand_defines(const std::string& prefix, c10::ScalarType type);

// CPU's check that a scalar fits a dtype (Scalar::to: "value cannot be converted to type uint8_t without
// overflow" for 300, c10::Half for 70000), as its kernels make it for fill values and scalar arguments.
void check_scalar_fits(const c10::Scalar& value, c10::ScalarType type);

// v cast to a floating dtype without a check, as a double: beyond the dtype's range it is inf, and half and
// bfloat16 round to their precision (TensorIterator's conversion of an operand; nan_to_num's replacements).
double cast_to_dtype(double v, c10::ScalarType type);

// The prelude (kernels_cl/prelude.cl plus fp64 where needed) for a program over these dtypes.
std::string program_prelude(std::initializer_list<c10::ScalarType> types);

}  // namespace torch_opencl
