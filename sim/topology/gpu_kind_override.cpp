#include "sim/topology/gpu_kind_override.h"

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "sim/core/input_error.h"
#include "sim/core/yaml_field.h"
#include "sim/topology/gpu_kind.h"

namespace mpsim::topology {

extern const std::string_view kBuiltinGpuCatalogYaml;  // generated from configs/hardware/gpus.yaml

namespace {

/// A path that names a field of a node's GPU kind: the keys down to the mapping that holds `gpu`, and
/// the field below `gpu`.
struct KindFieldPath {
  std::vector<std::string> holder;
  std::string field;
};

std::optional<KindFieldPath> split_kind_field(std::string_view path) {
  constexpr std::string_view kGpu = ".gpu.";
  const auto at = path.find(kGpu);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view prefix = path.substr(0, at);
  std::string field(path.substr(at + kGpu.size()));
  if (prefix == "cluster" || prefix == "node") return KindFieldPath{{std::string(prefix)}, std::move(field)};
  constexpr std::string_view kTemplates = "node_templates.";
  const std::string_view name = prefix.substr(std::min(prefix.size(), kTemplates.size()));
  if (prefix.starts_with(kTemplates) && !name.empty() && name.find_first_of(".[") == std::string_view::npos) {
    return KindFieldPath{{"node_templates", std::string(name)}, std::move(field)};
  }
  return std::nullopt;
}

/// The catalog's entry for the built-in kind `id` as YAML text, without its aliases (a catalog field).
std::string builtin_entry_yaml(const std::string& id) {
  static const YamlDocument catalog = YamlDocument::parse(std::string(kBuiltinGpuCatalogYaml), "configs/hardware/gpus.yaml");
  YAML::Node entry = YAML::Clone(catalog.root().require("gpu_kinds").require(id).node());
  entry.remove("aliases");
  return YAML::Dump(entry);
}

}  // namespace

std::vector<Override> gpu_kind_field_overrides(const YamlDocument& doc, const Override& o) {
  const auto path = split_kind_field(o.path);
  if (!path) return {};
  std::optional<Field> holder = doc.root();
  for (const std::string& key : path->holder) {
    if (!holder->is_map()) return {};
    const std::optional<Field> child = holder->get(key);
    if (!child) return {};
    holder.emplace(*child);  // not `holder = child`: assigning a YAML node writes into the node it refers to
  }
  if (!holder->is_map()) return {};
  const std::optional<Field> gpu = holder->get("gpu");
  if (!gpu || !gpu->is_scalar()) return {};  // an inline kind takes the override as it is
  const std::string id = gpu->as_string();
  const auto field_of = [&](const std::string& kind) {
    return Override{o.target, fmt::format("gpu_kinds.{}.{}", kind, path->field), o.value, o.origin};
  };
  const std::optional<Field> declared = doc.root().get("gpu_kinds");
  if (declared && declared->is_map() && declared->has(id)) return {field_of(id)};
  const GpuKind* builtin = GpuCatalog::builtin().find(id);
  if (builtin == nullptr) {
    throw InputError({o.origin, 0, 0}, o.path,
                     fmt::format("GPU kind '{}' is not declared in {}: set it where it is declared, "
                                 "--set topology.gpu_kinds.{}.{}=...",
                                 id, doc.source_name(), id, path->field));
  }
  std::vector<Override> out{{o.target, "gpu_kinds." + builtin->id, builtin_entry_yaml(builtin->id), o.origin}};
  if (builtin->id != id) {  // named by an alias: the node names the copy by its id
    std::string gpu_path;
    for (const std::string& key : path->holder) gpu_path += key + ".";
    out.push_back({o.target, gpu_path + "gpu", builtin->id, o.origin});
  }
  out.push_back(field_of(builtin->id));
  return out;
}

Override apply_topology_override(YamlDocument& doc, const Override& o) {
  const std::vector<Override> kind_fields = gpu_kind_field_overrides(doc, o);
  for (const Override& k : kind_fields) doc.apply(k);
  if (kind_fields.empty()) doc.apply(o);
  return kind_fields.empty() ? o : kind_fields.back();
}

bool sets_included_node(const YamlDocument& doc, const Override& o) {
  return doc.has_top_level("node_from") && o.path.starts_with("node.");
}

}  // namespace mpsim::topology
