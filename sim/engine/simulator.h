#pragma once
/// The discrete-event simulator: replays a Program over the cluster and predicts one training step.
///
/// Clock: integer nanoseconds; events ordered by (time, sequence), so runs are deterministic.
/// Every call builds its own state: no globals, several simulations may run at once in threads.
///
/// Actors: one per (pipeline rank, data-parallel replica). The tensor- and context-parallel ranks of a
/// stage run in lockstep, so one actor stands for them, and its transfers and in-layer collectives
/// carry all of their traffic (every group runs at once, as flows over the real links). With
/// `fold_replicas` (the default), one actor per pipeline rank stands for every data-parallel replica
/// too: replicas run the same program on symmetric devices, so their transfers are folded into the
/// same flows (each link counting every replica's traffic that crosses it). A test checks that the
/// folded and the full simulation agree on a cluster where both run. Replicas that run differently
/// (their own microbatch counts, plan::Plan::replica_microbatches, or GPUs of other kinds) form classes:
/// folding joins the replicas of a class, each class runs the program generated for its count, priced on
/// its GPUs (build_cost_model's `replica`), and a rank's gradient collectives wait for every class.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/engine/collectives.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/observer.h"
#include "sim/engine/route_cache.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::engine {

struct EngineOptions {
  bool fold_replicas = true;
  CollectiveAlgorithm collective = CollectiveAlgorithm::Auto;
  bool overlap_grad_reduce = false;  ///< Megatron's --overlap-grad-reduce
  /// Gradient bucket; zero means Megatron's default, max(40M, 1M x data-parallel size) parameters.
  Bytes grad_bucket;
  bool record_timeline = false;  ///< a TimelineRecorder observes the run; Prediction::timeline holds its trace
  /// With record_timeline, the links that get a lane, by link index (a link past its end gets none);
  /// empty: every link a flow crosses. At real-job size links carry almost every span (link_lanes.h),
  /// so traced_simulation.h picks them before the run that records.
  std::vector<bool> timeline_links;
  /// Each device's report holds its memory over the step (trace::DeviceReport::memory_timeline). Off
  /// by default: the planner's thousands of reports would each carry a timeline per GPU.
  bool record_memory_timeline = false;
  Observer* observer = nullptr;  ///< also told what happens (observer.h); not owned
  /// The compute order to run instead of the schedule's generator: an imported schedule (interop/formats/torch_csv.h)
  /// of the plan's shape; not owned. The program built from it is validated before it runs.
  const schedule::Program* compute_program = nullptr;
  /// Routes shared with other simulations of the same cluster (route_cache.h); not owned. Ignored when
  /// it is for another cluster object.
  SharedRoutes* routes = nullptr;
  /// Stop as soon as the step is known to last longer than this (a live event past it: every event
  /// ends a pass or moves data that a pass waits for), and say so in Prediction::exceeded_limit
  /// instead of reporting. The planner asks only whether a candidate beats a plan it already has.
  std::optional<TimeNs> step_limit;
};

struct Prediction {
  trace::Report report;
  trace::Timeline timeline;        ///< empty unless EngineOptions::record_timeline
  std::uint64_t events = 0;        ///< events processed
  std::uint64_t flows = 0;         ///< flows started
  /// The step lasts longer than EngineOptions::step_limit; the run stopped there and `report` is empty.
  bool exceeded_limit = false;
};

/// The Program a plan runs: the schedule's generator, then communication and gradient sync passes.
[[nodiscard]] schedule::Program build_program(const model::Model& model, const plan::Plan& plan, const CostModel& costs,
                                              const EngineOptions& options);

/// Simulates `program` (which must validate), every data-parallel replica running it at `costs` (one
/// class of replicas; the overload below makes one per class). Throws std::logic_error on an invalid program.
[[nodiscard]] Prediction simulate(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                                  const schedule::Program& program, const CostModel& costs,
                                  const EngineOptions& options);

/// Builds the cost model and the program (build_program) and simulates. The program is validated only
/// when it runs an imported compute order (EngineOptions::compute_program): the generators and passes
/// are proven by the schedule tests, and the planner runs this thousands of times.
[[nodiscard]] Prediction simulate(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                                  const EngineOptions& options = {});

}  // namespace mpsim::engine
