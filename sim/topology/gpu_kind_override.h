#pragma once
/// `--set` of a field of the GPU kind a node names by id: `topology.node.gpu.matmul_efficiency=0.6`
/// where the file says `gpu: h100-sxm`. The kind's entry goes into the file's `gpu_kinds` (a built-in
/// kind copied from the catalog under its own id, so it takes the built-in's place) and the field is set
/// there: every check of a GPU kind applies to the new value, and a field that defaults to the one set
/// (`attention_efficiency` to `matmul_efficiency`) still follows it unless the kind gives its own.
#include <vector>

#include "sim/core/yaml_field_fwd.h"
#include "sim/core/yaml_override.h"

namespace mpsim::topology {

/// The overrides that set what `o` means when its path is `cluster.gpu.FIELD`, `node.gpu.FIELD` or
/// `node_templates.NAME.gpu.FIELD` and that `gpu` of `doc` names a kind by id; nothing otherwise (`o`
/// then applies as it is, to an inline kind say). Throws InputError naming `o` when the kind is neither
/// built in nor declared in `doc` (it is declared in the file that includes this one).
[[nodiscard]] std::vector<Override> gpu_kind_field_overrides(const YamlDocument& doc, const Override& o);

/// Applies `o` to `doc`; a field of a GPU kind named by id goes into the document's copy of that kind
/// (gpu_kind_field_overrides). Returns the override that set the field, by whose path the loader names
/// an error in it (the kind's copy has no line of its own). Throws InputError.
Override apply_topology_override(YamlDocument& doc, const Override& o);

/// Whether `o` sets a field of the node `doc` takes from another file (`node.*` where `doc` has
/// `node_from`): such an override applies to that file's document, through load_topology_spec's
/// `patch_included`.
[[nodiscard]] bool sets_included_node(const YamlDocument& doc, const Override& o);

}  // namespace mpsim::topology
