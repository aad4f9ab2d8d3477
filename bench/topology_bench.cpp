// Topology loading and routing at cluster scale: what every simulate and plan call pays first.
#include <string>

#include <benchmark/benchmark.h>

#include "sim/topology/route_table.h"
#include "sim/topology/topology_loader.h"

namespace {

std::string topology(const char* name) { return std::string(MPSIM_SOURCE_DIR) + "/topologies/" + name; }

void BM_LoadTopology(benchmark::State& state, const char* name) {
  for (auto _ : state) {
    auto cluster = mpsim::topology::load_topology_file(topology(name));
    benchmark::DoNotOptimize(cluster);
  }
}
BENCHMARK_CAPTURE(BM_LoadTopology, dgx_h100, "dgx-h100.yaml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadTopology, selene_4480_gpus, "selene.yaml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadTopology, dgx_h100_x512, "512x-dgx-h100.yaml")->Unit(benchmark::kMillisecond);

/// Routes from one GPU to every device: the single-source search the route table runs per source.
void BM_RoutesFromOneGpu(benchmark::State& state, const char* name) {
  const auto cluster = mpsim::topology::load_topology_file(topology(name));
  for (auto _ : state) {
    auto routes = mpsim::topology::routes_from(cluster, cluster.gpus().front());
    benchmark::DoNotOptimize(routes);
  }
  state.counters["devices"] = static_cast<double>(cluster.devices().size());
}
BENCHMARK_CAPTURE(BM_RoutesFromOneGpu, dgx_h100_x16, "16x-dgx-h100.yaml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RoutesFromOneGpu, selene_4480_gpus, "selene.yaml")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
