#include "runtime/embedded_sources.h"

#include <stdexcept>

namespace tocl {
namespace {

std::string expanded(const std::unordered_map<std::string, std::string>& raw, const std::string& text, int depth) {
  if (depth > 8) throw std::runtime_error("torch_opencl: #include nesting too deep in the embedded OpenCL sources");
  static const std::string directive = "#include \"";
  std::string out;
  size_t pos = 0;
  for (size_t at = text.find(directive); at != std::string::npos; at = text.find(directive, pos)) {
    const size_t name_begin = at + directive.size();
    const size_t name_end = text.find('"', name_begin);
    const auto it = raw.find(text.substr(name_begin, name_end - name_begin));
    if (name_end == std::string::npos || it == raw.end() || (at > 0 && text[at - 1] != '\n')) {
      out += text.substr(pos, name_begin - pos);  // not one of ours: left to the compiler
      pos = name_begin;
      continue;
    }
    out += text.substr(pos, at - pos) + expanded(raw, it->second, depth + 1);
    const size_t line_end = text.find('\n', name_end);
    pos = line_end == std::string::npos ? text.size() : line_end;
  }
  return out + text.substr(pos);
}

}  // namespace

std::unordered_map<std::string, std::string> expand_includes(std::unordered_map<std::string, std::string> raw) {
  std::unordered_map<std::string, std::string> out;
  for (const auto& [name, text] : raw) out[name] = expanded(raw, text, 0);
  return out;
}

}  // namespace tocl
