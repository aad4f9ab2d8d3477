#pragma once
/// What NCCL's kernels achieve on each link class, and which collective algorithm its tuner picks.
///
/// A collective's transfer never moves faster than `efficiency x` its route's bottleneck bandwidth
/// (the flow's rate cap; links are still shared max-min fairly with all other traffic). The
/// efficiencies are measured nccl-tests bus bandwidths over the links' nominal bandwidths, from
/// published runs (stas00/ml-engineering's network chapter, NVIDIA/nccl and nccl-tests issues; each
/// measurement named below; docs/simulator.md, "The network model").
#include <cstdint>

#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {

/// Ring (and tree) over NVLink, NCCL's Simple protocol, 8 GPUs, largest sizes: busbw / NVLink
/// bandwidth per GPU and direction. Rows: H100 370/450 = 0.822 (h100_nvls_vs_ring_statements,
/// NCCL_ALGO=RING), A100 234.89/300 = 0.783 (a100_allreduce_nccltests_stas, 16 GiB), B200
/// 682.2/900 = 0.758 (b200_nvls_by_gpu_count, 8 GPUs, NVLS off); their mean, 0.788, rounded.
inline constexpr double kNvlinkRingEfficiency = 0.79;

/// NVLink SHARP all-reduce: each GPU sends and receives S (n + 1) / n bytes through the switch; the
/// rate that gives the measured algbw, over the NVLink bandwidth. Rows: H200 NVLS at 5..8 GPUs,
/// 8 GiB (h200_nvls_by_gpu_count: algbw = busbw n / 2(n-1) = 258.8, 261.4, 268.3, 270.3 GB/s, so
/// algbw (n + 1) / n = 310.5, 305.0, 306.6, 304.1 GB/s), H100 8 GPUs algbw 275 GB/s
/// (h100_nvls_vs_ring_statements) = 309.4 GB/s; mean 307 / 450 = 0.682, rounded.
inline constexpr double kNvlsEfficiency = 0.68;

/// Ring over the network, per NIC: busbw / (NICs per node x NIC bandwidth). Rows: DGX A100 8x HDR
/// 192/200 = 0.96 (a100_dgx_hdr8), NDR 400 Gb/s 46-48 of 50 GB/s per NIC = 0.94 (h100_ndr_nic_rate,
/// midpoint), 2x DGX H100 ring ">380" of 400 = 0.95 (h100_2node_ndr8), 4x P6-B200 EFA 381.8/400 =
/// 0.955 (b200_4node_efa, 16 GiB); 0.95.
inline constexpr double kNetworkEfficiency = 0.95;

/// NCCL's tuner chose ring at 4 GPUs and NVLS from 5 on an 8x H200 node (h200_nvls_by_gpu_count).
inline constexpr int kNvlsMinGpus = 5;

/// NVLink SHARP needs third-generation NVSwitch, which serves GPUs of 18 NVLink 4 (or later) ports:
/// H100 and later; A100 (12 ports) and V100 (6) have none.
inline constexpr int kNvlsMinNvlinkPorts = 18;

/// The share of a route's bandwidth a collective's transfer reaches: the NVLink or network constant
/// above for a route of class NVL or NET (kNvlsEfficiency when `nvls`), 1 for PCIe and host paths
/// (no published figure: only the links limit them).
[[nodiscard]] double collective_efficiency(topology::PathClass path, bool nvls) noexcept;

/// Whether the GPUs of `group` can run an NVLS all-reduce: all on one node that has an NVSwitch,
/// of a kind with kNvlsMinNvlinkPorts ports or more, and at least kNvlsMinGpus of them.
[[nodiscard]] bool nvls_eligible(const topology::Cluster& cluster, const std::vector<topology::DeviceId>& group);

}  // namespace mpsim::engine
