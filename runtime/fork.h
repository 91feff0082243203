#pragma once
// Fork safety, as CUDA has it: an OpenCL context does not survive fork(). Once a
// context exists, a forked child is "in bad fork" and any device use raises an
// error telling the user to use the 'spawn' start method instead of hanging.

namespace tocl {

// Called when the first context of the process is created (installs the fork handler).
void mark_initialized();

// True in a child forked after the parent had created an OpenCL context.
bool in_bad_fork();

// Throws the "cannot re-initialize" error in a bad fork; no-op otherwise.
void check_not_in_bad_fork();

}  // namespace tocl
