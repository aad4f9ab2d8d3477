#pragma once
/// `--tokens N [--gpu-hour-price P]` on simulate and plan: the flags (sim/training/training_request.h
/// holds them and the estimate) and the run as text.
#include <string>

#include "sim/training/training_estimate.h"
#include "sim/training/training_request.h"

namespace CLI {
class App;
}  // namespace CLI

namespace mpsim::cli {

/// Registers --tokens, --gpu-hour-price, --restart-time, --checkpoint-bandwidth and
/// --gpu-hours-per-interruption on `command`, filling `request` (kept alive by the caller).
void add_training_options(CLI::App& command, training::TrainingRequest& request);

/// Three lines: time and GPU-hours (cost, energy), then what the wall time holds.
[[nodiscard]] std::string training_text(const training::TrainingEstimate& e);

}  // namespace mpsim::cli
