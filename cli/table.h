#pragma once
/// Column-aligned text tables for the human output of every command.
#include <string>
#include <vector>

namespace mpsim::cli {

class Table {
 public:
  /// The first row added is the header; columns are left-aligned, numbers right-aligned.
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace mpsim::cli
