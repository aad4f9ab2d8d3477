#pragma once
/// The interpreter: runs this process's stream of a plan's Program on a Backend and measures it.
///
/// The process is global rank `backend.world_rank()` of the plan's layout (plan::Layout); it runs
/// streams[pipeline rank] op by op. The interpreter holds no schedule logic: a `switch` over
/// OpKind maps each op to the network (compute), to a send or recv with the process of the peer
/// pipeline rank at the same position on every other axis (tag from kind, microbatch and the
/// receiving virtual stage), or to a collective over the group the op names.
///
/// In-layer collectives (tensor-parallel reductions, the MoE all-to-alls) run inside the layers of
/// their compute op, with the sizes the math has; the program's ops mark where they are.
///
/// Collectives and buckets: add_gradient_sync() sized each bucket from the simulator's gradient
/// bytes of the chunk (the dense and the routed experts' apart when the experts have replicas of
/// their own). The k-th collective of a chunk covers the same fraction of that chunk's section
/// (dense or experts) of the flat fp32 gradient buffer as its bytes are of the section's total; with ZeRO the
/// bounds are rounded down to multiples of the data degree so every reduce-scatter divides evenly,
/// and the few elements left at the end of a chunk are all-reduced with its last bucket.
///
/// Timing: each step starts from a world barrier; a mark before and after every op gives one span
/// per op, on lanes named like the simulator's ("node<i>" / "gpu<j> compute", "send", "recv wait",
/// "collectives"). Rank 0 gathers every rank's spans; the report and the timeline are those of the
/// measured step with the median step time (the lower median when the count is even).
#include <cstdint>
#include <string>
#include <vector>

#include "executor/backend/backend.h"
#include "executor/net/network.h"
#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::executor {

struct ExecuteOptions {
  int warmup = 1;  ///< steps run first and left out of the measurement
  int steps = 3;   ///< measured steps
  NetOptions net;
  Bytes grad_bucket;           ///< zero: Megatron's default
  bool dump_parameters = false;  ///< rank 0 gathers the parameters after the last step
  std::int64_t fail_at_op = -1;  ///< fault test: this rank raises `fail_signal` on itself before its K-th op
  int fail_signal = 9;           ///< SIGKILL: the rank dies; SIGSTOP: it hangs and its peers time out
  bool print_losses = true;      ///< rank 0 prints each step's loss
};

struct ExecuteResult {
  bool root = false;  ///< rank 0: the fields below are filled
  trace::Report report;
  trace::Timeline timeline;
  std::vector<double> step_times_s;  ///< every measured step
  std::vector<double> losses;        ///< every step, warm-up included
  int median_step = 0;               ///< index into step_times_s
  /// One line per parameter tensor, in model layer order: "layer\tname\trows\tcols\tv0 v1 ...".
  std::string parameters;
};

/// Runs the plan. Every rank of the world calls it; the world size must be plan.gpus().
/// Throws BackendError (communication, timeout) or std::invalid_argument (a plan the executor
/// cannot run: world size, widths, an invalid program).
[[nodiscard]] ExecuteResult execute(Backend& backend, const topology::Cluster& cluster, const model::Model& model,
                                    const plan::Plan& plan, const ExecuteOptions& options);

}  // namespace mpsim::executor
