// A runs file as `mpsim calibrate` reads it: YAML (a list, or `rows:` holding one), then each row's
// topology by name among the shipped ones with its `topology_set` overrides, scaled to its GPUs, its
// model and plan (files in the source tree or inline) resolved on that cluster, and its measured figure.
#include <string>

#include <yaml-cpp/yaml.h>

#include "sim/calibration/measured_run.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

/// More rows than this are left unread: each row loads its topology file twice and builds its own
/// cluster (up to 50 ms a row in the fuzz build), so many rows would find the 1 s limit rather than a
/// bug, and every row goes through the same reader.
constexpr std::size_t kMaxFuzzRows = 4;

/// Whether `node` is a scalar that yaml-cpp may read as an integer above kMaxFuzzNodes (0x300, 0600).
bool large_count(const YAML::Node& node) {
  if (!node || !node.IsScalar()) return false;
  try {
    return node.as<double>() > static_cast<double>(mpsim::fuzz::kMaxFuzzNodes);
  } catch (const YAML::Exception&) {
  }
  try {
    return node.as<long long>() > mpsim::fuzz::kMaxFuzzNodes;
  } catch (const YAML::Exception&) {
    return false;
  }
}

/// Whether the runs would build clusters larger than the harnesses build (kMaxFuzzNodes): a row's
/// `gpus`, or any `topology_set` value (a node's GPU or NIC count), above it; or too many rows.
bool too_large(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return false;  // the reader reports the syntax error
  }
  // Looked up through a const node: a missing key gives an undefined node rather than adding one.
  const YAML::Node& document = root;
  const YAML::Node rows = document.IsMap() ? document["rows"] : document;
  if (!rows || !rows.IsSequence()) return false;
  if (rows.size() > kMaxFuzzRows) return true;
  for (const YAML::Node& row : rows) {
    if (!row.IsMap()) continue;
    if (large_count(row["gpus"])) return true;
    const YAML::Node sets = row["topology_set"];
    if (!sets || !sets.IsMap()) continue;
    for (const auto& entry : sets) {
      if (large_count(entry.second)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const mpsim::calibration::RunPaths paths{mpsim::fuzz::source_path(""),
                                                 {mpsim::fuzz::source_path("topologies")}};
  const std::string text(mpsim::fuzz::text_of(data, size));
  if (too_large(text)) return 0;
  mpsim::fuzz::expect_only<mpsim::InputError>([&] { (void)mpsim::calibration::parse_measured_runs(text, "fuzz.yaml", paths); });
  return 0;
}
