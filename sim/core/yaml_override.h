#pragma once
/// What-if overrides: `--set plan.batch.microbatches=32` changes one field of a loaded YAML document
/// before it is read, so every loader check still applies to the new value.
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;  // <yaml-cpp/yaml.h>, which apply_override's callers include
}  // namespace YAML

namespace mpsim {

struct Override {
  std::string target;  ///< "topology", "model" or "plan"
  std::string path;    ///< dotted, with [i] for list elements: "cluster.inter_node.bandwidth", "layers[2].params"
  std::string value;   ///< YAML text: "100 Gb/s", "32", "[0, 12, 24]"
  std::string origin;  ///< as the user wrote it, for messages: "--set plan.microbatches=32"
};

/// Parses "target.path=value". Throws InputError naming `flag` on a malformed one.
[[nodiscard]] Override parse_override(std::string_view text, std::string_view flag);

/// Sets `path` in `root` to `value` (parsed as YAML), creating mappings on the way; erases the key
/// when `value` is "~" (null). Throws InputError (at `origin`) when the path crosses a scalar or
/// indexes past a list.
void apply_override(YAML::Node root, const Override& override);

}  // namespace mpsim
