#include "sim/training/training_json.h"

#include <nlohmann/json.hpp>

namespace mpsim::training {

nlohmann::ordered_json training_json(const TrainingEstimate& e) {
  nlohmann::ordered_json j;
  j["tokens"] = e.tokens;
  j["steps"] = e.steps;
  j["wall_time_s"] = e.wall_time.to_seconds();
  j["gpu_hours"] = e.gpu_hours;
  j["cost"] = e.cost ? nlohmann::ordered_json(*e.cost) : nlohmann::ordered_json();
  j["energy_joules"] = e.energy_joules ? nlohmann::ordered_json(*e.energy_joules) : nlohmann::ordered_json();
  j["effective_time_fraction"] = e.effective_time_fraction;
  j["compute_s"] = e.compute.to_seconds();
  j["mtbf_s"] = e.mtbf.to_seconds();
  j["expected_interruptions"] = e.expected_interruptions;
  j["checkpoint_write_s"] = e.checkpoint_write.to_seconds();
  j["checkpoint_interval_s"] = e.checkpoint_interval.to_seconds();
  return j;
}

}  // namespace mpsim::training
