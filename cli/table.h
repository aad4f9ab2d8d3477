#pragma once
/// Column-aligned text tables for the human output of every command.
#include <string>
#include <vector>

namespace mpsim::cli {

/// A fraction as a percentage with one decimal: 0.123 -> "12.3%".
[[nodiscard]] std::string percent(double fraction);
/// Seconds in the unit that reads best: 0.0123 -> "12.3 ms".
[[nodiscard]] std::string seconds(double s);

class Table {
 public:
  /// The first row added is the header; columns are left-aligned, numbers right-aligned.
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace mpsim::cli
