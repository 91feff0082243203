#pragma once
// Fork safety, as CUDA has it: an OpenCL driver does not survive fork() (PoCL's
// worker threads start when the platforms are enumerated, and a child forked
// after that hangs on its first command). Once the platforms were enumerated, a
// forked child is "in bad fork" and any device use raises an error telling the
// user to use the 'spawn' start method instead of hanging. Importing
// torch_opencl enumerates nothing, so forking before first use is fine.

namespace tocl {

// Called before the platforms are first enumerated (installs the fork handler).
void mark_initialized();

// True once this process enumerated the platforms (torch.opencl.is_initialized()).
bool initialized();

// True in a child forked after the parent had created an OpenCL context.
bool in_bad_fork();

// Throws the "cannot re-initialize" error in a bad fork; no-op otherwise.
void check_not_in_bad_fork();

}  // namespace tocl
