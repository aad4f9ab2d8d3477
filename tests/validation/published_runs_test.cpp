// Published training runs of 2024-26 (tests/validation/published_runs.yaml: NeMo, Megatron-Bridge and
// Megatron-LM tables on H100, B200, GB200, GB300), simulated as published: the predicted throughput
// against the published one, in the figure the source gives (tokens/s per GPU, or model TFLOP/s per
// GPU counted as Megatron counts them, which is the model's own count here).
//
// Bounds (the acceptance): dense H100 rows median |error| <= 10 % and max <= 25 %; every
// published configuration fits in its GPU's memory (they all ran). Other kinds are reported the same
// way and held to a looser bound until their calibration rows are more numerous.
//
// Mixture-of-experts and context-parallel runs (moe_runs.yaml, context_runs.yaml) must simulate;
// their errors are reported, not bounded, until those dimensions are calibrated, except NeMo's
// long-sequence rows on H100 (LongSequenceErrorsDoNotGrowWithTheSequence).
//
// With MPSIM_VALIDATION_TABLE=path the table of every row is written there as Markdown
// (docs/validation.md is made from it by tools/validation_table.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/core/yaml_field.h"
#include "sim/engine/simulator.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim {
namespace {

std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

struct Outcome {
  std::string id;
  std::string source;
  std::string gpu;
  int gpus = 0;
  std::string figure;  ///< "tokens/s/GPU" or "TFLOP/s/GPU"
  double predicted = 0;
  double published = 0;
  double step_s = 0;
  double peak_gib = 0;
  double capacity_gib = 0;
  bool oom = false;
  std::string assumed;
  [[nodiscard]] double error() const { return predicted / published - 1; }
};

Outcome simulate_row(const Field& row) {
  Outcome o;
  o.id = row.require("id").as_string();
  o.source = row.require("source").as_string();
  o.gpu = row.require("gpu").as_string();
  o.gpus = static_cast<int>(row.require("gpus").as_int_in(1, 1'000'000));
  if (auto a = row.get("assumed")) o.assumed = a->as_string();

  YamlDocument topology_doc = YamlDocument::load(repo_path("topologies/" + row.require("topology").as_string()));
  if (auto sets = row.get("topology_set")) {
    for (const auto& [key, value] : sets->entries()) topology_doc.apply(Override{"topology", key, value.as_string(), o.id});
  }
  YamlDocument one_node = YamlDocument::load(repo_path("topologies/" + row.require("topology").as_string()));
  one_node.apply(Override{"topology", "nodes", "1", o.id});
  const int per_node =
      static_cast<int>(topology::build_cluster(topology::load_topology_spec(one_node.root())).gpus().size());
  // As simulate --gpus: whole nodes, part of one, or equal NVLink domains (256 GPUs as 4 racks of 64).
  const topology::JobShape shape = topology::job_shape(o.gpus, per_node);
  topology_doc.apply(Override{"topology", "nodes", std::to_string(shape.nodes), o.id});
  auto cluster = topology::build_cluster(topology::load_topology_spec(topology_doc.root()));
  cluster.keep_job_gpus(shape);

  const auto model = model::parse_model(row.require("model"), o.id);
  const auto plan = plan::resolve_plan(plan::load_plan_spec(row.require("plan")), cluster, model);
  const auto prediction = engine::simulate(cluster, model, plan);
  const auto& report = prediction.report;
  o.step_s = report.step_time_s;
  o.oom = report.oom;
  o.peak_gib = static_cast<double>(report.peak_memory_bytes) / (1024.0 * 1024 * 1024);
  o.capacity_gib = static_cast<double>(report.devices.front().memory_capacity_bytes) / (1024.0 * 1024 * 1024);
  const Field published = row.require("published");
  if (auto tokens = published.get("tokens_per_s_per_gpu")) {
    o.figure = "tokens/s/GPU";
    o.published = tokens->as_double_in(1e-3, 1e9);
    const double tokens_per_step = static_cast<double>(plan.global_batch) * static_cast<double>(model.shape->seq_len);
    o.predicted = tokens_per_step / report.step_time_s / plan.gpus();
  } else {
    o.figure = "TFLOP/s/GPU";
    o.published = published.require("model_tflops_per_gpu").as_double_in(1e-3, 1e9);
    o.predicted = report.tflops_per_gpu;
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Summary {
  double median_abs = 0;
  double max_abs = 0;
  std::size_t rows = 0;
};

Summary summarize(const std::vector<const Outcome*>& rows) {
  std::vector<double> errors;
  for (const Outcome* o : rows) errors.push_back(std::fabs(o->error()));
  Summary s;
  s.rows = errors.size();
  if (errors.empty()) return s;
  s.median_abs = median(errors);
  s.max_abs = *std::max_element(errors.begin(), errors.end());
  return s;
}

std::string markdown(const std::vector<Outcome>& outcomes, const Field* not_expressible) {
  std::string out;
  out += "| row | GPUs | figure | predicted | published | error | peak / capacity GiB | assumed |\n";
  out += "|---|---:|---|---:|---:|---:|---:|---|\n";
  for (const Outcome& o : outcomes) {
    out += fmt::format("| {} | {} | {} | {:.0f} | {:.0f} | {:+.1f} % | {:.1f} / {:.1f}{} | {} |\n", o.id, o.gpus, o.figure,
                       o.predicted, o.published, o.error() * 100, o.peak_gib, o.capacity_gib, o.oom ? " OOM" : "",
                       o.assumed);
  }
  const auto group_table = [&](const std::string& title, auto key) {
    std::map<std::string, std::vector<const Outcome*>> groups;
    for (const Outcome& o : outcomes) groups[key(o)].push_back(&o);
    out += fmt::format("\n| {} | rows | median abs error | max abs error |\n|---|---:|---:|---:|\n", title);
    for (const auto& [name, rows] : groups) {
      const Summary s = summarize(rows);
      out += fmt::format("| {} | {} | {:.1f} % | {:.1f} % |\n", name, s.rows, s.median_abs * 100, s.max_abs * 100);
    }
  };
  group_table("GPU", [](const Outcome& o) { return o.gpu; });
  group_table("source", [](const Outcome& o) { return o.source; });
  if (not_expressible == nullptr) return out;
  if (not_expressible->items().empty()) return out + "\nEvery row of the file is expressible and simulates.\n";
  out += "\nRows not expressible yet:\n\n| row | reason |\n|---|---|\n";
  for (const Field& item : not_expressible->items()) {
    out += fmt::format("| {} | {} |\n", item.require("id").as_string(), item.require("reason").as_string());
  }
  return out;
}

/// Every row of `file` (MPSIM_VALIDATION_ROW: those whose id contains it), simulated and printed.
std::vector<Outcome> simulate_rows(const std::string& file) {
  const YamlDocument rows_doc = YamlDocument::load(repo_path(file));
  std::vector<Outcome> outcomes;
  for (const Field& row : rows_doc.root().require("rows").items()) {
    if (const char* only = std::getenv("MPSIM_VALIDATION_ROW");
        only != nullptr && row.require("id").as_string().find(only) == std::string::npos) {
      continue;
    }
    const std::string topology_file = repo_path("topologies/" + row.require("topology").as_string());
    EXPECT_TRUE(std::filesystem::exists(topology_file)) << topology_file;
    outcomes.push_back(simulate_row(row));
    const Outcome& o = outcomes.back();
    std::printf("%-56s %5d GPUs  %-13s predicted %8.0f  published %8.0f  error %+6.1f%%  peak %5.1f GiB%s\n",
                o.id.c_str(), o.gpus, o.figure.c_str(), o.predicted, o.published, o.error() * 100, o.peak_gib,
                o.oom ? " OOM" : "");
  }
  return outcomes;
}

TEST(PublishedRuns, PredictionsHoldOnTodaysRuns) {
  const std::vector<Outcome> outcomes = simulate_rows("tests/validation/published_runs.yaml");
  std::map<std::string, std::vector<const Outcome*>> by_gpu;
  std::vector<std::string> oom;
  for (const Outcome& o : outcomes) {
    by_gpu[o.gpu].push_back(&o);
    if (o.oom) oom.push_back(fmt::format("{} ({:.1f} of {:.1f} GiB)", o.id, o.peak_gib, o.capacity_gib));
  }
  // Every published run fit, so none may be predicted out of memory.
  std::printf("predicted OOM: %zu rows\n", oom.size());
  for (const std::string& line : oom) std::printf("  %s\n", line.c_str());
  EXPECT_TRUE(oom.empty()) << oom.size() << " published runs predicted not to fit";
  for (const auto& [gpu, rows] : by_gpu) {
    const Summary s = summarize(rows);
    std::printf("%-16s %3zu rows  median |error| %5.1f%%  max %5.1f%%\n", gpu.c_str(), s.rows, s.median_abs * 100,
                s.max_abs * 100);
  }
  const Summary h100 = summarize(by_gpu["H100-SXM5-80GB"]);
  ASSERT_GE(h100.rows, 20U);
  EXPECT_LE(h100.median_abs, 0.10);
  EXPECT_LE(h100.max_abs, 0.25);
  for (const auto& [gpu, rows] : by_gpu) {
    if (gpu == "H100-SXM5-80GB") continue;
    const Summary s = summarize(rows);
    EXPECT_LE(s.median_abs, 0.25) << gpu;
  }
  if (const char* path = std::getenv("MPSIM_VALIDATION_TABLE")) {
    const YamlDocument skipped = YamlDocument::load(repo_path("tests/validation/not_expressible.yaml"));
    const Field reasons = skipped.root().require("not_expressible");
    std::ofstream(path) << markdown(outcomes, &reasons);
  }
}

/// Rows of a dimension not calibrated yet: every one must be expressible, simulate (a plan check or
/// engine error fails the test) and fit in memory, as the published run did; their errors are printed
/// and, with `table_env` set, written as Markdown for docs/validation.md, but not bounded.
void expect_rows_simulate(const std::string& file, const char* label, std::size_t rows, const char* table_env) {
  std::vector<Outcome> outcomes;
  EXPECT_NO_THROW(outcomes = simulate_rows(file));
  if (std::getenv("MPSIM_VALIDATION_ROW") == nullptr) {
    EXPECT_GE(outcomes.size(), rows);
  }
  std::map<std::string, std::vector<const Outcome*>> by_gpu;
  for (const Outcome& o : outcomes) {
    EXPECT_GT(o.predicted, 0) << o.id;
    EXPECT_FALSE(o.oom) << o.id << " predicted not to fit: " << o.peak_gib << " of " << o.capacity_gib << " GiB";
    by_gpu[o.gpu].push_back(&o);
  }
  for (const auto& [gpu, group] : by_gpu) {
    const Summary s = summarize(group);
    std::printf("%s %-16s %3zu rows  median |error| %5.1f%%  max %5.1f%%\n", label, gpu.c_str(), s.rows,
                s.median_abs * 100, s.max_abs * 100);
  }
  if (const char* path = std::getenv(table_env)) std::ofstream(path) << markdown(outcomes, nullptr);
}

// Every published run is expressed: the three files hold the 138 rows of the reference table, each
// once, and none is left out as not expressible.
TEST(PublishedRuns, EveryPublishedRunIsExpressed) {
  std::set<std::string> ids;
  std::size_t rows = 0;
  for (const char* file : {"tests/validation/published_runs.yaml", "tests/validation/moe_runs.yaml",
                           "tests/validation/context_runs.yaml"}) {
    const YamlDocument doc = YamlDocument::load(repo_path(file));
    for (const Field& row : doc.root().require("rows").items()) {
      ++rows;
      EXPECT_TRUE(ids.insert(row.require("id").as_string()).second) << row.require("id").as_string();
    }
  }
  EXPECT_EQ(rows, 138U);
  const YamlDocument skipped = YamlDocument::load(repo_path("tests/validation/not_expressible.yaml"));
  EXPECT_TRUE(skipped.root().require("not_expressible").items().empty());
}

// The mixture-of-experts runs with expert parallelism (tests/validation/moe_runs.yaml says what is
// not modelled yet).
TEST(PublishedRuns, MixtureOfExpertsRunsSimulate) {
  expect_rows_simulate("tests/validation/moe_runs.yaml", "MoE", 60, "MPSIM_VALIDATION_MOE_TABLE");
}

// The context-parallel runs, sequences of 8k to 1M tokens (tests/validation/context_runs.yaml).
TEST(PublishedRuns, ContextParallelRunsSimulate) {
  expect_rows_simulate("tests/validation/context_runs.yaml", "CP", 27, "MPSIM_VALIDATION_CP_TABLE");
}

// NeMo's long-sequence table on H100 (Llama 2 7B, 4k to 1M tokens, NeMo 24.03.01) runs the
// FlashAttention-2 generation of attention kernels (`attention_kernel: fa2`): at FA3's rate the
// predictions ran ahead by a share that grew with the attention's (+11.5 % at 4k, +37 % from 64k to
// 1M). At its own generation's rate no row is off by more than 15 % and the errors no longer grow with
// the sequence: they stay within 10 points of each other from 4k to 1M (7.4 when this was written).
TEST(PublishedRuns, LongSequenceErrorsDoNotGrowWithTheSequence) {
  std::vector<Outcome> rows;
  for (const char* file : {"tests/validation/published_runs.yaml", "tests/validation/context_runs.yaml"}) {
    for (Outcome& o : simulate_rows(file)) {
      if (o.source == "nemo_long_sequence" && o.gpu == "H100-SXM5-80GB") rows.push_back(std::move(o));
    }
  }
  if (std::getenv("MPSIM_VALIDATION_ROW") == nullptr) {
    EXPECT_EQ(rows.size(), 9U);
  }
  if (rows.empty()) return;
  double lowest = rows.front().error();
  double highest = lowest;
  for (const Outcome& o : rows) {
    EXPECT_LE(std::fabs(o.error()), 0.15) << o.id;
    lowest = std::min(lowest, o.error());
    highest = std::max(highest, o.error());
  }
  EXPECT_LE(highest - lowest, 0.10);
}

}  // namespace
}  // namespace mpsim
