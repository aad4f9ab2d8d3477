#include "sim/calibration/measured_run.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/calibration/prediction_band.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_spec.h"
#include "sim/topology/gpu_kind_override.h"
#include "sim/topology/job_shape.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::calibration {

namespace {

std::filesystem::path find_topology(const Field& field, const RunPaths& paths) {
  const std::filesystem::path written = field.as_string();
  std::vector<std::filesystem::path> tried;
  if (written.is_absolute()) {
    tried.push_back(written);
  } else {
    tried.push_back(paths.base_dir / written);
    for (const auto& dir : paths.topology_dirs) tried.push_back(dir / written);
  }
  for (const auto& candidate : tried) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  field.fail(fmt::format("no topology file '{}' next to the runs file or among the shipped topologies", written.string()));
}

/// The row's topology, with its `topology_set` overrides, scaled to `gpus` as simulate --gpus does:
/// whole nodes, part of one, or equal NVLink domains.
topology::Cluster run_cluster(const Field& row, const RunPaths& paths, int gpus, const std::string& id) {
  const std::filesystem::path file = find_topology(row.require("topology"), paths);
  const auto spec = [&](std::optional<int> nodes) {
    YamlDocument doc = YamlDocument::load(file);
    std::vector<std::pair<Override, Field>> included_node_sets;  // of the node the file takes from another
    std::vector<std::pair<Override, Field>> applied;  // the field each set, and the row's entry that set it
    if (auto sets = row.get("topology_set")) {
      for (const auto& [key, value] : sets->entries()) {
        Override o{"topology", key, value.as_string(), id};
        if (topology::sets_included_node(doc, o)) {
          included_node_sets.emplace_back(std::move(o), value);
        } else {
          applied.emplace_back(topology::apply_topology_override(doc, o), value);
        }
      }
    }
    if (nodes) doc.apply(Override{"topology", "nodes", std::to_string(*nodes), id});
    try {
      return topology::load_topology_spec(doc.root(), 0, [&](YamlDocument& included) {
        for (const auto& [o, value] : included_node_sets) applied.emplace_back(topology::apply_topology_override(included, o), value);
      });
    } catch (const InputError& e) {
      // An error in a field a row's override set is the row's: named at its topology_set entry.
      for (const auto& [o, value] : applied) {
        if (e.field() == o.path) value.fail(e.message());
      }
      throw;
    }
  };
  const auto load = [&](std::optional<int> nodes) { return topology::build_cluster(spec(nodes)); };
  // Node groups of several kinds (a mixed cluster) have no one node to scale by: the run takes the
  // whole cluster, and its GPUs must be all of it.
  if (const topology::TopologySpec whole = spec(std::nullopt); whole.nodes.size() > 1) {
    topology::Cluster cluster = topology::build_cluster(whole);
    if (static_cast<std::size_t>(gpus) != cluster.gpus().size()) {
      throw std::invalid_argument(fmt::format("the topology's {} node groups are taken whole: gpus must be its {} GPUs",
                                              whole.nodes.size(), cluster.gpus().size()));
    }
    return cluster;
  }
  const int per_node = static_cast<int>(load(1).gpus().size());
  const topology::JobShape shape = topology::job_shape(gpus, per_node);
  topology::Cluster cluster = load(shape.nodes);
  cluster.keep_job_gpus(shape);
  return cluster;
}

/// A row's model or plan file, next to the runs file; a missing one fails at the row's field.
std::filesystem::path find_input_file(const Field& field, const RunPaths& paths, std::string_view what) {
  const std::filesystem::path written = field.as_string();
  const std::filesystem::path file = paths.base_dir / written;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    field.fail(fmt::format("no {} file '{}' next to the runs file", what, written.string()));
  }
  return file;
}

model::Model run_model(const Field& field, const RunPaths& paths, const std::string& id) {
  if (field.is_scalar()) return model::load_model_file(find_input_file(field, paths, "model"));
  return model::parse_model(field, id);
}

plan::PlanSpec run_plan(const Field& field, const RunPaths& paths) {
  if (field.is_scalar()) return plan::load_plan_file(find_input_file(field, paths, "plan"));
  return plan::load_plan_spec(field);
}

/// Runs `read`; an error it locates in another file (a model or plan file, which several rows may
/// share) also names the run it was read for, and the run's line in the runs file.
template <class Read>
auto for_row(const Field& row, const std::string& id, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const InputError& e) {
    if (e.where().file == row.file()) throw;
    const SourceLocation at = row.location();
    throw InputError(e.where(), e.field(), fmt::format("{} (run '{}', {}:{})", e.message(), id, at.file, at.line));
  }
}

/// The row's figure; `run`'s model is read already (a throughput in tokens needs its sequence length).
void read_measured(const Field& measured, MeasuredRun& run) {
  measured.expect_keys({"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "model_tflops_per_gpu",
                        "peak_memory_gib", "kind", "stage"});
  int figures = 0;
  if (auto f = measured.get("step_time_s")) {
    run.figure = FigureKind::StepTime;
    run.measured = f->as_double_in(1e-9, 1e9);
    ++figures;
  }
  if (auto f = measured.get("tokens_per_s_per_gpu")) {
    // The step's tokens are global batch x seq_len: a hand-listed model has no sequence length.
    if (!run.model.shape) {
      f->fail("needs a model with a sequence length (seq_len); for a hand-listed model give step_time_s or "
              "model_tflops_per_gpu");
    }
    run.figure = FigureKind::TokensPerSecPerGpu;
    run.measured = f->as_double_in(1e-6, 1e12);
    ++figures;
  }
  for (const char* key : {"tflops_per_gpu", "model_tflops_per_gpu"}) {
    if (auto f = measured.get(key)) {
      run.figure = FigureKind::ModelTflopsPerGpu;
      run.measured = f->as_double_in(1e-6, 1e9);
      ++figures;
    }
  }
  if (auto peak = measured.get("peak_memory_gib")) run.measured_peak_gib = peak->as_double_in(1e-6, 1e9);
  if (auto kind = measured.get("kind")) {
    if (!run.measured_peak_gib) kind->fail("names the kind of peak_memory_gib, which is not given");
    const auto named = peak_kind_named(kind->as_string());
    if (!named) kind->fail(fmt::format("'{}' is not a kind of peak (allocated or reserved)", kind->as_string()));
    run.peak_kind = *named;
  }
  if (auto stage = measured.get("stage")) {
    if (!run.measured_peak_gib) stage->fail("names the stage of peak_memory_gib, which is not given");
    run.peak_stage = peak_stage_named(*stage, run.plan);
  }
  if (figures == 0 && !run.measured_peak_gib) {
    measured.fail("needs one of step_time_s, tokens_per_s_per_gpu, tflops_per_gpu (or peak_memory_gib)");
  }
  if (figures > 1) measured.fail("gives more than one of step_time_s, tokens_per_s_per_gpu, tflops_per_gpu");
}

}  // namespace

int peak_stage_named(const Field& stage, const plan::Plan& plan) {
  const int stages = plan.degrees[plan::Axis::Pipeline];
  const std::string text = stage.as_string();
  if (text == "first") return 0;
  if (text == "last") return stages - 1;
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    stage.fail(fmt::format("'{}' is not a pipeline stage (first, last or an index from 0)", text));
  }
  const auto index = stage.as_int_in(0, stages - 1);
  return static_cast<int>(index);
}

const std::string& MeasuredRun::gpu_kind() const { return cluster.gpu_kind_of(cluster.gpus().front()).id; }

std::vector<std::string> MeasuredRun::gpu_kinds() const {
  std::vector<std::string> ids;
  for (const int kind : cluster.job_gpu_kinds()) ids.push_back(cluster.gpu_kinds()[static_cast<std::size_t>(kind)].id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

double MeasuredRun::measured_step_s(const trace::Report& prediction) const {
  switch (figure) {
    case FigureKind::StepTime:
      return measured;
    case FigureKind::TokensPerSecPerGpu:
      return prediction.step_time_s * predicted_figure(prediction) / measured;
    case FigureKind::ModelTflopsPerGpu:
      return prediction.step_time_s * prediction.tflops_per_gpu / measured;
  }
  return measured;
}

double MeasuredRun::predicted_figure(const trace::Report& prediction) const {
  switch (figure) {
    case FigureKind::StepTime:
      return prediction.step_time_s;
    case FigureKind::TokensPerSecPerGpu: {
      const double tokens_per_step = static_cast<double>(plan.global_batch) * static_cast<double>(model.shape->seq_len);
      return tokens_per_step / prediction.step_time_s / plan.gpus();
    }
    case FigureKind::ModelTflopsPerGpu:
      return prediction.tflops_per_gpu;
  }
  return prediction.step_time_s;
}

std::string MeasuredRun::group() const { return std::string(prediction_group(model, plan)); }

RunInputs load_run_inputs(const Field& row, const RunPaths& paths) {
  const std::string id = row.require("id").as_string();
  const Field gpus = row.require("gpus");
  RunInputs inputs;
  const int gpu_count = static_cast<int>(gpus.as_int_in(1, 1'000'000));
  try {
    inputs.cluster = for_row(row, id, [&] { return run_cluster(row, paths, gpu_count, id); });
  } catch (const std::invalid_argument& e) {
    gpus.fail(e.what());
  }
  inputs.model = for_row(row, id, [&] { return run_model(row.require("model"), paths, id); });
  inputs.plan = for_row(row, id, [&] {
    return plan::resolve_plan(run_plan(row.require("plan"), paths), inputs.cluster, inputs.model);
  });
  return inputs;
}

MeasuredRun load_measured_run(const Field& row, const RunPaths& paths) {
  row.expect_keys({"id", "source", "gpu", "topology", "topology_set", "gpus", "model", "plan", "measured", "published",
                   "assumed", "fit", "release"});
  MeasuredRun run;
  run.id = row.require("id").as_string();
  run.file = row.file();
  if (auto gpu = row.get("gpu")) run.gpu_label = gpu->as_string();
  if (auto fit = row.get("fit")) run.fit = fit->as_string();
  RunInputs inputs = load_run_inputs(row, paths);
  run.cluster = std::move(inputs.cluster);
  run.model = std::move(inputs.model);
  run.plan = std::move(inputs.plan);
  const bool has_measured = row.has("measured");
  if (has_measured && row.has("published")) row.fail("gives both 'measured' and 'published' (they are one field)");
  read_measured(row.require(has_measured ? "measured" : "published"), run);
  return run;
}

std::vector<MeasuredRun> parse_measured_runs(const std::string& text, const std::string& source_name,
                                             const RunPaths& paths) {
  // The document may be a list, which YamlDocument::root() refuses: parse once for its errors' lines,
  // then read the list as it is.
  (void)YamlDocument::parse(text, source_name);
  Field root(std::make_shared<const std::string>(source_name), YAML::Load(text), "", YAML::Mark());
  if (root.is_null()) root.fail("file is empty");
  if (root.is_map()) {
    root.expect_keys({"rows"});
    root = root.require("rows");
  }
  if (!root.is_sequence()) root.fail("a runs file is a list of runs (or 'rows:' holding one)");
  std::vector<MeasuredRun> runs;
  for (const Field& row : root.items()) runs.push_back(load_measured_run(row, paths));
  if (runs.empty()) root.fail("holds no runs");
  return runs;
}

std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& file,
                                            const std::vector<std::filesystem::path>& topology_dirs) {
  return parse_measured_runs(read_text_file(file), file.string(), RunPaths{file.parent_path(), topology_dirs});
}

}  // namespace mpsim::calibration
