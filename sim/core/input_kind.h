#pragma once
/// Which kind of input a YAML document is (a topology, a model, a plan), read from its top-level keys,
/// so that a file given in another's place is named as what it is rather than as an unknown field.
#include <optional>
#include <string_view>

#include "sim/core/yaml_field_fwd.h"

namespace mpsim {

enum class InputKind { Topology, Model, Plan };

/// "topology", "model", "plan".
[[nodiscard]] std::string_view to_string(InputKind kind) noexcept;

/// The kind the root's top-level keys belong to alone: `model` (a model file), `cluster`, `node`,
/// `node_from`, `node_templates`, `gpu_kinds`, `fabric` (a topology), `parallelism`, `batch`, `schedule`
/// (a plan). Nothing when the root is not a mapping, or its keys fit none or several kinds.
[[nodiscard]] std::optional<InputKind> looks_like(const Field& root);

/// Throws at the root when the document looks like another kind than `expected`: "a model file (its
/// top-level key 'model'), not a topology file".
void expect_input_kind(const Field& root, InputKind expected);

}  // namespace mpsim
