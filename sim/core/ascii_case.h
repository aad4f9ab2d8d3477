#pragma once
/// Case folding for names compared without case (NCCL's XML attributes, framework and schedule names,
/// tokenizer names): ASCII only, as those names are. Header-only, like utf8.h, for libraries that do not
/// link mpsim::core.
#include <algorithm>
#include <string>
#include <string_view>

namespace mpsim {

[[nodiscard]] inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

}  // namespace mpsim
