#pragma once
/// Holding a prediction to account: a predicted step (the simulator's Report and Timeline) against a
/// measured one (the executor's), in the terms of `compare --json` (docs/closed-loop.md, "`mpsim compare`").
///
/// Pure functions of their inputs: no I/O, deterministic output (kinds in SpanKind order, devices in
/// the predicted report's order, then measured-only devices in the measured report's order).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::trace {

/// Durations of the spans of one kind in one timeline, in seconds.
struct DurationStats {
  std::int64_t count = 0;
  double total_s = 0;
  double mean_s = 0;    ///< 0 when count is 0
  double median_s = 0;  ///< the middle value, or the mean of the two middle values; 0 when count is 0
};

/// Statistics of a list of span durations (nanoseconds). O(n log n).
[[nodiscard]] DurationStats duration_stats(std::vector<std::int64_t> durations_ns);

/// Seconds from the first span's start to the last span's end (0 for an empty timeline): the step
/// time of a trace that carries no report.
[[nodiscard]] double timeline_extent_s(const Timeline& timeline) noexcept;

struct KindComparison {
  SpanKind kind = SpanKind::Forward;
  DurationStats predicted;
  DurationStats measured;
  /// predicted / measured of the mean and of the median: above 1 the simulator overestimates the
  /// kind, below 1 it underestimates it. Absent when either side has no span of the kind or the
  /// measured value is 0.
  std::optional<double> mean_ratio;
  std::optional<double> median_ratio;
};

/// One op of the Program seen in both timelines on the same device (spans matched by device, op
/// index and kind: args.op of the trace).
struct OpComparison {
  std::string device;  ///< "node0/gpu3"
  std::int32_t op = 0;  ///< index in the device's pipeline rank's stream
  SpanKind kind = SpanKind::Forward;
  std::int32_t microbatch = -1;
  std::int32_t chunk = -1;
  double predicted_s = 0;
  double measured_s = 0;
};

/// One device of either report; a side that does not list the device leaves its values absent.
struct DeviceComparison {
  std::string id;
  int stage = 0;
  std::optional<double> predicted_busy_s;
  std::optional<double> measured_busy_s;
  std::optional<double> predicted_bubble_fraction;
  std::optional<double> measured_bubble_fraction;
};

/// One pipeline stage: the mean over its devices on each side (absent when a side has none there).
struct StageComparison {
  int stage = 0;
  int predicted_devices = 0;
  int measured_devices = 0;
  std::optional<double> predicted_busy_s;
  std::optional<double> measured_busy_s;
  std::optional<double> predicted_idle_fraction;
  std::optional<double> measured_idle_fraction;
};

/// One side of a comparison: a report, and the timeline when the input was a trace (a bare report
/// has none, and then contributes no per-kind statistics).
struct StepRecord {
  Report report;
  std::optional<Timeline> timeline;
};

struct Comparison {
  double predicted_step_time_s = 0;
  double measured_step_time_s = 0;
  /// |predicted - measured| / measured; absent when the measured step time is not positive.
  std::optional<double> step_time_error;
  double predicted_bubble_fraction = 0;
  double measured_bubble_fraction = 0;
  /// Every kind present in at least one timeline, in SpanKind order. Empty when neither input has a
  /// timeline.
  std::vector<KindComparison> per_kind;
  std::vector<DeviceComparison> devices;
  /// Per pipeline stage, from `devices` (those of a known stage), by stage.
  std::vector<StageComparison> stages;
  /// Ops both timelines show (0 when either has no op identities), the median of predicted / measured
  /// over those with a positive measured time, and the ones off by the most seconds, largest first
  /// (at most kWorstOps; ties by device, then op).
  std::int64_t matched_ops = 0;
  std::optional<double> op_median_ratio;
  std::vector<OpComparison> worst_ops;
};
inline constexpr std::size_t kWorstOps = 10;

/// Compares a predicted step with a measured one. Devices are matched by id; when the two reports share
/// no id at all (one names its devices differently), they are matched by position instead, and the
/// predicted id is kept. O(spans log spans + devices²).
[[nodiscard]] Comparison compare(const StepRecord& predicted, const StepRecord& measured);

/// The `compare --json` object (docs/closed-loop.md, "`mpsim compare`"):
/// {"step_time_error", "predicted_step_time_s", "measured_step_time_s", "predicted_bubble_fraction",
///  "measured_bubble_fraction", "per_kind": {"forward": {"predicted_count", "measured_count",
///  "predicted_mean_s", "measured_mean_s", "mean_ratio", "predicted_median_s", "measured_median_s",
///  "median_ratio", "predicted_total_s", "measured_total_s"}, ...}, "devices": [{"id", "stage",
///  "predicted_busy_s", "measured_busy_s", "predicted_bubble_fraction", "measured_bubble_fraction"}],
///  "stages": [{"stage", "predicted_devices", "measured_devices", "predicted_busy_s", "measured_busy_s",
///  "predicted_idle_fraction", "measured_idle_fraction"}],
///  "per_op": {"matched": N, "median_ratio", "worst": [{"device", "op", "kind", "mb", "chunk", "predicted_s",
///  "measured_s"}]}}.
/// Absent values are null.
[[nodiscard]] nlohmann::ordered_json comparison_json(const Comparison& comparison);

}  // namespace mpsim::trace
