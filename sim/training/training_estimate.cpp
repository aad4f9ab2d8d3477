#include "sim/training/training_estimate.h"

#include <cmath>

#include "sim/training/checkpoint_restart.h"

namespace mpsim::training {

TrainingEstimate estimate_training(const TrainingJob& job, const TrainingAssumptions& assumptions) {
  TrainingEstimate e;
  e.tokens = job.tokens;
  e.steps = static_cast<std::int64_t>(std::ceil(job.tokens / static_cast<double>(job.tokens_per_step)));
  e.compute = TimeNs::seconds(job.step_time.to_seconds() * static_cast<double>(e.steps));
  const double gpus = job.gpus;
  e.mtbf = TimeNs::seconds(assumptions.gpu_hours_per_interruption * 3600.0 / gpus);
  // Every GPU writes its share of the checkpoint at once.
  e.checkpoint_write = transfer_time(job.checkpoint_bytes, assumptions.checkpoint_bandwidth_per_gpu * gpus);
  e.checkpoint_interval = daly_interval(e.checkpoint_write, e.mtbf);
  const TimeNs with_failures =
      expected_wall_time(e.compute, e.checkpoint_interval, e.checkpoint_write, assumptions.restart, e.mtbf);
  // Planned interruptions cost a restart each and no lost work: a share R / M_planned of the time.
  const double planned_mtbf_s = assumptions.gpu_hours_per_planned_restart * 3600.0 / gpus;
  e.wall_time = TimeNs::seconds(with_failures.to_seconds() / (1 - assumptions.restart.to_seconds() / planned_mtbf_s));
  e.expected_interruptions = e.wall_time.to_seconds() / e.mtbf.to_seconds();
  e.gpu_hours = e.wall_time.to_seconds() / 3600.0 * gpus;
  if (assumptions.gpu_hour_price) e.cost = e.gpu_hours * *assumptions.gpu_hour_price;
  e.effective_time_fraction = e.compute.to_seconds() / e.wall_time.to_seconds();
  if (job.gpu_tdp.in_watts() > 0) {
    const double tdp = job.gpu_tdp.in_watts();
    const double idle = assumptions.idle_power_fraction * tdp;
    const double computing = idle + (tdp - idle) * job.busy_fraction;
    const double host = assumptions.host_power_per_gpu.in_watts() * gpus;
    e.energy_joules = computing * e.compute.to_seconds() + idle * TimeNs(e.wall_time - e.compute).to_seconds() +
                      host * e.wall_time.to_seconds();
  }
  return e;
}

}  // namespace mpsim::training
