#include "sim/topology/import/nccl_model.h"

#include <charconv>

#include "sim/topology/import/import_options.h"

namespace mpsim::topology::import {
namespace {

/// Raw per-direction bandwidth of one lane, by transfer rate: the x16 figures of
/// stas00/ml-engineering's PCIe table divided by 16 (Gen3: the catalog's 16 GB/s host link).
struct LaneRate {
  double gigatransfers;
  double gigabytes_per_lane;
};
constexpr LaneRate kLaneRates[] = {
    {2.5, 0.25}, {5.0, 0.5}, {8.0, 16.0 / 16}, {16.0, 31.0 / 16}, {32.0, 63.0 / 16}, {64.0, 121.0 / 16},
};
constexpr double kFallbackGigatransfers = 8.0;  // NCCL's kvDictPciGen default entry

}  // namespace

PcieLink pcie_link(std::string_view link_speed, int width) {
  // "16.0 GT/s PCIe" (current kernels), "16 GT/s" (kernel 5.6 and earlier), "32.0 GT/s".
  while (!link_speed.empty() && link_speed.front() == ' ') link_speed.remove_prefix(1);
  double gt = 0;
  const auto [ptr, ec] = std::from_chars(link_speed.data(), link_speed.data() + link_speed.size(), gt);
  const std::string_view rest(ptr, static_cast<std::size_t>(link_speed.data() + link_speed.size() - ptr));
  const bool parsed = ec == std::errc() && rest.substr(0, 5) == " GT/s";
  PcieLink out;
  out.speed_known = false;
  double per_lane = 0;
  for (const LaneRate& r : kLaneRates) {
    if (r.gigatransfers == kFallbackGigatransfers) per_lane = r.gigabytes_per_lane;
  }
  for (const LaneRate& r : kLaneRates) {
    if (parsed && r.gigatransfers == gt) {
      per_lane = r.gigabytes_per_lane;
      out.speed_known = true;
    }
  }
  const int lanes = width > 0 ? width : 16;
  out.bandwidth = BytesPerSec::gigabytes_per_sec(per_lane * lanes);
  return out;
}

InterCpuBandwidth inter_cpu_bandwidth(const CpuModel& cpu) {
  const auto gbps = [](double v) { return BytesPerSec::gigabytes_per_sec(v); };
  if (cpu.arch == "ppc64") return {gbps(32.0), "P9_BW"};
  if (cpu.arch == "arm64") return {gbps(6.0), "ARM_BW"};
  if (cpu.arch == "x86_64" && cpu.vendor == "GenuineIntel") {
    const int m = cpu.model;
    if (cpu.family == 6 && (m >= 0xCF || m == 0xAD || m == 0xAE || m == 0xAF)) return {gbps(40.0), "ERP_QPI_BW"};
    if (cpu.family == 6 && m >= 0x8F) return {gbps(22.0), "SRP_QPI_BW"};
    if (cpu.family == 6 && m >= 0x55) return {gbps(10.0), "SKL_QPI_BW"};
    return {gbps(6.0), "BDW_QPI_BW"};
  }
  if (cpu.arch == "x86_64" && cpu.vendor == "AuthenticAMD") {
    // CPUID family 1Ah = Zen 5, 19h = Zen 3/4, else Zen 1/2; 0xBF/0xAF are NCCL's older encodings.
    if (cpu.family == 26 || cpu.family == 0xBF) return {gbps(32.0), "AMD_ZEN5_BW"};
    if (cpu.family == 25 || cpu.family == 0xAF) return {gbps(24.0), "AMD_ZEN34_BW"};
    return {gbps(16.0), "AMD_ZEN12_BW"};
  }
  if (cpu.arch == "x86_64" && (cpu.vendor == "CentaurHauls" || cpu.vendor == "  Shanghai  ")) {
    if (cpu.family == 7 && cpu.model == 0x5B) return {gbps(9.0), "YONGFENG_ZPI_BW"};
    return {gbps(6.0), "ZPI_BW"};
  }
  return {kDefaultSmpBandwidth, "SKL_QPI_BW"};
}

}  // namespace mpsim::topology::import
