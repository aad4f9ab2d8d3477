#pragma once
/// `--tokens N [--gpu-hour-price P]` on simulate and plan: the whole run from one step
/// (sim/training/training_estimate.h), as the report's `training` object and as text.
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"
#include "sim/training/training_estimate.h"

namespace CLI {
class App;
}  // namespace CLI

namespace mpsim::cli {

struct TrainingFlags {
  std::string tokens;  ///< "15T", "300B", "2.5e12"; empty: no estimate
  std::optional<double> gpu_hour_price;
  std::string restart;               ///< --restart-time, a time
  std::string checkpoint_bandwidth;  ///< --checkpoint-bandwidth, per GPU
  std::optional<double> gpu_hours_per_interruption;
};

/// Registers --tokens, --gpu-hour-price, --restart-time, --checkpoint-bandwidth and
/// --gpu-hours-per-interruption on `command`, filling `flags` (kept alive by the caller).
void add_training_options(CLI::App& command, TrainingFlags& flags);

/// A token count: a number with an optional K, M, B (or G) or T suffix. Throws InputError naming --tokens.
[[nodiscard]] double parse_token_count(const std::string& text);

/// The run `report`'s step implies on `cluster` (every GPU of it is the job's); nothing without
/// --tokens. Throws InputError naming the flag for a bad value or a model without a sequence length.
[[nodiscard]] std::optional<training::TrainingEstimate> training_for(const TrainingFlags& flags,
                                                                     const topology::Cluster& cluster,
                                                                     const model::Model& model, const plan::Plan& plan,
                                                                     const trace::Report& report);

/// The report's `training` object (and the figures behind it; docs/simulator.md, "Training time: `--tokens`").
[[nodiscard]] nlohmann::ordered_json training_json(const training::TrainingEstimate& e);
/// Three lines: time and GPU-hours (cost, energy), then what the wall time holds.
[[nodiscard]] std::string training_text(const training::TrainingEstimate& e);

}  // namespace mpsim::cli
