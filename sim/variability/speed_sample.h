#pragma once
/// One sampled step's speeds: a time multiplier per GPU of the job and per link (speed_spread.h), drawn
/// from (seed, sample index) alone (random_stream.h), so N samples are the same N whatever the
/// thread count or order, and every plan compared meets the same N sampled clusters.
#include <cstdint>
#include <vector>

#include "sim/topology/cluster.h"
#include "sim/variability/speed_spread.h"

namespace mpsim::variability {

/// `--seed` when not given.
inline constexpr std::uint64_t kDefaultSeed = 0;

/// What `--samples N --gpu-speed-spread S [--link-speed-spread S] [--seed K]` asks for.
struct SamplingRequest {
  int samples = 0;  ///< zero: no sampling (the unsampled report alone)
  SpeedSpread spread;
  std::uint64_t seed = kDefaultSeed;
  [[nodiscard]] bool active() const noexcept { return samples > 0; }
};

struct SpeedSample {
  /// One per entry of Cluster::gpus() (the job's GPUs), in that order; all 1 without a GPU spread.
  std::vector<double> gpu_time_multipliers;
  /// One per entry of Cluster::links(), in that order; all 1 without a link spread.
  std::vector<double> link_time_multipliers;
};

/// Sample `sample` of `seed`: m = exp(σ z) for each GPU (stream GpuSpeeds) and each link (LinkSpeeds).
/// The GPUs' draws do not depend on the link spread, nor the links' on the GPU spread.
[[nodiscard]] SpeedSample draw_speed_sample(const topology::Cluster& cluster, const SpeedSpread& spread,
                                            std::uint64_t seed, std::uint64_t sample);

/// `cluster` with `sample` applied on top of its own what-ifs: each GPU's slowdown multiplied by its
/// multiplier, each link's bandwidth divided by its own (latency unchanged). Throws
/// std::invalid_argument when `sample` was drawn for a cluster of other GPUs or links.
[[nodiscard]] topology::Cluster with_speed_sample(const topology::Cluster& cluster, const SpeedSample& sample);

/// The same in place: `target`, a copy of `base` that earlier samples may have changed, gets `base`'s
/// speeds with `sample` applied (every job GPU's slowdown and, with a link sample, every link's rate
/// set again), so one copy serves sample after sample.
void apply_speed_sample(topology::Cluster& target, const topology::Cluster& base, const SpeedSample& sample);

}  // namespace mpsim::variability
