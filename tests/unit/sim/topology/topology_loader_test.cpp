#include "sim/topology/topology_loader.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "topology_test_support.h"

namespace mpsim::topology {
namespace {

using testing::cluster_from;
using testing::error_of;
using testing::repo_path;

TEST(TopologyLoader, EveryShippedTopologyLoads) {
  struct Expect {
    const char* file;
    int nodes;
    std::size_t gpus;
    const char* gpu;
  };
  const Expect files[] = {
      {"dgx-a100.yaml", 1, 8, "a100-80gb"},      {"dgx-h100.yaml", 1, 8, "h100-sxm"},
      {"p3.16xlarge.yaml", 1, 8, "v100-16gb"},   {"p4d.24xlarge.yaml", 1, 8, "a100-40gb"},
      {"p5.48xlarge.yaml", 1, 8, "h100-sxm"},    {"pcie-8gpu.yaml", 1, 8, "a100-pcie-80gb"},
      {"p4de.24xlarge.yaml", 1, 8, "a100-80gb"},
      {"4x-p4d.yaml", 4, 32, "a100-40gb"},       {"16x-dgx-h100.yaml", 16, 128, "h100-sxm"},
      {"selene.yaml", 560, 4480, "a100-80gb"},   {"512x-dgx-h100.yaml", 512, 4096, "h100-sxm"},
      {"dgx-b200.yaml", 1, 8, "b200"},           {"gb200-nvl72.yaml", 1, 72, "gb200"},
      {"dgx-b300.yaml", 1, 8, "b300"},           {"gb300-nvl72.yaml", 1, 72, "gb300"},
      {"mixed-h100-a100.yaml", 4, 32, "h100-sxm"}, {"mixed-p5-p3.yaml", 4, 32, "h100-sxm"},
      {"p3.8xlarge.yaml", 1, 4, "v100-16gb"},    {"g4dn.12xlarge.yaml", 1, 4, "t4-16gb"},
      {"amp-p3-g4-mixed.yaml", 4, 16, "v100-16gb"}, {"amp-g4-p3-mixed.yaml", 4, 16, "t4-16gb"},
  };
  std::size_t seen = 0;
  for (const auto& e : files) {
    SCOPED_TRACE(e.file);
    const Cluster c = load_topology_file(repo_path(std::string("topologies/") + e.file));
    EXPECT_EQ(c.node_count, e.nodes);
    EXPECT_EQ(c.gpus().size(), e.gpus);
    EXPECT_EQ(c.gpu_kind_of(c.gpus().front()).id, e.gpu);
    ++seen;
  }
  // Every file in topologies/ is in the table above.
  std::size_t on_disk = 0;
  for (const auto& entry : std::filesystem::directory_iterator(repo_path("topologies"))) {
    on_disk += entry.path().extension() == ".yaml" ? 1 : 0;
  }
  EXPECT_EQ(on_disk, seen);
}

TEST(TopologyLoader, ShortFormBuildsUniformCluster) {
  const Cluster c = cluster_from(R"(
cluster:
  nodes: 2
  gpus_per_node: 8
  gpu: a100-80gb
  intra_node: { kind: nvswitch, bandwidth: "300 GB/s", latency: "2 us" }
  inter_node: { kind: infiniband, bandwidth: "200 Gb/s", latency: "5 us", nics_per_node: 8 }
)");
  EXPECT_EQ(c.node_count, 2);
  EXPECT_EQ(c.gpus().size(), 16u);
  EXPECT_TRUE(c.find("node1/gpu7").has_value());
  EXPECT_TRUE(c.find("node1/nic7").has_value());
  EXPECT_TRUE(c.find("fabric/switch0").has_value());
}

TEST(TopologyLoader, ShortFormWithInlineGpuKind) {
  const Cluster c = cluster_from(R"(
cluster:
  gpus_per_node: 2
  gpu: { peak: { fp32: "10 TFLOP/s" }, memory: "24 GiB", memory_bandwidth: "300 GB/s" }
  intra_node: { kind: pcie, bandwidth: "16 GB/s" }
)");
  EXPECT_EQ(c.gpu_kind_of(c.gpus().front()).memory, Bytes::gib(24));
}

TEST(TopologyLoader, InlineGpuKindSmCount) {
  const auto with_sms = [](const std::string& sms) {
    return "cluster:\n  gpus_per_node: 1\n  gpu: { peak: { fp32: \"10 TFLOP/s\" }, memory: \"24 GiB\", "
           "memory_bandwidth: \"300 GB/s\", sms: " +
           sms + " }\n";
  };
  const Cluster c = cluster_from(with_sms("58"));
  EXPECT_EQ(c.gpu_kind_of(c.gpus().front()).sm_count, 58);
  const Cluster unknown = cluster_from("cluster: { gpus_per_node: 1, gpu: { peak: { fp32: \"10 TFLOP/s\" }, "
                                       "memory: \"24 GiB\", memory_bandwidth: \"300 GB/s\" } }\n");
  EXPECT_EQ(unknown.gpu_kind_of(unknown.gpus().front()).sm_count, 0);  // not given: unknown
  for (const std::string bad : {"0", "-4", "100000"}) {
    const std::string error = error_of(with_sms(bad));
    EXPECT_NE(error.find("inline.yaml:3:"), std::string::npos) << error;
    EXPECT_NE(error.find("sms must be a positive count"), std::string::npos) << error;
    EXPECT_NE(error.find("field 'cluster.gpu.sms'"), std::string::npos) << error;
  }
  const std::string fraction = error_of(with_sms("1.5"));
  EXPECT_NE(fraction.find("field 'cluster.gpu.sms'"), std::string::npos) << fraction;
}

TEST(TopologyLoader, NodeFromSharesTheTemplate) {
  const Cluster one = load_topology_file(repo_path("topologies/p4d.24xlarge.yaml"));
  const Cluster four = load_topology_file(repo_path("topologies/4x-p4d.yaml"));
  EXPECT_EQ(four.devices().size(), 4 * one.devices().size() + 1);  // + the fabric switch
}

/// Writes `text` to `name` in a scratch folder of this test and returns its path.
std::filesystem::path write_topology(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("mpsim-topology-loader-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

constexpr const char* kSlowKind =
    "  slow-gpu: { peak: { bf16: \"100 TFLOP/s\" }, memory: \"24 GiB\", memory_bandwidth: \"500 GB/s\" }\n";

TEST(TopologyLoader, NodeFromSeesTheKindsOfEitherFile) {
  // The node file declares the kind it names.
  write_topology("own-kind-node.yaml", std::string("gpu_kinds:\n") + kSlowKind +
                                           "node: { gpu: slow-gpu, gpus: 1 }\nnodes: 1\n");
  const Cluster own = load_topology_file(
      write_topology("own-kind.yaml", "node_from: own-kind-node.yaml\nnodes: 1\n"));
  EXPECT_EQ(own.gpu_kind_of(own.gpus().back()).id, "slow-gpu");
  EXPECT_EQ(own.gpu_kind_of(own.gpus().back()).memory, Bytes::gib(24));

  // The including file declares the kind its node file names (one node file, several GPU kinds).
  write_topology("named-kind-node.yaml", "node: { gpu: slow-gpu, gpus: 1 }\nnodes: 1\n");
  const Cluster named = load_topology_file(write_topology(
      "named-kind.yaml", std::string("gpu_kinds:\n") + kSlowKind +
                             "node_from: named-kind-node.yaml\nnodes: 1\n"));
  EXPECT_EQ(named.gpu_kind_of(named.gpus().back()).id, "slow-gpu");

  // A kind of the including file takes the place of the node file's kind of the same id.
  const Cluster replaced = load_topology_file(write_topology(
      "replaced-kind.yaml",
      "gpu_kinds:\n  slow-gpu: { peak: { bf16: \"100 TFLOP/s\" }, memory: \"48 GiB\", memory_bandwidth: \"500 GB/s\" }\n"
      "node_from: own-kind-node.yaml\nnodes: 1\n"));
  EXPECT_EQ(replaced.gpu_kind_of(replaced.gpus().back()).memory, Bytes::gib(48));
}

TEST(TopologyLoader, NodeGroupsJoinNodesOfSeveralFiles) {
  // Two DGX H100 then three DGX A100 (the shipped files, by absolute path), one fabric.
  const std::string h100 = repo_path("topologies/dgx-h100.yaml");
  const std::string a100 = repo_path("topologies/dgx-a100.yaml");
  const Cluster mixed = load_topology_file(write_topology(
      "groups.yaml", "node_groups:\n  - { node_from: " + h100 + ", nodes: 2 }\n  - { node_from: " + a100 +
                         ", nodes: 3 }\nfabric: { kind: single-switch, network: infiniband }\n"));
  EXPECT_EQ(mixed.node_count, 5);
  ASSERT_EQ(mixed.gpus().size(), 40u);
  EXPECT_EQ(mixed.gpu_kinds().size(), 2u);
  // Nodes count on in the order the groups are written.
  EXPECT_EQ(mixed.gpu_kind_of(*mixed.find("node1/gpu7")).id, "h100-sxm");
  EXPECT_EQ(mixed.gpu_kind_of(*mixed.find("node2/gpu0")).id, "a100-80gb");
  EXPECT_EQ(mixed.gpu_kind_of(mixed.gpus().back()).id, "a100-80gb");
  // Each node keeps its own links: NVLink 4 (18 x 25 GB/s) in the H100 nodes, NVLink 3 (12 x 25) in the A100's.
  const auto nvlink_of = [&](int node) {
    for (const Link& l : mixed.links()) {
      if (l.name == "node" + std::to_string(node) + "/nvlink:gpu0-nvswitch0") return l.bandwidth;
    }
    return BytesPerSec{};
  };
  EXPECT_EQ(nvlink_of(0), BytesPerSec::gigabytes_per_sec(450));
  EXPECT_EQ(nvlink_of(4), BytesPerSec::gigabytes_per_sec(300));

  // Errors name the field.
  // `nodes: N` beside the groups (--set topology.nodes=N) shares N nodes in the groups' proportions.
  const auto scaled = [&](int nodes) {
    return load_topology_file(write_topology(
        "groups-scaled.yaml", "node_groups:\n  - { node_from: " + h100 + ", nodes: 2 }\n  - { node_from: " + a100 +
                                  ", nodes: 3 }\nnodes: " + std::to_string(nodes) +
                                  "\nfabric: { kind: single-switch, network: infiniband }\n"));
  };
  const auto h100_nodes = [](const Cluster& c) {
    int n = 0;
    for (const DeviceId g : c.gpus()) n += c.gpu_kind_of(g).id == "h100-sxm" ? 1 : 0;
    return n / 8;
  };
  const Cluster ten = scaled(10);  // 2 : 3 of 10 = 4 + 6
  EXPECT_EQ(ten.node_count, 10);
  EXPECT_EQ(h100_nodes(ten), 4);
  const Cluster seven = scaled(7);  // 2.8 + 4.2: the larger remainder (0.8) takes the extra node: 3 + 4
  EXPECT_EQ(h100_nodes(seven), 3);
  EXPECT_EQ(seven.node_count, 7);
  const Cluster two = scaled(2);  // 0.8 + 1.2: each group keeps a node
  EXPECT_EQ(h100_nodes(two), 1);
  EXPECT_EQ(two.node_count, 2);
  const std::string too_few = error_of("node_groups:\n  - { node_from: " + h100 + ", nodes: 2 }\n  - { node_from: " +
                                       a100 + ", nodes: 3 }\nnodes: 1\n");
  EXPECT_NE(too_few.find("inline.yaml:4:"), std::string::npos) << too_few;
  EXPECT_NE(too_few.find("cannot hold the 2 node groups"), std::string::npos) << too_few;
  const std::string missing = error_of("node_groups:\n  - { node_from: nowhere.yaml, nodes: 2 }\n");
  EXPECT_NE(missing.find("no such file"), std::string::npos) << missing;
  EXPECT_NE(missing.find("field 'node_groups[0].node_from'"), std::string::npos) << missing;
  const std::string uncounted = error_of("node_groups:\n  - { node_from: " + h100 + " }\n");
  EXPECT_NE(uncounted.find("nodes"), std::string::npos) << uncounted;
  const std::string both = error_of("node_from: " + h100 + "\nnode_groups: []\nnodes: 1\n");
  EXPECT_NE(both.find("give one of"), std::string::npos) << both;
  const std::string empty = error_of("node_groups: []\n");
  EXPECT_NE(empty.find("at least one group"), std::string::npos) << empty;
}

TEST(TopologyLoader, ExpansionErrorsNameTheLinkField) {
  const std::string dangling = error_of(R"(
node:
  gpu: a100-80gb
  gpus: 2
  nvswitches: 1
  links:
    - { kind: nvlink, from: "gpu*", to: nvswitch3, bandwidth: "25 GB/s" }
nodes: 1
)");
  EXPECT_NE(dangling.find("inline.yaml:7:7"), std::string::npos) << dangling;
  EXPECT_NE(dangling.find("'nvswitch3' matches no device"), std::string::npos) << dangling;
  EXPECT_NE(dangling.find("field 'node.links[0]'"), std::string::npos) << dangling;

  const std::string disconnected = error_of("node: { gpu: h100-sxm, gpus: 2 }\nnodes: 1\n");
  EXPECT_NE(disconnected.find("node0/gpu1 is not connected to node0/gpu0"), std::string::npos) << disconnected;

  const std::string unknown_kind = error_of("cluster: { gpus_per_node: 1, gpu: tpu-v9 }\n");
  EXPECT_NE(unknown_kind.find("unknown GPU kind 'tpu-v9'"), std::string::npos) << unknown_kind;

  const std::string no_fabric = error_of(R"(
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: h100-sxm
)");
  EXPECT_NE(no_fabric.find("several nodes need 'inter_node'"), std::string::npos) << no_fabric;
}

}  // namespace
}  // namespace mpsim::topology
