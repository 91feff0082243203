#pragma once
// The kernels of a user's (or a code generator's) OpenCL C source, read from their signatures, and
// the source rewritten so that each global or constant pointer parameter takes a buffer and a byte
// offset. Device memory is (cl_mem, byte offset) (runtime/allocator.h), so a tensor's first element,
// storage offset included, sits at any byte of its buffer. Sub-buffers would need the offset to be a
// multiple of the device's base address alignment (128 bytes and more), which views do not keep; the
// rewrite has no such limit and costs one addition per pointer.
//
//   __kernel void f(__global const float* x, int n)   {
// becomes
//   __kernel void f(__global char* x_tocl_buf, ulong x_tocl_off, int n)   {__global const float* x = ...;
//
// Newlines are kept where they were, so the driver's build log points at the author's lines.
#include <cstddef>
#include <string>
#include <vector>

namespace tocl {

struct KernelParam {
  enum class Kind {
    global_pointer,    // __global T*: a buffer and a byte offset after the rewrite
    constant_pointer,  // __constant T*: the same
    local_pointer,     // __local T*: a size in bytes at launch
    scalar,            // by value: int, float, ...
  };
  Kind kind = Kind::scalar;
  std::string type;   // element type for pointers ("float", "float4", "uchar", "void"); the type of a scalar
  std::string name;
  bool is_const = false;       // a pointer to const: the kernel only reads through it
  bool const_pointer = false;  // `T* const x`: the pointer itself cannot be reassigned
  std::string text;       // the declaration as written, for messages
};

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  int line = 0;  // 1-based line of the kernel's name in the source
};

struct ParsedProgram {
  std::string source;  // rewritten, to be built
  std::vector<KernelSignature> kernels;
};

// Parses and rewrites `source`. Throws tocl::Error naming the kernel, the parameter and its line when
// a signature cannot be read or a parameter's type cannot be passed (images, samplers, bool, size_t, ...).
ParsedProgram parse_kernels(const std::string& source);

// Size in bytes and alignment of an OpenCL C scalar or vector type ("float", "uint", "float4",
// "unsigned int"); 0 when the name is not a built-in type (a typedef or struct of the author's).
size_t builtin_type_size(const std::string& type);

}  // namespace tocl
