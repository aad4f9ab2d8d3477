#include "cli/inputs.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cli/commands.h"
#include "sim/core/input_error.h"
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::cli {
namespace {

struct PlanAlias {
  std::string_view shorthand;
  std::string_view path;
  std::vector<std::string_view> conflicting;  ///< other spellings of the same decision, dropped
};

const std::vector<PlanAlias>& plan_aliases() {
  static const std::vector<PlanAlias> aliases = {
      {"tensor", "parallelism.tensor", {"tensor_model_parallel_size", "tensor_parallel_degree"}},
      {"pipeline", "parallelism.pipeline", {"pipeline_model_parallel_size", "partitions", "pipeline_parallel_degree"}},
      {"data", "parallelism.data", {"data_parallel_size"}},
      {"virtual_stages", "parallelism.virtual_stages", {"virtual_pipeline_model_parallel_size"}},
      {"microbatches", "batch.microbatches", {"microbatches", "batch.global", "global_batch_size"}},
      {"global_batch", "batch.global", {"global_batch_size", "batch.microbatches", "microbatches"}},
      {"micro_batch", "batch.micro", {"micro_batch_size"}},
  };
  return aliases;
}

/// The override as it applies to this document, plus the keys it makes obsolete.
Override resolve(const Override& o, const YamlDocument& doc, std::vector<Override>& erasures) {
  Override r = o;
  if (o.target == "plan") {
    for (const PlanAlias& a : plan_aliases()) {
      if (o.path != a.shorthand) continue;
      r.path = std::string(a.path);
      for (const auto conflict : a.conflicting) {
        if (conflict != a.path) erasures.push_back({o.target, std::string(conflict), "~", o.origin});
      }
    }
  }
  const bool names_cluster = o.path == "cluster" || o.path.rfind("cluster.", 0) == 0 || o.path.rfind("cluster[", 0) == 0;
  if (o.target == "topology" && doc.has_top_level("cluster") && !names_cluster) {
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
    if (target == "topology" && doc.has_top_level("node_from") && o.path.rfind("node.", 0) == 0) continue;
    std::vector<Override> erasures;
    const Override r = resolve(o, doc, erasures);
    for (const Override& e : erasures) erase_if_present(doc, e);
    doc.apply(r);
    applied.push_back(r);
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
      if (o.target == "topology" && o.path.rfind("node.", 0) == 0) {
        included.apply(o);
        applied.push_back(o);
      }
    }
  };
  return blame_overrides(applied, [&] {
    return topology::build_cluster(topology::load_topology_spec(topology_doc.root(), 0, patch_node));
  });
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
  if (e.field() != "data" || !spec.data) return e;
  const int needed = spec.tensor * spec.context * spec.pipeline * *spec.data;
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
  Inputs inputs{std::move(cluster), {}, std::nullopt};
  const YamlDocument model_doc = load_with(files.model, "model", overrides, applied);
  inputs.model = blame_overrides(applied, [&] { return model::load_model(model_doc.root()); });
  if (!files.plan.empty()) {
    const YamlDocument plan_doc = load_with(files.plan, "plan", overrides, applied);
    inputs.plan = blame_overrides(applied, [&] {
      const plan::PlanSpec spec = plan::load_plan_spec(plan_doc.root());
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

void add_gpu_selection_options(CLI::App& command, GpuSelection& selection) {
  command.add_option_function<int>(
      "--gpus", [&selection](const int& n) { selection.gpus = n; },
      "Use the first N GPUs of the topology in node order: whole nodes, part of one node, or equal NVLink "
      "domains (256 GPUs of 72-GPU racks: 4 racks of 64)");
  command.add_option_function<int>(
      "--gpus-per-node", [&selection](const int& n) { selection.gpus_per_node = n; },
      "With --gpus: use the first K GPUs of each node");
}

Inputs load_inputs(const InputFiles& files, const std::vector<Override>& overrides) {
  std::vector<Override> applied;
  topology::Cluster cluster = load_cluster_with(files.topology, overrides, applied);
  return load_inputs_on(files, overrides, applied, std::move(cluster));
}

}  // namespace mpsim::cli
