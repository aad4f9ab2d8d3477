#include "sim/core/yaml_override.h"

#include <charconv>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "sim/core/input_error.h"

namespace mpsim {

Override parse_override(std::string_view text, std::string_view flag) {
  const auto fail = [&](const std::string& why) -> Override {
    throw InputError({fmt::format("{} {}", flag, text), 0, 0}, "", why);
  };
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return fail("expected TARGET.PATH=VALUE, e.g. plan.microbatches=32");
  const std::string_view key = text.substr(0, eq);
  const auto dot = key.find('.');
  if (dot == std::string_view::npos || dot + 1 == key.size()) return fail("the path needs a field after the target");
  Override o;
  o.target = std::string(key.substr(0, dot));
  o.path = std::string(key.substr(dot + 1));
  o.value = std::string(text.substr(eq + 1));
  o.origin = fmt::format("{} {}", flag, text);
  if (o.target != "topology" && o.target != "model" && o.target != "plan") {
    return fail(fmt::format("unknown target '{}' (topology, model or plan)", o.target));
  }
  if (o.value.empty()) return fail("the value is empty");
  return o;
}

namespace {

struct Step {
  std::string key;  // a mapping key, or empty for an index
  long index = -1;
};

std::vector<Step> split_path(const Override& o) {
  std::vector<Step> steps;
  std::string_view rest = o.path;
  while (!rest.empty()) {
    if (rest.front() == '[') {
      const auto close = rest.find(']');
      long index = -1;
      const auto [ptr, ec] = std::from_chars(rest.data() + 1, rest.data() + (close == std::string_view::npos ? 1 : close), index);
      if (close == std::string_view::npos || ec != std::errc() || index < 0) {
        throw InputError({o.origin, 0, 0}, o.path, "a list index is written [N] with N >= 0");
      }
      (void)ptr;
      steps.push_back({"", index});
      rest.remove_prefix(close + 1);
      if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
      continue;
    }
    const auto end = rest.find_first_of(".[");
    const std::string_view key = rest.substr(0, end);
    if (key.empty()) throw InputError({o.origin, 0, 0}, o.path, "empty field name in the path");
    steps.push_back({std::string(key), -1});
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
  }
  return steps;
}

}  // namespace

void apply_override(YAML::Node root, const Override& o) {
  const auto steps = split_path(o);
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    throw InputError({o.origin, 0, 0}, o.path, fmt::format("the value is not YAML: {}", e.msg));
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const bool last = i + 1 == steps.size();
    if (s.index >= 0) {
      if (!node.IsSequence() || static_cast<std::size_t>(s.index) >= node.size()) {
        throw InputError({o.origin, 0, 0}, o.path, fmt::format("no list element [{}] there", s.index));
      }
      if (last) {
        node[static_cast<std::size_t>(s.index)] = value;
        return;
      }
      node.reset(node[static_cast<std::size_t>(s.index)]);
      continue;
    }
    if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
      throw InputError({o.origin, 0, 0}, o.path, fmt::format("'{}' is inside a value that is not a mapping", s.key));
    }
    if (last) {
      if (value.IsNull()) {
        node.remove(s.key);
      } else {
        node[s.key] = value;
      }
      return;
    }
    YAML::Node child = node[s.key];
    if (!child.IsDefined() || child.IsNull()) {
      node[s.key] = YAML::Node(YAML::NodeType::Map);
      child = node[s.key];
    }
    node.reset(child);
  }
}

}  // namespace mpsim
