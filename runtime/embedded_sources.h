#pragma once
// OpenCL C sources from kernels_cl/, embedded at build time (cmake/embed_kernels.cmake).
#include <string>
#include <unordered_map>

namespace tocl {

// File name (e.g. "copy.cl") -> source text.
const std::unordered_map<std::string, std::string>& embedded_sources();

}  // namespace tocl
