#include "cli/table.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "sim/core/units.h"

namespace mpsim::cli {
namespace {

/// Display width in code points (the tables contain UTF-8 like "µs" and "×").
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

/// A number, optionally followed by a unit after a space or a percent sign ("20.3 s", "9.9%",
/// "70.7 GiB", "-3"): right-aligned. A word that merely starts with a digit ("1f1b") is text.
bool looks_numeric(const std::string& s) {
  std::size_t i = (!s.empty() && s.front() == '-') ? 1 : 0;
  const std::size_t digits_start = i;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) != 0 || s[i] == '.' || s[i] == ',')) ++i;
  if (i == digits_start) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E') && i + 1 < s.size() &&
      (std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0 || s[i + 1] == '-' || s[i + 1] == '+')) {
    i += 2;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
  }
  return i == s.size() || s[i] == ' ' || s[i] == '%' || s[i] == 'x';
}

}  // namespace

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

std::string seconds(double s) { return to_string(TimeNs::seconds(s)); }

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - display_width(row[c]), ' ');
      const bool right = r > 0 && c > 0 && looks_numeric(row[c]);
      line += right ? pad + row[c] : row[c] + pad;
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace mpsim::cli
