#pragma once
// The pinned host allocator as a c10::Allocator: what tensor.pin_memory(),
// DataLoader(pin_memory=True) and non_blocking copies to CPU use for opencl.
#include <c10/core/Allocator.h>

namespace torch_opencl {

c10::Allocator* host_allocator();

}  // namespace torch_opencl
