#pragma once
// OpenCL C sources from kernels_cl/, embedded at build time (cmake/embed_kernels.cmake).
#include <string>
#include <unordered_map>

namespace tocl {

// File name (e.g. "copy.cl") -> source text, each `#include "other.cl"` line replaced by that
// file's text (programs are built from strings, so the OpenCL compiler cannot open them).
const std::unordered_map<std::string, std::string>& embedded_sources();

// For the generated embedded_sources(): the sources with their #include lines expanded.
std::unordered_map<std::string, std::string> expand_includes(std::unordered_map<std::string, std::string> raw);

}  // namespace tocl
