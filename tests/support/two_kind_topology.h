#pragma once
// A topology of two GPU kinds for the mixed-cluster tests: `fast` nodes of 4 H100 then `slow` nodes of
// 4 A100, NVSwitch inside each, one InfiniBand switch between them.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpsim::testing {

/// The topology's YAML (no name); each node's NICs at its kind's rate, so a route between the kinds runs
/// at the slower NIC. A count of 0 leaves that group out.
inline std::string two_kind_topology_yaml(int fast, int slow, const std::string& slow_nic = "200 Gb/s",
                                          const std::string& fast_nic = "200 Gb/s") {
  const auto node = [](const char* gpu, const char* nvlink, const std::string& nic) {
    return fmt::format(
        "{{ gpu: {}, gpus: 4, nvswitches: 1, nics: {{ count: 4, bandwidth: \"{}\", latency: \"2.5 us\" }},\n"
        "      links: [ {{ kind: nvlink, from: \"gpu*\", to: nvswitch0, bandwidth: \"{}\", latency: \"1 us\" }},\n"
        "               {{ kind: pcie, pairs: [[gpu0, nic0], [gpu1, nic1], [gpu2, nic2], [gpu3, nic3]], "
        "bandwidth: \"32 GB/s\" }} ] }}",
        gpu, nic, nvlink);
  };
  std::vector<std::string> groups;
  if (fast > 0) groups.push_back(fmt::format("{{ template: fast, count: {} }}", fast));
  if (slow > 0) groups.push_back(fmt::format("{{ template: slow, count: {} }}", slow));
  return fmt::format("node_templates:\n  fast: {}\n  slow: {}\nnodes: [{}]\n"
                     "fabric: {{ kind: single-switch, network: infiniband }}\n",
                     node("h100-sxm", "450 GB/s", fast_nic), node("a100-80gb", "300 GB/s", slow_nic),
                     fmt::join(groups, ", "));
}

}  // namespace mpsim::testing
