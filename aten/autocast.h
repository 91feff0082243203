#pragma once
// torch.autocast("opencl")'s default dtype: float16 where every selected device has cl_khr_fp16,
// bfloat16 otherwise. PyTorch keeps the autocast dtype per thread (its built-in default for
// PrivateUse1 is float16). Choosing needs the devices, and enumerating them at import would break
// fork safety (runtime/fork.h), so:
//   - at load, the importing thread gets bfloat16, which every device runs, provisionally;
//   - when the devices are first selected, that thread gets the default;
//   - torch.opencl.get_amp_supported_dtype() (which torch.autocast calls) gives it to its thread.
// A thread gets the default once, and only while its dtype is still the one it started with (the
// provisional bfloat16 in the importing thread, PyTorch's float16 in others): a dtype the user set
// with torch.set_autocast_dtype stays (one that equals the starting value cannot be told apart).

namespace torch_opencl {

// Applies the default for a device set that has (or lacks) float16 to the calling thread, as above.
void apply_default_autocast_dtype(bool fp16_everywhere);

}  // namespace torch_opencl
