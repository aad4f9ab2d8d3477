#pragma once
/// How NCCL's topology attributes translate into bandwidths: PCIe `link_speed`/`link_width`
/// and the inter-socket link of a `<cpu arch vendor familyid modelid>`.
#include <string>
#include <string_view>

#include "sim/core/units.h"

namespace mpsim::topology::import {

/// One direction of a PCIe link as NCCL's XML describes it. NCCL itself models a link as
/// `width * speed / 80` GB/s with `speed` from its kvDictPciGen table (src/graph/topo.cc: 16 GT/s
/// → 120, so a Gen4 x16 link is 24 GB/s). We read the same `link_speed` strings but use the raw
/// per-direction rates of the catalog and stas00/ml-engineering's PCIe table (x16: Gen3 16,
/// Gen4 31, Gen5 63, Gen6 121 GB/s), so that an imported Gen4 x16 link equals the a100 kind's
/// "31 GB/s" PCIe figure. `width` 0 counts as 16 and an unknown or missing speed as 8 GT/s,
/// NCCL's own fallbacks.
struct PcieLink {
  BytesPerSec bandwidth;
  bool speed_known = true;  ///< false when the fallback was used
};
[[nodiscard]] PcieLink pcie_link(std::string_view link_speed, int width);

/// A `<cpu>` element's identity, as NCCL's ncclTopoAddCpu reads it.
struct CpuModel {
  std::string arch;    ///< x86_64, arm64, ppc64
  std::string vendor;  ///< GenuineIntel, AuthenticAMD, CentaurHauls
  int family = -1;
  int model = -1;
};

struct InterCpuBandwidth {
  BytesPerSec bandwidth;
  std::string_view nccl_name;  ///< the NCCL constant it comes from, e.g. "AMD_ZEN12_BW"
};

/// NCCL's inter-socket bandwidth for this CPU (ncclTopoGetInterCpuBw, NVIDIA/nccl src/graph/topo.cc,
/// constants in src/graph/topo.h). Where NCCL has no figure (an unknown vendor, where it assumes
/// no limit), the answer is kDefaultSmpBandwidth's SKL_QPI_BW.
[[nodiscard]] InterCpuBandwidth inter_cpu_bandwidth(const CpuModel& cpu);

}  // namespace mpsim::topology::import
