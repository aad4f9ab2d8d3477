#pragma once
/// From one step to a whole training run: `--tokens N` on simulate and plan (the report's `training`
/// object; docs/simulator.md, "Training time: `--tokens`").
///
/// The run computes ceil(N / tokens per step) steps of the predicted step time. Around that work the
/// job is interrupted at random (a per-GPU rate, so a job's mean time between interruptions falls as
/// 1 / GPUs), writes checkpoints at Daly's optimum interval and, after each interruption, restarts
/// and redoes the work since its last checkpoint (checkpoint_restart.h). Planned interruptions
/// (maintenance) cost a restart each. Energy: each GPU draws its TDP while busy and a fraction of
/// it while idle, the host around it a fixed power the whole time.
#include <cstdint>
#include <optional>

#include "sim/core/units.h"

namespace mpsim::training {

/// Llama 3's 54-day snapshot of pre-training on 16,384 H100 (Dubey et al., "The Llama 3 Herd of
/// Models", 2024, section 3.3.4): 466 job interruptions, 419 of them unexpected, 47 planned.
inline constexpr double kLlama3SnapshotGpuHours = 54.0 * 24.0 * 16384.0;
inline constexpr double kLlama3UnexpectedInterruptions = 419;
inline constexpr double kLlama3PlannedInterruptions = 47;

/// What the estimate assumes beyond the step; every default is sourced.
struct TrainingAssumptions {
  /// Currency per GPU-hour; nothing: no cost.
  std::optional<double> gpu_hour_price;
  /// GPU-hours between unexpected interruptions of a job, per GPU: Llama 3's snapshot, 50,677.
  double gpu_hours_per_interruption = kLlama3SnapshotGpuHours / kLlama3UnexpectedInterruptions;
  /// GPU-hours between planned interruptions (maintenance), per GPU: Llama 3's snapshot, 451,770.
  double gpu_hours_per_planned_restart = kLlama3SnapshotGpuHours / kLlama3PlannedInterruptions;
  /// Storage write bandwidth per GPU of the job. Llama 3's Tectonic file system sustained 2 TB/s for
  /// 16,384 GPUs (section 3.3.1): 122 MB/s each.
  BytesPerSec checkpoint_bandwidth_per_gpu = BytesPerSec::bytes_per_sec(2e12 / 16384.0);
  /// Relaunch after an interruption (scheduling, start-up, reading the checkpoint): 10 minutes, the
  /// restart time of Daly's (2006) worked examples.
  TimeNs restart = TimeNs::seconds(600);
  /// An idle GPU's draw over its TDP: about 70 W of an H100's 700 W (nvidia-smi of an idle H100 SXM).
  double idle_power_fraction = 0.1;
  /// The host around each GPU (CPUs, memory, NICs, switches, fans): DGX H100's 10.2 kW maximum system
  /// power less its 8 x 700 W GPUs, per GPU (NVIDIA DGX H100 datasheet).
  Watts host_power_per_gpu = Watts::watts((10200.0 - 8 * 700.0) / 8);
};

/// What the step and the job say.
struct TrainingJob {
  double tokens = 0;               ///< to train on
  std::int64_t tokens_per_step = 0;  ///< global batch x sequence length
  TimeNs step_time;
  int gpus = 0;
  double busy_fraction = 0;        ///< the GPUs' mean busy share of a step
  Watts gpu_tdp;                   ///< summed over the job's GPUs; zero: some TDP unknown (no energy)
  Bytes checkpoint_bytes;          ///< one checkpoint: the weights and the optimizer state, once
};

struct TrainingEstimate {
  double tokens = 0;
  std::int64_t steps = 0;
  TimeNs compute;                 ///< steps x step time: the productive time
  TimeNs mtbf;                    ///< the job's mean time between unexpected interruptions
  TimeNs checkpoint_write;        ///< one checkpoint
  TimeNs checkpoint_interval;     ///< compute between two checkpoints (Daly's optimum)
  TimeNs wall_time;               ///< expected, interruptions, restarts and checkpoints included
  double expected_interruptions = 0;  ///< unexpected ones over the wall time
  double gpu_hours = 0;
  std::optional<double> cost;     ///< with a price
  std::optional<double> energy_joules;  ///< with every GPU's TDP
  double effective_time_fraction = 0;   ///< compute / wall time (Llama 3's "effective training time")
};

/// Preconditions: tokens > 0, tokens_per_step > 0, step_time > 0, gpus > 0.
[[nodiscard]] TrainingEstimate estimate_training(const TrainingJob& job, const TrainingAssumptions& assumptions);

}  // namespace mpsim::training
