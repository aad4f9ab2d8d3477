#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/topology/import/nvidia_smi_matrix.h"
#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology::import {
namespace {

using testing::class_of;
using testing::data_path;
using testing::gbps;
using testing::import_sample;
using testing::only_node;
using testing::route;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string cluster_name(const TopoDevice& d) {
  return fmt::format("node0/{}{}", d.kind == TopoDeviceKind::Gpu ? "gpu" : "nic", d.index);
}

/// The route class the imported cluster should give for a matrix entry. NODE and PHB both cross
/// the CPU's host bridge, which the cluster models as one CPU per NUMA node.
std::string expected_class(const TopoCell& cell) {
  switch (cell.entry) {
    case TopoEntry::Self: return "LOC";
    case TopoEntry::NvLink: return "NVL";
    case TopoEntry::Pix: return "PIX";
    case TopoEntry::Pxb: return "PXB";
    case TopoEntry::Phb:
    case TopoEntry::Node: return "PHB";
    case TopoEntry::Sys: return "SYS";
  }
  return "?";
}

struct Sample {
  const char* file;
  const char* gpu;
};

class MatrixSamples : public ::testing::TestWithParam<Sample> {};

// The imported cluster (every NIC kept) reproduces every entry of the matrix it came from, GPU and NIC alike.
TEST_P(MatrixSamples, RoutesReproduceTheMatrix) {
  const Sample s = GetParam();
  const TopoMatrix m = parse_topo_matrix(read(data_path(s.file)), s.file);
  const Cluster cluster = build_cluster(import_sample(s.file, s.gpu, true));
  for (std::size_t r = 0; r < m.devices.size(); ++r) {
    for (std::size_t c = 0; c < m.devices.size(); ++c) {
      if (r == c) continue;
      EXPECT_EQ(class_of(cluster, cluster_name(m.devices[r]), cluster_name(m.devices[c])),
                expected_class(m.cells[r][c]))
          << s.file << ": " << m.field(r, c) << " is " << m.cells[r][c].text();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, MatrixSamples,
                         ::testing::Values(Sample{"dgx-a100.topo.txt", "a100-80gb"},
                                           Sample{"dgx-h100.topo.txt", "h100-sxm"},
                                           Sample{"pcie-box.topo.txt", "a100-40gb"},
                                           Sample{"p3.topo.txt", "v100-16gb"}),
                         [](const auto& info) {
                           std::string name = info.param.file;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(NvidiaSmiImport, DgxA100IsAnNvSwitchSystem) {
  const TopologySpec spec = import_sample("dgx-a100.topo.txt", "a100-80gb", true);
  EXPECT_EQ(spec.name, "dgx-a100");
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.gpu_kind, "a100-80gb");
  EXPECT_EQ(node.gpus, 8);
  EXPECT_EQ(node.nvswitches, 1);
  EXPECT_EQ(node.cpus, 2);
  EXPECT_EQ(node.nics.count, 10);
  EXPECT_DOUBLE_EQ(node.nics.bandwidth.in_bytes_per_sec(), 25e9);  // the 200 Gb/s default
  EXPECT_FALSE(spec.fabric.has_value());
  ASSERT_FALSE(node.links.empty());
  EXPECT_EQ(node.links.front().from, std::vector<std::string>{"gpu*"});
  EXPECT_EQ(node.links.front().to, std::vector<std::string>{"nvswitch0"});
  EXPECT_EQ(node.links.front().count, 12);

  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, "node0/gpu0", "node0/gpu5");
  EXPECT_EQ(to_string(r.path_class), "NVL");
  EXPECT_DOUBLE_EQ(gbps(r), 12 * 25.0);
  ASSERT_EQ(r.hops.size(), 3u);
  EXPECT_EQ(cluster.device(r.hops[1]).name, "node0/nvswitch0");
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Route ab = route(cluster, fmt::format("node0/gpu{}", a), fmt::format("node0/gpu{}", b));
      EXPECT_EQ(to_string(ab.path_class), "NVL");
      EXPECT_DOUBLE_EQ(gbps(ab), 300.0);
    }
  }
  // GPU-direct RDMA stays inside the GPU pair's PCIe tree: two bridges, PCIe Gen4 x16.
  const Route rdma = route(cluster, "node0/gpu0", "node0/nic1");
  EXPECT_EQ(to_string(rdma.path_class), "PXB");
  EXPECT_DOUBLE_EQ(gbps(rdma), 31.0);
  EXPECT_EQ(class_of(cluster, "node0/gpu0", "node0/nic8"), "SYS");
  // The defaults are written into `source`, with the NIC names of the legend.
  EXPECT_NE(spec.source.find("nic9 = mlx5_9"), std::string::npos) << spec.source;
  EXPECT_NE(spec.source.find("SKL_QPI_BW"), std::string::npos) << spec.source;
}

TEST(NvidiaSmiImport, DgxH100MapsRailNicsThroughTheLegend) {
  EXPECT_EQ(only_node(import_sample("dgx-h100.topo.txt", "h100")).nics.count, 8);  // the 8 rails by default
  const TopologySpec spec = import_sample("dgx-h100.topo.txt", "h100", true);
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.gpu_kind, "h100-sxm");  // the alias resolves to the catalog id
  EXPECT_EQ(node.nvswitches, 1);
  EXPECT_EQ(node.nics.count, 12);
  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, "node0/gpu2", "node0/gpu7");
  EXPECT_EQ(to_string(r.path_class), "NVL");
  EXPECT_DOUBLE_EQ(gbps(r), 18 * 25.0);
  EXPECT_EQ(class_of(cluster, "node0/gpu1", "node0/nic3"), "PIX");  // GPU1's rail NIC is NIC3 (mlx5_3)
  EXPECT_EQ(class_of(cluster, "node0/gpu1", "node0/nic0"), "PHB");
  EXPECT_DOUBLE_EQ(gbps(route(cluster, "node0/gpu1", "node0/nic3")), 63.0);
}

TEST(NvidiaSmiImport, P3CubeMeshHasDirectNvLinksAndGpusDoNotForward) {
  const TopologySpec spec = import_sample("p3.topo.txt", "v100-16gb");
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.nvswitches, 0);
  EXPECT_EQ(node.cpus, 2);
  EXPECT_EQ(node.nics.count, 0);
  int nvlink_pairs = 0;
  for (const LinkSpec& l : node.links) {
    if (l.kind == LinkKind::NvLink) nvlink_pairs += static_cast<int>(l.pairs.size());
  }
  EXPECT_EQ(nvlink_pairs, 16);

  const Cluster cluster = build_cluster(spec);
  const Route nv2 = route(cluster, "node0/gpu0", "node0/gpu3");
  EXPECT_EQ(to_string(nv2.path_class), "NVL");
  EXPECT_EQ(nv2.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(gbps(nv2), 2 * 25.0);
  EXPECT_DOUBLE_EQ(gbps(route(cluster, "node0/gpu0", "node0/gpu1")), 25.0);
  // gpu0 and gpu5 share no NVLink; gpu1 is NVLinked to both but does not forward.
  const Route sys = route(cluster, "node0/gpu0", "node0/gpu5");
  EXPECT_EQ(to_string(sys.path_class), "SYS");
  std::vector<std::string> hops;
  for (const DeviceId d : sys.hops) hops.push_back(cluster.device(d).name);
  EXPECT_EQ(hops, (std::vector<std::string>{"node0/gpu0", "node0/cpu0", "node0/cpu1", "node0/gpu5"}));
  EXPECT_DOUBLE_EQ(gbps(sys), 10.0);  // the SMP link at the SKL_QPI_BW default is the bottleneck
}

TEST(NvidiaSmiImport, PcieBoxWithoutNvLink) {
  const TopologySpec spec = import_sample("pcie-box.topo.txt", "a100-40gb", true);
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.nvswitches, 0);
  EXPECT_EQ(node.cpus, 2);
  EXPECT_EQ(node.nics.count, 2);
  EXPECT_EQ(node.pcie_switches, 5);  // socket 0: a parent over two; socket 1: one switch per GPU pair
  const Cluster cluster = build_cluster(spec);
  EXPECT_EQ(class_of(cluster, "node0/gpu0", "node0/gpu1"), "PIX");
  EXPECT_EQ(class_of(cluster, "node0/gpu0", "node0/gpu2"), "PXB");
  EXPECT_EQ(class_of(cluster, "node0/gpu4", "node0/gpu6"), "PHB");
  EXPECT_EQ(class_of(cluster, "node0/gpu0", "node0/gpu7"), "SYS");
  EXPECT_DOUBLE_EQ(gbps(route(cluster, "node0/gpu0", "node0/gpu1")), 31.0);
  EXPECT_NE(spec.source.find("nic0 = mlx5_0, nic1 = mlx5_1"), std::string::npos) << spec.source;
}

TEST(NvidiaSmiImport, OptionsOverrideTheDefaults) {
  ImportOptions options;
  options.gpu_kind = "v100-32gb";
  options.name = "my p3";
  options.smp_bandwidth = BytesPerSec::gigabytes_per_sec(6);
  options.nic_bandwidth = BytesPerSec::gigabits_per_sec(100);
  const TopologySpec p3 = import_topology_file(data_path("p3.topo.txt"), options);
  EXPECT_EQ(p3.name, "my p3");
  const Cluster cluster = build_cluster(p3);
  EXPECT_DOUBLE_EQ(gbps(route(cluster, "node0/gpu0", "node0/gpu5")), 6.0);
  options.gpu_kind = "a100-80gb";
  const TopologySpec dgx = import_topology_file(data_path("dgx-a100.topo.txt"), options);
  EXPECT_DOUBLE_EQ(only_node(dgx).nics.bandwidth.in_bytes_per_sec(), 12.5e9);
}

// Four GPUs with NV4 to each other use 12 links each: an A100's own ports, so direct links (HGX A100
// 4-GPU); four H100s with NV6 likewise use their 18 ports directly.
TEST(NvidiaSmiImport, FullMeshWithinThePortCountIsDirect) {
  const std::string nv4 =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV4\tNV4\tNV4\t0-31\t0\nGPU1\tNV4\t X \tNV4\tNV4\t0-31\t0\n"
      "GPU2\tNV4\tNV4\t X \tNV4\t0-31\t0\nGPU3\tNV4\tNV4\tNV4\t X \t0-31\t0\n";
  ImportOptions options;
  options.gpu_kind = "a100-40gb";
  const TopologySpec spec = import_nvidia_smi_topo(nv4, "hgx4.txt", options);
  EXPECT_EQ(only_node(spec).nvswitches, 0);
  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, "node0/gpu1", "node0/gpu3");
  EXPECT_EQ(r.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(gbps(r), 100.0);
}

TEST(NvidiaSmiImport, TerminalEscapesCrLfAndNoAffinityColumns) {
  // A copy from a terminal: underlined header, CRLF line ends, no affinity columns, a prompt first.
  const std::string text =
      "user@host:~$ nvidia-smi topo -m\r\n"
      "\x1b[4m\tGPU0\tGPU1\tGPU2\tGPU3\x1b[0m\r\n"
      "GPU0\t X \tNV2\tSYS\tSYS\r\nGPU1\tNV2\t X \tSYS\tSYS\r\n"
      "GPU2\tSYS\tSYS\t X \tNV2\r\nGPU3\tSYS\tSYS\tNV2\t X \r\n";
  ImportOptions options;
  options.gpu_kind = "v100-16gb";
  const TopologySpec spec = import_nvidia_smi_topo(text, "term.txt", options);
  EXPECT_EQ(only_node(spec).cpus, 2);  // the SYS entries split the GPUs over two sockets
  const Cluster cluster = build_cluster(spec);
  EXPECT_EQ(class_of(cluster, "node0/gpu0", "node0/gpu1"), "NVL");
  EXPECT_EQ(class_of(cluster, "node0/gpu1", "node0/gpu2"), "SYS");
}

TEST(NvidiaSmiImport, MatrixCellsKnowTheirPlace) {
  const TopoMatrix m = parse_topo_matrix(read(data_path("pcie-box.topo.txt")), "pcie-box.topo.txt");
  ASSERT_EQ(m.devices.size(), 10u);
  EXPECT_EQ(m.gpus, 8);
  EXPECT_EQ(m.nics, 2);
  EXPECT_EQ(m.devices[8].label, "mlx5_0");
  EXPECT_EQ(m.devices[8].kind, TopoDeviceKind::Nic);
  EXPECT_EQ(m.devices[4].numa_key, "numa 1");
  const TopoCell& c = m.cells[4][9];  // GPU4 to mlx5_1
  EXPECT_EQ(c.text(), "PHB");
  EXPECT_EQ(c.line, 6);
  EXPECT_EQ(c.column, 81);
  EXPECT_EQ(m.field(4, 9), "row GPU4, column mlx5_1");
}

}  // namespace
}  // namespace mpsim::topology::import
