#pragma once
/// One report builder for a step, predicted (the simulator) or measured (the executor): both say what
/// each device did, and the step's figures follow from that the same way.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/trace/report.h"

namespace mpsim::schedule {

/// What one GPU did in the step.
struct DeviceActivity {
  std::string id;                     ///< "node0/gpu3"
  int stage = 0;                      ///< pipeline rank
  std::int64_t busy_ns = 0;           ///< compute stream held: passes, blocking in-layer collectives, optimizer
  std::int64_t pipeline_busy_ns = 0;  ///< of that, forward and backward passes only
  std::int64_t first_start_ns = -1;   ///< first pass began; -1 if none
  std::int64_t last_end_ns = 0;       ///< last pass ended
  std::int64_t peak_memory_bytes = 0;
  std::int64_t memory_capacity_bytes = 0;
  /// The device whose passes stand for its pipeline rank in Zero Bubble's bubble rate (one per rank).
  bool represents_stage = false;
  trace::MemoryBreakdown memory;      ///< what the peak holds, when known
  std::int64_t communication_wait_ns = 0;  ///< of busy, waiting on in-layer collectives (0: not known)
  std::vector<trace::MemoryPoint> memory_timeline = {};  ///< its memory over the step, when recorded
};

/// FLOPs of one whole step over all GPUs.
struct StepFlops {
  Flops model;     ///< forward + backward of every sample, no recomputation
  Flops executed;  ///< with recomputation
};
/// The step's FLOPs: the model's training FLOPs per sample times the global batch, and the FLOPs
/// recomputation adds (model::recomputed_flops) on top.
[[nodiscard]] StepFlops step_flops(const model::Model& model, const plan::Plan& plan);

/// The report of a step that took `step_s`: devices in the given order with their idle time and bubble
/// fraction, the idle share, Zero Bubble's rate over the representative devices, TFLOP/s per GPU
/// (model and executed), MFU against `peak` per GPU (0 without one), peak memory, OOM, `links` as given
/// and the plan summary. The devices' memory timelines move into the report (at 1024 GPUs they are
/// most of its bytes).
[[nodiscard]] trace::Report build_report(double step_s, std::vector<DeviceActivity> devices, const StepFlops& flops,
                                         std::optional<FlopsPerSec> peak, const plan::Plan& plan,
                                         std::vector<trace::LinkReport> links = {});

}  // namespace mpsim::schedule
