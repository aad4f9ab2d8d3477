#pragma once
/// `--tokens N [--gpu-hour-price P] [--restart-time T] [--checkpoint-bandwidth B]
/// [--gpu-hours-per-interruption H]` on simulate and plan: the run asked for, as written, and the
/// estimate it gives from the numbers of one simulated step (training_estimate.h).
#include <cstdint>
#include <optional>
#include <string>

#include "sim/core/units.h"
#include "sim/training/training_estimate.h"

namespace mpsim::training {

/// The flags as written.
struct TrainingRequest {
  std::string tokens;  ///< "15T", "300B", "2.5e12"; empty: no estimate
  std::optional<double> gpu_hour_price;
  std::string restart;               ///< --restart-time, a time
  std::string checkpoint_bandwidth;  ///< --checkpoint-bandwidth, per GPU
  std::optional<double> gpu_hours_per_interruption;
};

/// What one simulated step of a plan tells the estimate (sim/engine/training_step.h reads it off the
/// cluster, model, plan and report).
struct TrainingStep {
  std::string model_name;    ///< named in the error of a model without a sequence length
  std::int64_t seq_len = 0;  ///< tokens per sample; <= 0: unknown
  std::int64_t global_batch = 0;
  TimeNs step_time;
  int gpus = 0;              ///< every GPU of the cluster is the job's
  double busy_fraction = 0;  ///< the GPUs' mean busy share of a step
  Watts gpu_tdp;             ///< summed over the GPUs; zero: some TDP unknown (no energy)
  Bytes checkpoint_bytes;
};

/// A token count: a number with an optional K, M, B (or G) or T suffix. Throws InputError naming --tokens.
[[nodiscard]] double parse_token_count(const std::string& text);

/// The run `step` implies; nothing without `request.tokens`. Throws InputError naming the flag for a bad
/// value, a price without tokens or a model without a sequence length.
[[nodiscard]] std::optional<TrainingEstimate> estimate_request(const TrainingRequest& request,
                                                               const TrainingStep& step);

}  // namespace mpsim::training
