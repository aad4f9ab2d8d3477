// Whole-step simulations of GPT-3 175B (1F1B, micro batch 1, 64 microbatches per pipeline) on DGX H100
// clusters of growing size. The cluster, model and plan are loaded outside the timed loop, so the time is
// what engine::simulate costs: the cost model, program building and the discrete-event run.
#include <cstddef>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "sim/core/yaml_field.h"
#include "sim/engine/simulator.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace {

using namespace mpsim;

std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// `nodes` DGX H100 on the rail-optimized NDR fabric of topologies/512x-dgx-h100.yaml. The document is
/// named as if it lay in topologies/, so `node_from` resolves there; nothing is written to disk.
topology::Cluster dgx_h100_cluster(int nodes) {
  if (nodes == 1) return topology::load_topology_file(repo_path("topologies/dgx-h100.yaml"));
  if (nodes == 512) return topology::load_topology_file(repo_path("topologies/512x-dgx-h100.yaml"));
  const std::string yaml = fmt::format(
      "name: {}x DGX H100\n"
      "node_from: dgx-h100.yaml\n"
      "nodes: {}\n"
      "fabric: {{ kind: rail-optimized, network: infiniband, levels: 3, leaf_ports: 32, pod_leaves: 16,\n"
      "          switch_latency: \"0.6 us\" }}\n",
      nodes, nodes);
  const auto document = YamlDocument::parse(yaml, repo_path("topologies/generated.yaml"));
  return topology::build_cluster(topology::load_topology_spec(document.root()));
}

model::Model gpt3_175b() { return model::load_model_file(repo_path("configs/models/gpt3-175b.yaml")); }

/// TP `tensor` x PP `pipeline`, 1F1B, micro batch 1, 64 microbatches per pipeline; data parallelism
/// fills the cluster.
plan::Plan gpt3_plan(int tensor, int pipeline, const topology::Cluster& cluster, const model::Model& model) {
  const std::string yaml = fmt::format(
      "parallelism: {{ tensor: {}, pipeline: {} }}\n"
      "batch: {{ micro: 1, microbatches: 64 }}\n"
      "schedule: 1f1b\n",
      tensor, pipeline);
  return plan::resolve_plan(plan::load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root()), cluster, model);
}

struct Scale {
  int nodes;
  int tensor;
  int pipeline;
};

void set_counters(benchmark::State& state, const engine::Prediction& prediction, std::size_t gpus, int data) {
  const auto events = static_cast<double>(prediction.events);
  state.counters["events"] = events;
  state.counters["flows"] = static_cast<double>(prediction.flows);
  state.counters["events_per_s"] =
      benchmark::Counter(events * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["gpus"] = static_cast<double>(gpus);
  state.counters["dp"] = data;
  // The predicted step time: folded and unfolded runs of one scale must agree on it.
  state.counters["step_s"] = prediction.report.step_time_s;
}

/// One training step simulated; only engine::simulate is timed.
void BM_SimulateStep(benchmark::State& state, Scale scale, bool fold_replicas) {
  const auto cluster = dgx_h100_cluster(scale.nodes);
  const auto model = gpt3_175b();
  const auto plan = gpt3_plan(scale.tensor, scale.pipeline, cluster, model);
  engine::EngineOptions options;
  options.fold_replicas = fold_replicas;
  engine::Prediction prediction;
  for (auto _ : state) {
    prediction = engine::simulate(cluster, model, plan, options);
    benchmark::DoNotOptimize(prediction);
  }
  set_counters(state, prediction, cluster.gpus().size(), plan.degrees[plan::Axis::Data]);
}

/// The 4096-GPU step end to end: loading the topology, model and plan, then simulating.
void BM_LoadAndSimulate4096(benchmark::State& state) {
  engine::Prediction prediction;
  std::size_t gpus = 0;
  int data = 0;
  for (auto _ : state) {
    const auto cluster = dgx_h100_cluster(512);
    const auto model = gpt3_175b();
    const auto plan = gpt3_plan(8, 16, cluster, model);
    prediction = engine::simulate(cluster, model, plan);
    benchmark::DoNotOptimize(prediction);
    gpus = cluster.gpus().size();
    data = plan.degrees[plan::Axis::Data];
  }
  set_counters(state, prediction, gpus, data);
}

constexpr Scale kGpus8{1, 8, 1};
constexpr Scale kGpus64{8, 8, 8};
constexpr Scale kGpus512{64, 8, 16};
constexpr Scale kGpus4096{512, 8, 16};

BENCHMARK_CAPTURE(BM_SimulateStep, gpus_8_tp8_pp1_dp1, kGpus8, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpus_64_tp8_pp8_dp1, kGpus64, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpus_512_tp8_pp16_dp4, kGpus512, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpus_4096_tp8_pp16_dp32, kGpus4096, true)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_SimulateStep, gpus_8_tp8_pp1_dp1_unfolded, kGpus8, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpus_64_tp8_pp8_dp1_unfolded, kGpus64, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateStep, gpus_512_tp8_pp16_dp4_unfolded, kGpus512, false)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_LoadAndSimulate4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
