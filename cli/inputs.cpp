#include "cli/inputs.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cli/commands.h"
#include "sim/calibration/profile_file.h"
#include "sim/core/input_error.h"
#include "sim/core/input_error_collector.h"
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_fields.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/gpu_kind_override.h"
#include "sim/topology/instance_override.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::cli {
namespace {

/// The other spellings of the field at `field.path`: its own, and the field it replaces under each of
/// its spellings (setting the microbatch count drops the global batch, which follows from it).
std::vector<std::string_view> conflicting_spellings(const plan::PlanField& field) {
  std::vector<std::string_view> out;
  const auto add_spellings = [&](const plan::PlanField& f) {
    for (const std::string_view spelling : f.spellings) {
      if (!spelling.empty()) out.push_back(spelling);
    }
  };
  add_spellings(field);
  if (const plan::PlanField* replaced = plan::plan_field(field.replaces)) {
    out.push_back(replaced->path);
    add_spellings(*replaced);
  }
  return out;
}

/// Whether `o` sets the plan field at canonical `path` under any of its spellings.
bool sets_field(const Override& o, std::string_view path) {
  if (o.target != "plan") return false;
  if (o.path == path) return true;
  const plan::PlanField* field = plan::plan_field(path);
  if (field == nullptr) return false;
  const auto conflicting = conflicting_spellings(*field);
  return (!field->shorthand.empty() && o.path == field->shorthand) ||
         std::find(conflicting.begin(), conflicting.end(), o.path) != conflicting.end();
}

/// Erasures of the plan field at canonical `path` under each of its spellings.
void erase_field(std::string_view path, const std::string& origin, std::vector<Override>& erasures) {
  erasures.push_back({"plan", std::string(path), "~", origin});
  if (const plan::PlanField* field = plan::plan_field(path)) {
    for (const auto spelling : conflicting_spellings(*field)) {
      erasures.push_back({"plan", std::string(spelling), "~", origin});
    }
  }
}

/// The fields a written plan derives from `resolved` (a plan override on its canonical path), by
/// canonical path: they follow it unless the same command sets them too. The partition's boundaries
/// follow the stage count; with a schedule that runs one chunk per rank, the virtual stages and their
/// group size go as well.
std::vector<std::string_view> derived_from(const Override& resolved) {
  if (resolved.path == "parallelism.pipeline" || resolved.path == "parallelism.virtual_stages") return {"partition"};
  if (resolved.path != "schedule") return {};
  const auto kind = std::find_if(std::begin(plan::kScheduleNames), std::end(plan::kScheduleNames),
                                  [&](const auto& entry) { return entry.first == resolved.value; });
  if (kind != std::end(plan::kScheduleNames) && plan::has_virtual_stages(kind->second)) return {"partition"};
  return {"partition", "parallelism.virtual_stages", "microbatch_group_size_per_vp_stage"};
}

/// The override as it applies to this document, plus the keys it makes obsolete (other spellings of
/// the same field, and the fields derived from it that no override in `all` sets).
Override resolve(const Override& o, const YamlDocument& doc, const std::vector<Override>& all,
                 std::vector<Override>& erasures) {
  Override r = o;
  if (o.target == "plan") {
    for (const plan::PlanField& field : plan::kPlanFields) {
      if (o.path != field.path && (field.shorthand.empty() || o.path != field.shorthand)) continue;
      r.path = std::string(field.path);
      for (const auto conflict : conflicting_spellings(field)) {
        if (conflict != field.path) erasures.push_back({o.target, std::string(conflict), "~", o.origin});
      }
    }
    for (const auto derived : derived_from(r)) {
      const bool set_too =
          std::any_of(all.begin(), all.end(), [&](const Override& other) { return sets_field(other, derived); });
      if (!set_too) erase_field(derived, o.origin, erasures);
    }
  }
  const bool names_cluster = o.path == "cluster" || o.path.rfind("cluster.", 0) == 0 || o.path.rfind("cluster[", 0) == 0;
  const bool names_kinds = o.path.rfind("gpu_kinds.", 0) == 0;  // beside 'cluster' in the short form too
  if (o.target == "topology" && doc.has_top_level("cluster") && !names_cluster && !names_kinds) {
    r.path = "cluster." + o.path;
  }
  if (o.target == "topology" && !doc.has_top_level("cluster") && names_cluster) {
    throw InputError({o.origin, 0, 0}, o.path, "this topology is not the short form: it has no 'cluster' section");
  }
  return r;
}

/// Erases a dotted key if present (no error when it is absent).
void erase_if_present(YamlDocument& doc, const Override& erase) {
  try {
    doc.apply(erase);
  } catch (const InputError&) {
  }
}

/// Applies a resolved override to `doc`, adding what it set to `applied`. A field of the GPU kind a node
/// names by id is set in the document's copy of that kind (sim/topology/gpu_kind_override.h).
void apply_resolved(YamlDocument& doc, const Override& r, std::vector<Override>& applied) {
  applied.push_back(topology::apply_topology_override(doc, r));
}

/// Rethrows errors in overridden fields as errors of the --set flag that set them.
template <typename Fn>
auto blame_overrides(const std::vector<Override>& applied, Fn&& load) {
  try {
    return load();
  } catch (const InputError& e) {
    for (const Override& o : applied) {
      const bool inside = e.field() == o.path || e.field().rfind(o.path + ".", 0) == 0 || e.field().rfind(o.path + "[", 0) == 0;
      // A mapping the override created on its way (a misspelled key in the middle of the path) has no line.
      const bool created = e.where().line == 0 && !e.field().empty() &&
                           (o.path.rfind(e.field() + ".", 0) == 0 || o.path.rfind(e.field() + "[", 0) == 0);
      if (inside || created) {
        throw InputError({o.origin, 0, 0}, e.field(), e.message());
      }
    }
    throw;
  }
}

YamlDocument load_with(const std::string& file, const std::string& target, const std::vector<Override>& overrides,
                       std::vector<Override>& applied) {
  YamlDocument doc = YamlDocument::load(file);
  for (const Override& o : overrides) {
    if (o.target != target) continue;
    if (target == "topology" && topology::sets_included_node(doc, o)) continue;  // patch_node applies it
    if (target == "topology" && topology::is_instance_path(o.path)) continue;  // applied to the cluster
    std::vector<Override> erasures;
    const Override r = resolve(o, doc, overrides, erasures);
    for (const Override& e : erasures) erase_if_present(doc, e);
    apply_resolved(doc, r, applied);
    if (r.path != o.path) applied.push_back(o);  // checks name fields by their shorthand too
  }
  return doc;
}

/// The topology with its overrides; `applied` collects them for blame_overrides.
topology::Cluster load_cluster_with(const std::string& file, const std::vector<Override>& overrides,
                                    std::vector<Override>& applied) {
  const YamlDocument topology_doc = load_with(file, "topology", overrides, applied);
  const auto patch_node = [&](YamlDocument& included) {
    for (const Override& o : overrides) {
      if (o.target == "topology" && o.path.rfind("node.", 0) == 0) apply_resolved(included, o, applied);
    }
  };
  topology::Cluster cluster = blame_overrides(applied, [&] {
    return read_collecting_errors(
        [&] { return topology::build_cluster(topology::load_topology_spec(topology_doc.root(), 0, patch_node)); });
  });
  topology::apply_instance_overrides(cluster, overrides);
  return cluster;
}

}  // namespace

topology::Cluster load_cluster(const std::string& topology, const std::vector<Override>& overrides) {
  std::vector<Override> applied;
  return load_cluster_with(topology, overrides, applied);
}

namespace {

/// A plan whose degrees name fewer GPUs than the cluster has was most likely written for a smaller
/// job: the error says how to run it on that many (the first N GPUs, or a cluster of that many nodes).
InputError with_job_size_hint(const InputError& e, const plan::PlanSpec& spec, const topology::Cluster& cluster) {
  const int have = static_cast<int>(cluster.gpus().size());
  if (e.field() != "data" || !spec.written(plan::Axis::Data)) return e;
  const int needed =
      spec.degrees.product(plan::Axis::Tensor | plan::Axis::Context | plan::Axis::Pipeline | plan::Axis::Data);
  if (needed <= 0 || needed >= have) return e;
  std::string hint = fmt::format("; to run it on {} GPUs of this cluster: --gpus {}", needed, needed);
  const int per_node = cluster.node_count > 0 ? have / cluster.node_count : 0;
  if (per_node > 0 && have % cluster.node_count == 0 && needed % per_node == 0) {
    hint += fmt::format(", or a cluster of {} nodes: --set topology.nodes={}", needed / per_node, needed / per_node);
  }
  return InputError(e.where(), e.field(), e.message() + hint);
}

/// The model and plan on a cluster already loaded (with `applied`, the overrides it took).
Inputs load_inputs_on(const InputFiles& files, const std::vector<Override>& overrides, std::vector<Override>& applied,
                      topology::Cluster cluster) {
  Inputs inputs{std::move(cluster), {}, std::nullopt, std::nullopt};
  // --profile wins over the one the topology names.
  const std::string profile =
      !files.profile.empty() || !files.topology_profile ? files.profile : inputs.cluster.profile_file;
  if (!profile.empty()) {
    inputs.profile = calibration::load_profile_file(profile);
    if (auto why = calibration::factor_above_ceiling(inputs.profile->factors, inputs.cluster)) {
      throw InputError({profile, 0, 0}, "profile.factors", *why);
    }
    calibration::apply_profile(*inputs.profile, inputs.cluster);
  }
  const YamlDocument model_doc = load_with(files.model, "model", overrides, applied);
  inputs.model = blame_overrides(
      applied, [&] { return read_collecting_errors([&] { return model::load_model(model_doc.root()); }); });
  if (!files.plan.empty()) {
    YamlDocument plan_doc = load_with(files.plan, "plan", overrides, applied);
    // A what-if on the cluster's size lets the plan's data-parallel degree follow (it fills the
    // cluster), unless the same command sets it.
    const auto sizes_cluster = [](const Override& o) {
      return o.target == "topology" && (o.path == "nodes" || o.path == "cluster.nodes" || o.path == "gpus_per_node" ||
                                        o.path == "cluster.gpus_per_node");
    };
    const auto sets_data = [](const Override& o) { return sets_field(o, "parallelism.data"); };
    if (std::any_of(overrides.begin(), overrides.end(), sizes_cluster) &&
        std::none_of(overrides.begin(), overrides.end(), sets_data)) {
      std::vector<Override> erasures;
      erase_field("parallelism.data", "--set topology.nodes", erasures);
      for (const Override& e : erasures) erase_if_present(plan_doc, e);
    }
    inputs.plan = blame_overrides(applied, [&] {
      const plan::PlanSpec spec = read_collecting_errors([&] { return plan::load_plan_spec(plan_doc.root()); });
      try {
        return plan::resolve_plan(spec, inputs.cluster, inputs.model);
      } catch (const InputError& e) {
        throw with_job_size_hint(e, spec, inputs.cluster);
      }
    });
  } else {
    for (const Override& o : overrides) {
      if (o.target == "plan") throw InputError({o.origin, 0, 0}, "", "there is no plan to override");
    }
  }
  return inputs;
}

}  // namespace

Inputs load_inputs_on_cluster(const InputFiles& files, const std::vector<Override>& overrides,
                              topology::Cluster cluster) {
  std::vector<Override> applied;
  return load_inputs_on(files, overrides, applied, std::move(cluster));
}

Inputs load_inputs_on_gpus(const InputFiles& files, std::vector<Override> overrides, const GpuSelection& selection) {
  if (!selection.gpus) {
    if (selection.gpus_per_node) throw InputError({"--gpus-per-node", 0, 0}, "", "needs --gpus N");
    return load_inputs(files, overrides);
  }
  const int gpus = *selection.gpus;
  const std::string flag = selection.gpus_per_node ? fmt::format("--gpus {} --gpus-per-node {}", gpus, *selection.gpus_per_node)
                                                   : fmt::format("--gpus {}", gpus);
  if (gpus < 1) throw InputError({flag, 0, 0}, "", "must be a positive number of GPUs");
  const topology::Cluster whole = load_cluster(files.topology, overrides);
  const int have = static_cast<int>(whole.gpus().size());
  if (gpus > have) {
    throw InputError({flag, 0, 0}, "",
                     fmt::format("the topology has {} GPUs ({} nodes); use --set topology.nodes=N for a larger cluster",
                                 have, whole.node_count));
  }
  const int node_gpus = static_cast<int>(whole.gpus_of_node(0).size());
  if (auto why = topology::job_shape_error(gpus, node_gpus, selection.gpus_per_node)) {
    throw InputError({flag, 0, 0}, "", *why);
  }
  const topology::JobShape shape = topology::job_shape(gpus, node_gpus, selection.gpus_per_node);
  if (shape.nodes > whole.node_count) {
    throw InputError({flag, 0, 0}, "",
                     fmt::format("{} nodes of {} GPUs are needed; the topology has {} (use --set topology.nodes=N)",
                                 shape.nodes, shape.gpus_per_node, whole.node_count));
  }
  if (gpus == have) return load_inputs(files, overrides);
  overrides.push_back(Override{"topology", "nodes", std::to_string(shape.nodes), flag});
  std::vector<Override> applied;
  topology::Cluster cluster = load_cluster_with(files.topology, overrides, applied);
  cluster.keep_job_gpus(shape);
  return load_inputs_on(files, overrides, applied, std::move(cluster));
}

Inputs load_inputs(const InputFiles& files, const std::vector<Override>& overrides) {
  std::vector<Override> applied;
  topology::Cluster cluster = load_cluster_with(files.topology, overrides, applied);
  return load_inputs_on(files, overrides, applied, std::move(cluster));
}

}  // namespace mpsim::cli
