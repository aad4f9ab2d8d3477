#include "sim/topology/topology_writer.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"
#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology {
namespace {

using import::testing::import_sample;

TopologySpec reread(const TopologySpec& spec, const std::string& name) {
  const std::string text = write_topology_yaml(spec);
  return load_topology_spec(YamlDocument::parse(text, name + " (written)").root());
}

/// Same devices in the same order, and the same links with the same numbers.
void expect_same_cluster(const Cluster& a, const Cluster& b, const std::string& what) {
  EXPECT_EQ(a.name, b.name) << what;
  EXPECT_EQ(a.node_count, b.node_count) << what;
  EXPECT_EQ(a.gpu_kinds(), b.gpu_kinds()) << what;
  ASSERT_EQ(a.devices().size(), b.devices().size()) << what;
  for (std::size_t i = 0; i < a.devices().size(); ++i) {
    const Device& x = a.devices()[i];
    const Device& y = b.devices()[i];
    ASSERT_EQ(x.name, y.name) << what;
    EXPECT_EQ(x.kind, y.kind) << what << ": " << x.name;
    EXPECT_EQ(x.gpu_kind, y.gpu_kind) << what << ": " << x.name;
  }
  ASSERT_EQ(a.links().size(), b.links().size()) << what;
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    const Link& x = a.links()[i];
    const Link& y = b.links()[i];
    ASSERT_EQ(x.name, y.name) << what;
    EXPECT_EQ(x.kind, y.kind) << what << ": " << x.name;
    EXPECT_EQ(x.a, y.a) << what << ": " << x.name;
    EXPECT_EQ(x.b, y.b) << what << ": " << x.name;
    const double bx = x.bandwidth.in_bytes_per_sec();
    EXPECT_NEAR(bx, y.bandwidth.in_bytes_per_sec(), bx * 1e-9) << what << ": " << x.name;
    EXPECT_EQ(x.latency, y.latency) << what << ": " << x.name;
    EXPECT_EQ(x.duplex, y.duplex) << what << ": " << x.name;
  }
}

void expect_round_trip(const TopologySpec& spec, const std::string& what) {
  const TopologySpec again = reread(spec, what);
  EXPECT_EQ(again.name, spec.name) << what;
  EXPECT_EQ(again.source, spec.source) << what;
  expect_same_cluster(build_cluster(spec), build_cluster(again), what);
}

TEST(TopologyWriter, ShippedTopologiesRoundTrip) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MPSIM_SOURCE_DIR) + "/topologies")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    const TopologySpec spec = load_topology_spec(YamlDocument::load(file).root());
    expect_round_trip(spec, file.filename().string());
  }
}

TEST(TopologyWriter, ImportedTopologiesRoundTrip) {
  const std::pair<const char*, const char*> samples[] = {
      {"dgx-a100.topo.txt", "a100-80gb"}, {"dgx-h100.topo.txt", "h100-sxm"}, {"pcie-box.topo.txt", "a100-40gb"},
      {"p3.topo.txt", "v100-16gb"},       {"dgx-a100.nccl.xml", "a100-80gb"}, {"p5.nccl.xml", "h100-sxm"}};
  for (const auto& [file, gpu] : samples) expect_round_trip(import_sample(file, gpu), file);
}

TEST(TopologyWriter, CustomKindsOddNumbersAndFabrics) {
  const std::string yaml = R"(
name: "odd: cluster #1"
source: |
  two lines
  of provenance
gpu_kinds:
  test-gpu:
    name: Test GPU
    peak: { fp32: "19.5 TFLOP/s", bf16: "123.456789 TFLOP/s", fp8: "1234567 FLOP/s" }
    memory: "24 GiB"
    memory_bandwidth: "864.123456789 GB/s"
    nvlink: { links: 4, bandwidth_per_link: "12.3456789012 GB/s" }
    pcie: { gen: 4, bandwidth: "31 GB/s" }
    matmul_efficiency: 0.7123
    fp8_matmul_efficiency: 0.6123
    attention_efficiency: 0.4567
    sms: 77
    source: "made up"
node_templates:
  big:
    gpu: test-gpu
    gpus: 4
    cpus: 2
    pcie_switches: 1
    nics: { count: 2, bandwidth: "100 Gb/s", latency: "1.5 us" }
    links:
      - { kind: nvlink, pairs: [[gpu0, gpu1], [gpu2, gpu3]], bandwidth: "12.3456789012 GB/s", count: 3 }
      - { kind: pcie, from: "gpu[0-3]", to: pcie-switch0, bandwidth: "15.754 GB/s", latency: "1 ns", duplex: half }
      - { kind: pcie, from: [pcie-switch0, nic0, nic1], to: cpu0, bandwidth: "3333333333.3333335 B/s" }
      - { kind: smp, from: cpu0, to: cpu1, bandwidth: "21.3 GB/s", latency: "2 ms" }
  small:
    gpu: { peak: { fp16: "65 TFLOP/s" }, memory: "16 GiB", memory_bandwidth: "320 GB/s" }
    gpus: 1
    nics: { count: 1, bandwidth: "25.5 Gb/s" }
    links:
      - { kind: pcie, from: gpu0, to: nic0, bandwidth: "16 GB/s" }
nodes: [ { template: big, count: 3 }, { template: small, count: 2 } ]
fabric: { kind: fat-tree, network: roce, levels: 3, leaf_ports: 4, pod_leaves: 2, oversubscription: 2.5,
          switch_latency: "0.6 us" }
)";
  const TopologySpec spec = load_topology_spec(YamlDocument::parse(yaml, "odd.yaml").root());
  expect_round_trip(spec, "odd.yaml");
  const TopologySpec again = reread(spec, "odd.yaml");
  ASSERT_EQ(again.custom_gpu_kinds.size(), spec.custom_gpu_kinds.size());
  for (std::size_t i = 0; i < spec.custom_gpu_kinds.size(); ++i) {
    EXPECT_EQ(again.custom_gpu_kinds[i], spec.custom_gpu_kinds[i]) << spec.custom_gpu_kinds[i].id;
  }
  ASSERT_TRUE(again.fabric.has_value());
  EXPECT_EQ(again.fabric->kind, FabricKind::FatTree);
  EXPECT_EQ(again.fabric->network, "roce");
  EXPECT_EQ(again.fabric->levels, 3);
  EXPECT_EQ(again.fabric->leaf_ports, 4);
  EXPECT_EQ(again.fabric->pod_leaves, 2);
  EXPECT_EQ(again.fabric->oversubscription, 2.5);
  EXPECT_EQ(again.fabric->switch_latency, TimeNs::ns(600));
  const NodeSpec& big = again.templates.at("big");
  EXPECT_EQ(big.nics.latency, TimeNs::ns(1500));
  EXPECT_EQ(big.links.at(1).from, std::vector<std::string>{"gpu[0-3]"});
  // Exact numbers survive: the writer never rounds.
  EXPECT_EQ(big.links.at(0).bandwidth, spec.templates.at("big").links.at(0).bandwidth);
  EXPECT_EQ(big.links.at(2).bandwidth, spec.templates.at("big").links.at(2).bandwidth);
}

TEST(TopologyWriter, WritesUnitsAsPeopleDo) {
  const std::string text = write_topology_yaml(import_sample("dgx-a100.topo.txt", "a100-80gb"));
  EXPECT_EQ(text.rfind("# dgx-a100: mpsim topology, full form", 0), 0u) << text;
  EXPECT_NE(text.find("# 1 node: 8 GPUs (a100-80gb), 1 NVSwitch, 20 PCIe switches, 2 CPUs, 8 NICs each."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nics: {count: 8, bandwidth: \"200 Gb/s\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("- {kind: nvlink, from: \"gpu*\", to: nvswitch0, count: 12, bandwidth: \"25 GB/s\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- {kind: smp, from: cpu0, to: cpu1, bandwidth: \"10 GB/s\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("\nnodes: 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace mpsim::topology
