#pragma once
/// The topology file a profile becomes: the short form of docs/formats.md (one node, one "GPU" per
/// rank), whose numbers are the measured ones, and whose comments keep every raw measurement.
#include <cstdint>
#include <string>

#include "executor/profile/profiler.h"

namespace mpsim::executor::profile {

struct TopologyHeader {
  std::string name;           ///< cluster.name
  std::string command;        ///< the command line that measured it, for the comment
  std::string host;           ///< where it was measured
  std::string utc_time;       ///< when, ISO 8601
  std::int64_t memory_bytes = 0;  ///< memory capacity per rank
};

/// YAML text that `mpsim simulate` and `mpsim plan` load:
///   cluster: { name, nodes: 1, gpus_per_node: ranks,
///              gpu: { name, peak: { fp32: GEMM rate }, memory, memory_bandwidth, matmul_efficiency: 1.0 },
///              intra_node: { kind, bandwidth: β, latency: α } }     (intra_node only with several ranks)
/// matmul_efficiency is 1.0 because the measured GEMM rate already is what GEMMs reach. The intra-node
/// kind is `pcie` for the CPU backend (ranks share one memory system, like GPUs on one switch), and for
/// CUDA `nvswitch` when β exceeds 40 GB/s (faster than any PCIe generation in use), else `pcie`.
/// Numbers are written with 4 significant digits or better; times in whole nanoseconds.
[[nodiscard]] std::string calibrated_topology_yaml(const ProfileResult& result, const TopologyHeader& header);

}  // namespace mpsim::executor::profile
