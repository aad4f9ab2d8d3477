#include "sim/core/input_kind.h"

#include <array>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "sim/core/yaml_field.h"

namespace mpsim {
namespace {

/// Top-level keys only one kind of file has.
constexpr std::array<std::pair<std::string_view, InputKind>, 10> kTellingKeys{{
    {"model", InputKind::Model},
    {"cluster", InputKind::Topology},
    {"node", InputKind::Topology},
    {"node_from", InputKind::Topology},
    {"node_templates", InputKind::Topology},
    {"gpu_kinds", InputKind::Topology},
    {"fabric", InputKind::Topology},
    {"parallelism", InputKind::Plan},
    {"batch", InputKind::Plan},
    {"schedule", InputKind::Plan},
}};

}  // namespace

std::string_view to_string(InputKind kind) noexcept {
  switch (kind) {
    case InputKind::Topology: return "topology";
    case InputKind::Model: return "model";
    case InputKind::Plan: return "plan";
  }
  return "?";
}

std::optional<InputKind> looks_like(const Field& root) {
  if (!root.is_map()) return std::nullopt;
  std::optional<InputKind> kind;
  for (const auto& [key, value] : kTellingKeys) {
    if (!root.has(key)) continue;
    if (kind && *kind != value) return std::nullopt;  // keys of two kinds: an ordinary unknown-field error
    kind = value;
  }
  return kind;
}

void expect_input_kind(const Field& root, InputKind expected) {
  const std::optional<InputKind> kind = looks_like(root);
  if (!kind || *kind == expected) return;
  for (const auto& [key, value] : kTellingKeys) {
    if (value == *kind && root.has(key)) {
      root.fail(fmt::format("this is a {} file (its top-level key '{}'), not a {} file", to_string(*kind), key,
                            to_string(expected)));
    }
  }
}

}  // namespace mpsim
