#pragma once
/// The report's `training` object (docs/simulator.md, "Training time: `--tokens`").
#include <nlohmann/json_fwd.hpp>

#include "sim/training/training_estimate.h"

namespace mpsim::training {

/// Every figure of `e`, times in seconds; `cost` and `energy_joules` null when unknown.
[[nodiscard]] nlohmann::ordered_json training_json(const TrainingEstimate& e);

}  // namespace mpsim::training
