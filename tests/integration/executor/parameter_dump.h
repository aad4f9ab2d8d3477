#pragma once
/// Reading what `mpsim execute --dump-parameters FILE` writes: one line per parameter tensor,
/// `layer<TAB>name<TAB>rows<TAB>cols<TAB>values...` (docs/executor.md).
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mpsim::testing {

/// One dumped tensor, row-major.
struct DumpedTensor {
  int rows = 0;
  int cols = 0;
  std::vector<double> values;
};

/// Every tensor of the dump by its name; lines of another shape are skipped.
inline std::map<std::string, DumpedTensor> read_parameter_dump(const std::filesystem::path& file) {
  std::map<std::string, DumpedTensor> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, '\t')) fields.push_back(f);
    if (fields.size() != 5) continue;
    DumpedTensor d{std::stoi(fields[2]), std::stoi(fields[3]), {}};
    std::stringstream vs(fields[4]);
    double v = 0;
    while (vs >> v) d.values.push_back(v);
    out[fields[1]] = std::move(d);
  }
  return out;
}

}  // namespace mpsim::testing
