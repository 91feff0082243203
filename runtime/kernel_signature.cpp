#include "runtime/kernel_signature.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "runtime/error.h"

namespace tocl {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source with comments, string and character literals and preprocessor lines turned into spaces
// (newlines kept), so that positions in it are positions in the source and no keyword inside a
// comment or a macro is taken for code.
std::string mask_source(const std::string& s) {
  std::string m = s;
  const size_t n = s.size();
  bool line_start = true;
  for (size_t i = 0; i < n;) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t')) {
      ++i;
      continue;
    }
    if (line_start && c == '#') {  // a directive, with its continuation lines
      while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
          m[i] = ' ';
          i += 2;
          continue;
        }
        m[i++] = ' ';
      }
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') m[i++] = ' ';
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      m[i] = m[i + 1] = ' ';
      i += 2;
      while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
        if (s[i] != '\n') m[i] = ' ';
        ++i;
      }
      if (i < n) m[i] = m[i + 1] = ' ', i += 2;
    } else if (c == '"' || c == '\'') {
      m[i++] = ' ';
      while (i < n && s[i] != c && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n) m[i++] = ' ';
        m[i++] = ' ';
      }
      if (i < n && s[i] == c) m[i++] = ' ';
    } else {
      ++i;
    }
  }
  return m;
}

struct Token {
  std::string text;  // an identifier, or one punctuation character
  size_t pos;
};

std::vector<Token> tokenize(const std::string& m, size_t begin, size_t end) {
  std::vector<Token> out;
  for (size_t i = begin; i < end;) {
    if (std::isspace(static_cast<unsigned char>(m[i]))) {
      ++i;
    } else if (ident_char(m[i])) {
      size_t j = i;
      while (j < end && ident_char(m[j])) ++j;
      out.push_back({m.substr(i, j - i), i});
      i = j;
    } else {
      out.push_back({std::string(1, m[i]), i});
      ++i;
    }
  }
  return out;
}

// Index just past the parenthesis that closes the one at `open`, or npos.
size_t matching_paren(const std::string& m, size_t open) {
  int depth = 0;
  for (size_t i = open; i < m.size(); ++i) {
    if (m[i] == '(') ++depth;
    if (m[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

// Skips `__attribute__((...))` at i (after whitespace); returns the position after it, or i.
size_t skip_attributes(const std::string& m, size_t i) {
  for (;;) {
    size_t j = i;
    while (j < m.size() && std::isspace(static_cast<unsigned char>(m[j]))) ++j;
    if (m.compare(j, 13, "__attribute__") != 0) return i;
    j += 13;
    while (j < m.size() && std::isspace(static_cast<unsigned char>(m[j]))) ++j;
    if (j >= m.size() || m[j] != '(') return i;
    const size_t close = matching_paren(m, j);
    if (close == std::string::npos) return i;
    i = close;
  }
}

int line_of(const std::string& s, size_t pos) {
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

std::string collapse_spaces(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

const std::set<std::string>& qualifiers() {
  static const std::set<std::string> q = {"__global", "global",   "__constant", "constant",   "__local",
                                          "local",    "__private", "private",   "const",      "volatile",
                                          "restrict", "__restrict", "__restrict__", "struct", "union", "enum"};
  return q;
}

// "unsigned int" -> "uint", "signed char" -> "char", others unchanged.
std::string normalize_type(std::vector<std::string> words) {
  bool is_unsigned = false;
  std::vector<std::string> rest;
  for (const auto& w : words) {
    if (w == "unsigned") is_unsigned = true;
    else if (w != "signed") rest.push_back(w);
  }
  std::string base = rest.empty() ? "int" : rest[0];
  for (size_t i = 1; i < rest.size(); ++i) base += " " + rest[i];
  if (base == "long long") base = "long";
  if (is_unsigned) {
    if (base == "char" || base == "short" || base == "int" || base == "long") return "u" + base;
    return "unsigned " + base;
  }
  return base;
}

[[noreturn]] void bad_param(const KernelSignature& k, const std::string& text, int line, const std::string& why) {
  throw Error("kernel '" + k.name + "' (line " + std::to_string(line) + "), parameter '" + collapse_spaces(text) +
              "': " + why);
}

KernelParam parse_param(const KernelSignature& k, const std::string& m, size_t begin, size_t end, int line) {
  const std::string text = m.substr(begin, end - begin);
  const auto tokens = tokenize(m, begin, end);
  KernelParam p;
  p.text = collapse_spaces(text);
  if (tokens.empty() || !ident_char(tokens.back().text[0]))
    bad_param(k, text, line, "cannot read its name (array parameters and unnamed parameters are not supported)");
  p.name = tokens.back().text;
  std::vector<std::string> type_words;
  int stars = 0;
  bool const_before_star = false;
  std::string address_space;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    const auto& t = tokens[i].text;
    if (t == "*") {
      ++stars;
    } else if (t == "__global" || t == "global" || t == "__constant" || t == "constant" || t == "__local" ||
               t == "local" || t == "__private" || t == "private") {
      address_space = t[0] == '_' ? t.substr(2) : t;
    } else if (t == "const") {
      if (stars == 0) const_before_star = true;
      else p.const_pointer = true;
    } else if (qualifiers().count(t)) {
      // volatile, restrict, struct: no effect on how the argument is passed
    } else if (ident_char(t[0])) {
      type_words.push_back(t);
    } else {
      bad_param(k, text, line, "cannot read its type");
    }
  }
  if (type_words.empty()) bad_param(k, text, line, "cannot read its type");
  for (const auto& w : type_words)
    if (w.find("image") == 0 || w == "sampler_t" || w == "pipe" || w == "queue_t" || w == "event_t")
      bad_param(k, text, line, "images, samplers, pipes and queues cannot be passed; pass tensors as __global pointers");
  p.type = normalize_type(type_words);
  p.is_const = const_before_star;
  if (stars > 1) bad_param(k, text, line, "pointers to pointers cannot be passed");
  if (stars == 1) {
    if (address_space == "global") p.kind = KernelParam::Kind::global_pointer;
    else if (address_space == "constant") p.kind = KernelParam::Kind::constant_pointer;
    else if (address_space == "local") p.kind = KernelParam::Kind::local_pointer;
    else bad_param(k, text, line, "a kernel's pointer parameter needs __global, __constant or __local");
    return p;
  }
  if (!address_space.empty() && address_space != "private")
    bad_param(k, text, line, "an address space qualifier needs a pointer");
  static const std::set<std::string> scalars = {"char", "uchar", "short", "ushort", "int",
                                                "uint", "long",  "ulong", "float",  "double"};
  if (!scalars.count(p.type))
    bad_param(k, text, line,
              "only these types pass by value: char, uchar, short, ushort, int, uint, long, ulong, float, double "
              "(OpenCL forbids bool, half, size_t and pointer-sized integers as kernel arguments; pass vectors "
              "and structs through a tensor)");
  p.kind = KernelParam::Kind::scalar;
  return p;
}

}  // namespace

size_t builtin_type_size(const std::string& type) {
  static const std::pair<const char*, size_t> bases[] = {
      {"char", 1}, {"uchar", 1}, {"bool", 1}, {"short", 2}, {"ushort", 2}, {"half", 2}, {"int", 4},
      {"uint", 4}, {"float", 4}, {"long", 8}, {"ulong", 8}, {"double", 8}};
  for (const auto& [name, size] : bases) {
    const size_t len = std::char_traits<char>::length(name);
    if (type.compare(0, len, name) != 0) continue;
    const std::string lanes = type.substr(len);
    if (lanes.empty()) return size;
    if (lanes == "2") return 2 * size;
    if (lanes == "3" || lanes == "4") return 4 * size;
    if (lanes == "8") return 8 * size;
    if (lanes == "16") return 16 * size;
  }
  return 0;
}

ParsedProgram parse_kernels(const std::string& source) {
  const std::string m = mask_source(source);
  ParsedProgram out;
  // Edits to apply, as (position, characters to remove, replacement), applied back to front.
  struct Edit {
    size_t pos, remove;
    std::string insert;
  };
  std::vector<Edit> edits;
  const auto tokens = tokenize(m, 0, m.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].text != "__kernel" && tokens[t].text != "kernel") continue;
    // `__kernel [attributes] void [attributes] name(`
    size_t pos = skip_attributes(m, tokens[t].pos + tokens[t].text.size());
    auto rest = tokenize(m, pos, std::min(m.size(), pos + 4096));
    size_t r = 0;
    if (r >= rest.size() || rest[r].text != "void") continue;  // `kernel` used as an ordinary word
    pos = skip_attributes(m, rest[r].pos + 4);
    rest = tokenize(m, pos, std::min(m.size(), pos + 4096));
    if (rest.size() < 2 || !ident_char(rest[0].text[0]) || rest[1].text != "(")
      throw Error("Cannot read the kernel signature at line " + std::to_string(line_of(source, tokens[t].pos)) +
                  ": expected '__kernel void name(...)'");
    KernelSignature k;
    k.name = rest[0].text;
    k.line = line_of(source, rest[0].pos);
    const size_t open = rest[1].pos;
    const size_t close = matching_paren(m, open);
    if (close == std::string::npos)
      throw Error("kernel '" + k.name + "' (line " + std::to_string(k.line) + "): its parameter list is not closed");
    const size_t body = m.find_first_of("{;", skip_attributes(m, close));
    if (body == std::string::npos || m[body] != '{') continue;  // a declaration without a body
    // Split the parameters at top-level commas.
    std::vector<std::pair<size_t, size_t>> spans;
    size_t start = open + 1;
    int depth = 0;
    for (size_t i = open + 1; i < close - 1; ++i) {
      if (m[i] == '(') ++depth;
      if (m[i] == ')') --depth;
      if (m[i] == ',' && depth == 0) {
        spans.emplace_back(start, i);
        start = i + 1;
      }
    }
    spans.emplace_back(start, close - 1);
    if (spans.size() == 1) {
      const auto only = tokenize(m, spans[0].first, spans[0].second);
      if (only.empty() || (only.size() == 1 && only[0].text == "void")) spans.clear();
    }
    std::string prologue;
    for (const auto& [b, e] : spans) {
      KernelParam p = parse_param(k, m, b, e, line_of(source, b));
      if (p.kind == KernelParam::Kind::global_pointer || p.kind == KernelParam::Kind::constant_pointer) {
        const std::string space = p.kind == KernelParam::Kind::global_pointer ? "__global" : "__constant";
        const std::string off = p.name + "_tocl_off";
        // The pointer's type without its name (the cast), restrict dropped.
        std::string cast = collapse_spaces(m.substr(b, e - b));
        cast = cast.substr(0, cast.rfind(p.name));
        for (const char* word : {"restrict", "__restrict__", "__restrict"}) {
          for (size_t at; (at = cast.find(word)) != std::string::npos;) cast.erase(at, std::strlen(word));
        }
        cast = collapse_spaces(cast);
        const std::string bytes = "(" + space + (p.is_const ? " const" : "") + " char*)";
        if (!p.const_pointer) {
          // The parameter stays (a restrict qualifier keeps its meaning) and moves by the offset.
          edits.push_back({e, 0, ", ulong " + off});
          prologue += p.name + " = (" + cast + ")(" + bytes + p.name + " + " + off + ");";
        } else {
          // `T* const x` cannot move: a buffer parameter and a local of the declared type.
          const std::string buf = p.name + "_tocl_buf";
          prologue += collapse_spaces(m.substr(b, e - b)) + " = (" + cast + ")(" + bytes + buf + " + " + off + ");";
          std::string replacement = space + " char* " + buf + ", ulong " + off;
          replacement += std::string(static_cast<size_t>(std::count(source.begin() + static_cast<std::ptrdiff_t>(b),
                                                                    source.begin() + static_cast<std::ptrdiff_t>(e), '\n')),
                                     '\n');
          edits.push_back({b, e - b, replacement});
        }
      }
      k.params.push_back(std::move(p));
    }
    if (!prologue.empty()) edits.push_back({body + 1, 0, prologue});
    for (const auto& other : out.kernels)
      if (other.name == k.name)
        throw Error("kernel '" + k.name + "' is defined twice (lines " + std::to_string(other.line) + " and " +
                    std::to_string(k.line) + ")");
    out.kernels.push_back(std::move(k));
  }
  std::string rewritten = source;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.pos > b.pos; });
  for (const auto& e : edits) rewritten.replace(e.pos, e.remove, e.insert);
  out.source = std::move(rewritten);
  return out;
}

}  // namespace tocl
