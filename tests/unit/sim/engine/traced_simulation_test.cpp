// simulate_traced picks a trace's link lanes before the run that records them: its timeline must be
// exactly the one select_link_lanes makes from a run that records every link (the same lanes in the
// same order, the same spans), and its report the plain run's.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/core/yaml_field.h"
#include "sim/engine/traced_simulation.h"
#include "sim/trace/link_lanes.h"

namespace mpsim::engine {
namespace {

using namespace testing;

bool same_lanes(const trace::Timeline& a, const trace::Timeline& b) {
  if (a.lanes.size() != b.lanes.size()) return false;
  for (std::size_t i = 0; i < a.lanes.size(); ++i) {
    if (a.lanes[i].process != b.lanes[i].process || a.lanes[i].thread != b.lanes[i].thread) return false;
  }
  return true;
}

bool same_spans(const trace::Timeline& a, const trace::Timeline& b) {
  if (a.spans.size() != b.spans.size()) return false;
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    const trace::Span& x = a.spans[i];
    const trace::Span& y = b.spans[i];
    if (x.lane != y.lane || x.kind != y.kind || x.start_ns != y.start_ns || x.end_ns != y.end_ns ||
        x.microbatch != y.microbatch || x.chunk != y.chunk || x.stage != y.stage || x.bytes != y.bytes || x.op != y.op) {
      return false;
    }
  }
  return true;
}

std::size_t link_lanes(const trace::Timeline& t) {
  std::vector<bool> is_link(t.lanes.size(), false);
  for (const trace::Span& s : t.spans) is_link[s.lane] = is_link[s.lane] || s.kind == trace::SpanKind::Transfer;
  return static_cast<std::size_t>(std::count(is_link.begin(), is_link.end(), true));
}

// A 4x p4d job (32 GPUs: NVSwitch links, PCIe, four EFA NICs a node): a tensor-parallel, pipelined,
// data-parallel step uses far more than the 32 links `busiest` keeps.
TEST(TracedSimulation, KeepsTheLinkLanesSelectLinkLanesWould) {
  const auto cluster = topology::build_cluster(
      topology::load_topology_spec(YamlDocument::load(repo_path("topologies/4x-p4d.yaml")).root()));
  const auto model = model::load_model_file(repo_path("configs/models/gpt3-1.3b.yaml"));
  const auto plan = plan_yaml(
      "parallelism: { tensor: 2, pipeline: 2, data: 8 }\nbatch: { global: 64, micro: 1 }\nschedule: 1f1b\n", cluster,
      model);
  EngineOptions every_link;
  every_link.record_timeline = true;
  const Prediction whole = simulate(cluster, model, plan, every_link);
  ASSERT_GT(link_lanes(whole.timeline), trace::kBusiestLinks) << "the case must have links to drop";

  for (const auto which : {trace::LinkLanes::Busiest, trace::LinkLanes::None, trace::LinkLanes::All}) {
    const trace::Timeline expected = trace::select_link_lanes(whole.timeline, which);
    const Prediction traced = simulate_traced(cluster, model, plan, {}, which);
    EXPECT_TRUE(same_lanes(traced.timeline, expected)) << static_cast<int>(which);
    EXPECT_TRUE(same_spans(traced.timeline, expected)) << static_cast<int>(which);
    EXPECT_EQ(traced.report.step_time_s, whole.report.step_time_s);
    EXPECT_EQ(traced.report.links.size(), whole.report.links.size());
  }
  EXPECT_EQ(link_lanes(simulate_traced(cluster, model, plan, {}, trace::LinkLanes::Busiest).timeline),
            trace::kBusiestLinks);
}

}  // namespace
}  // namespace mpsim::engine
