#include "sim/variability/speed_sample.h"

#include <cmath>
#include <stdexcept>

#include "sim/core/random_stream.h"

namespace mpsim::variability {
namespace {

std::vector<double> lognormal_multipliers(std::size_t count, double sigma, std::uint64_t seed, std::uint64_t sample,
                                          RandomStreamId stream) {
  std::vector<double> out(count, 1.0);
  if (sigma == 0) return out;  // exp(0 z) is 1 exactly: no draws needed
  RandomStream random(seed, sample, stream);
  for (double& m : out) m = std::exp(sigma * random.standard_normal());
  return out;
}

}  // namespace

SpeedSample draw_speed_sample(const topology::Cluster& cluster, const SpeedSpread& spread, std::uint64_t seed,
                              std::uint64_t sample) {
  return {lognormal_multipliers(cluster.gpus().size(), spread.gpu, seed, sample, RandomStreamId::GpuSpeeds),
          lognormal_multipliers(cluster.links().size(), spread.link, seed, sample, RandomStreamId::LinkSpeeds)};
}

void apply_speed_sample(topology::Cluster& target, const topology::Cluster& base, const SpeedSample& sample) {
  if (sample.gpu_time_multipliers.size() != base.gpus().size() ||
      sample.link_time_multipliers.size() != base.links().size() || target.gpus() != base.gpus() ||
      target.links().size() != base.links().size()) {
    throw std::invalid_argument("apply_speed_sample: the sample was drawn for another cluster");
  }
  for (std::size_t i = 0; i < base.gpus().size(); ++i) {
    const topology::DeviceId gpu = base.gpus()[i];
    target.set_slowdown(gpu, base.device(gpu).slowdown * sample.gpu_time_multipliers[i]);
  }
  for (std::size_t i = 0; i < base.links().size(); ++i) {
    const topology::LinkId id{static_cast<std::uint32_t>(i)};
    const topology::Link& link = base.link(id);
    const double m = sample.link_time_multipliers[i];
    target.set_link_rate(id, BytesPerSec::bytes_per_sec(link.bandwidth.in_bytes_per_sec() / m), link.latency);
  }
}

topology::Cluster with_speed_sample(const topology::Cluster& cluster, const SpeedSample& sample) {
  topology::Cluster out = cluster;
  apply_speed_sample(out, cluster, sample);
  return out;
}

}  // namespace mpsim::variability
