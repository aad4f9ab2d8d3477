#pragma once
/// The summary of one training step, predicted or measured (`simulate --json`: docs/simulator.md,
/// "The report").
/// All numbers in SI base units.
#include <cstdint>
#include <string>
#include <vector>

namespace mpsim::trace {

/// What a device's peak memory holds (`memory` of simulate --json; docs/simulator.md, "Memory"). The static parts are
/// held all step; activations are what the schedule's stash and a running pass add at their largest, and
/// optimizer_step what the optimizer step adds (fp32 copies of 16-bit gradients) while no activation is
/// held: the peak is the static parts plus the larger of the two.
struct MemoryBreakdown {
  std::int64_t weights = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer = 0;
  std::int64_t activations = 0;
  std::int64_t reserved = 0;
  std::int64_t optimizer_step = 0;
  [[nodiscard]] bool known() const noexcept { return weights + gradients + optimizer + activations + reserved > 0; }
  friend bool operator==(const MemoryBreakdown&, const MemoryBreakdown&) = default;
};

/// A device's allocated bytes from `time_s` (seconds from the step's start) until the next point.
struct MemoryPoint {
  double time_s = 0;
  std::int64_t bytes = 0;
  friend bool operator==(const MemoryPoint&, const MemoryPoint&) = default;
};

struct DeviceReport {
  std::string id;            ///< "node0/gpu3"
  int stage = 0;             ///< pipeline rank
  double busy_s = 0;         ///< compute stream held: passes, blocking in-layer collectives, optimizer
  double idle_s = 0;         ///< step time - busy
  double bubble_fraction = 0;  ///< idle / step time
  std::int64_t peak_memory_bytes = 0;
  std::int64_t memory_capacity_bytes = 0;
  bool oom = false;
  MemoryBreakdown memory;  ///< all zero when not known (a measured step)
  /// Of busy_s, the stream waiting on in-layer collectives (tensor-parallel reductions not overlapped,
  /// ZeRO-3 parameter gathers, context-parallel exchanges, expert all-to-alls, or overlapped ones
  /// outlasting their pass): exposed communication.
  double communication_wait_s = 0;
  /// Allocated memory through the step as a step function: its change points in time order, equal
  /// neighbours merged (memory_timeline.h); its largest value is peak_memory_bytes. Empty unless asked
  /// for (engine::EngineOptions::record_memory_timeline).
  std::vector<MemoryPoint> memory_timeline = {};
  friend bool operator==(const DeviceReport&, const DeviceReport&) = default;
};

struct LinkReport {
  std::string id;
  std::int64_t bytes = 0;    ///< both directions
  double busy_s = 0;         ///< time with at least one transfer on it
};

/// The data-parallel replicas that run alike (the same microbatch count on GPUs of the same kinds) and
/// what each of their pipeline stages did (`replica_classes` of simulate --json; docs/mixed-clusters.md,
/// "Uneven batch shares"). A report holds classes only where replicas run apart: two or more.
struct ReplicaClassReport {
  std::vector<int> replicas;  ///< data-parallel ranks, ascending
  int microbatches = 0;       ///< each replica's
  /// By pipeline rank: the GPU that stands for the class's stage (the slowest of a slowdown what-if, else
  /// the first), with its figures; its memory timeline is left out.
  std::vector<DeviceReport> stages;
  std::vector<std::string> gpu_kinds;  ///< by pipeline rank: the stage's GPU kind ("h100-sxm")
  int gpus_per_stage = 0;              ///< the class's GPUs at each stage (every replica's)
  friend bool operator==(const ReplicaClassReport&, const ReplicaClassReport&) = default;
};

/// What a report shows of its plan, and the whole plan in the plan file's schema (plan::plan_json).
struct PlanSummary {
  /// The plan as the plan file's JSON object, which saved as a file loads back as that plan; the report's
  /// `plan` (none when empty). The fields below are read from it.
  std::string document;
  int tensor = 1, pipeline = 1, data = 1, virtual_stages = 1, microbatches = 1, micro_batch_size = 1;
  int global_batch = 1;
  std::string schedule;
  std::string recompute;
  int zero = 0;
  std::string precision;
  std::string attention;
  std::string attention_kernel;  ///< the plan's FlashAttention generation; empty: the GPU kind's default
  int context = 1, expert = 1, expert_tensor = 1;
  /// Mixture of experts: the busiest expert rank's routed tokens over the uniform share (1: uniform;
  /// routing_imbalance, or a capacity factor's cap on it).
  double expert_load = 1;
};

struct Report {
  double step_time_s = 0;
  double bubble_fraction = 0;   ///< idle share of all devices' time in the step
  double bubble_rate = 0;       ///< Zero Bubble's: 1 - pass time / (ranks x longest first-to-last-pass span)
  /// The share of all devices' time in the step their compute streams waited on in-layer collectives
  /// (DeviceReport::communication_wait_s): exposed communication that bubble_fraction, which counts
  /// only a free stream as idle, does not show.
  double communication_wait_fraction = 0;
  double tflops_per_gpu = 0;    ///< model FLOPs (no recomputation) / step time / GPUs, in TFLOP/s
  double hardware_tflops_per_gpu = 0;  ///< FLOPs executed, recomputation included
  double mfu = 0;               ///< model FLOPs / (step time x GPUs x peak)
  std::int64_t peak_memory_bytes = 0;  ///< the largest over devices
  bool oom = false;
  std::vector<DeviceReport> devices;
  std::vector<LinkReport> links;
  PlanSummary plan;
  /// Where replicas run apart (uneven shares, GPUs of other kinds), each class in order of its first
  /// replica; empty where every replica runs alike.
  std::vector<ReplicaClassReport> replica_classes = {};
};

}  // namespace mpsim::trace
