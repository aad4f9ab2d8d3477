#include "sim/engine/replica_classes.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "sim/plan/plan_check.h"

namespace mpsim::engine {

ReplicaClasses replica_classes(const topology::Cluster& cluster, const plan::Plan& plan) {
  const int data = plan.degrees[plan::Axis::Data];
  std::vector<std::vector<int>> kinds(static_cast<std::size_t>(data));
  if (cluster.job_gpu_kinds().size() > 1) {
    const plan::StageGpuKinds stages = plan::stage_gpu_kinds(cluster, plan.degrees, plan.placement);
    if (stages.replica_kinds.size() == kinds.size()) kinds = stages.replica_kinds;
  }
  ReplicaClasses out;
  std::map<std::pair<int, std::vector<int>>, int> index;
  for (int d = 0; d < data; ++d) {
    const auto key = std::make_pair(plan.microbatches_of_replica(d), kinds[static_cast<std::size_t>(d)]);
    const auto [it, added] = index.emplace(key, static_cast<int>(out.first_replica.size()));
    if (added) out.first_replica.push_back(d);
    out.of_replica.push_back(it->second);
  }
  return out;
}

std::vector<trace::ReplicaClassReport> replica_class_reports(const std::vector<int>& class_of_replica,
                                                             const topology::Cluster& cluster, const plan::Plan& plan,
                                                             const plan::Layout& layout,
                                                             const std::vector<trace::DeviceReport>& devices) {
  const int classes = class_of_replica.empty()
                          ? 0
                          : *std::max_element(class_of_replica.begin(), class_of_replica.end()) + 1;
  if (classes < 2) return {};
  if (devices.size() != static_cast<std::size_t>(layout.ranks())) {
    throw std::logic_error("replica classes: a device report per GPU of the plan is needed");
  }
  const int pipeline = plan.degrees[plan::Axis::Pipeline];
  const int data = plan.degrees[plan::Axis::Data];
  std::vector<trace::ReplicaClassReport> out(static_cast<std::size_t>(classes));
  for (int d = 0; d < data; ++d) {
    trace::ReplicaClassReport& c = out[static_cast<std::size_t>(class_of_replica[static_cast<std::size_t>(d)])];
    if (c.replicas.empty()) c.microbatches = plan.microbatches_of_replica(d);
    c.replicas.push_back(d);
  }
  // By class and stage: the global rank that shows it, and how many GPUs the class has there.
  std::vector<std::vector<int>> shown(static_cast<std::size_t>(classes),
                                      std::vector<int>(static_cast<std::size_t>(pipeline), -1));
  std::vector<int> gpus(static_cast<std::size_t>(classes), 0);
  const auto slowdown = [&](int g) { return cluster.device(cluster.gpus().at(static_cast<std::size_t>(g))).slowdown; };
  for (int g = 0; g < layout.ranks(); ++g) {
    const auto replica = static_cast<std::size_t>(layout.coordinate(g, plan::Axis::Data));
    const auto c = static_cast<std::size_t>(class_of_replica[replica]);
    const auto s = static_cast<std::size_t>(layout.coordinate(g, plan::Axis::Pipeline));
    ++gpus[c];
    int& at = shown[c][s];
    if (at < 0 || slowdown(g) > slowdown(at)) at = g;
  }
  for (std::size_t c = 0; c < out.size(); ++c) {
    out[c].gpus_per_stage = gpus[c] / pipeline;
    for (const int g : shown[c]) {
      trace::DeviceReport d = devices[static_cast<std::size_t>(g)];
      d.memory_timeline.clear();
      out[c].stages.push_back(std::move(d));
      out[c].gpu_kinds.push_back(cluster.gpu_kind_of(cluster.gpus().at(static_cast<std::size_t>(g))).id);
    }
  }
  return out;
}

}  // namespace mpsim::engine
