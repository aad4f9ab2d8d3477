#include "sim/engine/collective_tuning.h"

#include <algorithm>

namespace mpsim::engine {

double collective_efficiency(topology::PathClass path, bool nvls) noexcept {
  switch (path) {
    case topology::PathClass::NVL: return nvls ? kNvlsEfficiency : kNvlinkRingEfficiency;
    case topology::PathClass::NET: return kNetworkEfficiency;
    case topology::PathClass::Local:
    case topology::PathClass::PIX:
    case topology::PathClass::PXB:
    case topology::PathClass::PHB:
    case topology::PathClass::SYS: break;
  }
  return 1.0;
}

bool nvls_eligible(const topology::Cluster& cluster, const std::vector<topology::DeviceId>& group) {
  if (static_cast<int>(group.size()) < kNvlsMinGpus) return false;
  const int node = cluster.device(group.front()).node;
  for (const topology::DeviceId d : group) {
    if (cluster.device(d).node != node) return false;
    if (cluster.gpu_kind_of(d).nvlink_links < kNvlsMinNvlinkPorts) return false;
  }
  const auto& devices = cluster.devices();
  return std::any_of(devices.begin(), devices.end(), [&](const topology::Device& d) {
    return d.kind == topology::DeviceKind::NvSwitch && d.node == node;
  });
}

}  // namespace mpsim::engine
