#pragma once
/// The classes of data-parallel replicas the simulator runs apart (simulator.h): replicas with the same
/// microbatch count (plan::Plan::replica_microbatches) on GPUs of the same kinds form one class. And
/// what the report says of each class: its stages' figures.
#include <vector>

#include "sim/plan/layout.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"

namespace mpsim::engine {

/// The data-parallel replicas that run alike: the same microbatch count on GPUs of the same kinds.
struct ReplicaClasses {
  std::vector<int> first_replica;  ///< by class: its first replica (classes in order of it)
  std::vector<int> of_replica;     ///< by data-parallel rank: its class
};
/// The classes of `plan`'s replicas on `cluster`. O(data-parallel degree x pipeline degree).
[[nodiscard]] ReplicaClasses replica_classes(const topology::Cluster& cluster, const plan::Plan& plan);

/// Each class's figures, read from `devices` (one per GPU of the plan, by global rank, as the simulator
/// reports them); empty for fewer than two classes, so a report whose replicas all run alike is unchanged.
/// A class's stage is shown by its GPU with the largest slowdown (the one its folded actor waits for),
/// the first of equals. `class_of_replica`: by data-parallel rank. O(GPUs x classes).
[[nodiscard]] std::vector<trace::ReplicaClassReport> replica_class_reports(
    const std::vector<int>& class_of_replica, const topology::Cluster& cluster, const plan::Plan& plan,
    const plan::Layout& layout, const std::vector<trace::DeviceReport>& devices);

}  // namespace mpsim::engine
