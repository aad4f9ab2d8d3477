#include "sim/topology/route_table.h"

#include <gtest/gtest.h>

#include "topology_test_support.h"

namespace mpsim::topology {
namespace {

using testing::cluster_from;
using testing::repo_path;

Route route_between(const Cluster& c, const std::string& a, const std::string& b) {
  const auto r = find_route(c, *c.find(a), *c.find(b));
  EXPECT_TRUE(r.has_value()) << a << " -> " << b;
  return r.value_or(Route{});
}

std::vector<std::string> hop_names(const Cluster& c, const Route& r) {
  std::vector<std::string> out;
  for (const DeviceId d : r.hops) out.push_back(c.device(d).name);
  return out;
}

// DGX H100: every GPU pair meets at the NVSwitch plane, 18 NVLinks x 25 GB/s = 450 GB/s one way, and the
// two 0.47 us hops make the 0.94 us of the astra-sim validated HGX-H100 model.
TEST(Routes, DgxH100Gpu0ToGpu5ViaNvSwitch) {
  const Cluster c = load_topology_file(repo_path("topologies/dgx-h100.yaml"));
  const Route r = route_between(c, "node0/gpu0", "node0/gpu5");
  EXPECT_EQ(hop_names(c, r), (std::vector<std::string>{"node0/gpu0", "node0/nvswitch0", "node0/gpu5"}));
  EXPECT_EQ(r.path_class, PathClass::NVL);
  EXPECT_DOUBLE_EQ(r.bandwidth.in_bytes_per_sec(), 450e9);
  EXPECT_EQ(r.latency, TimeNs::ns(940));
}

// p3.16xlarge (DGX-1 hybrid cube-mesh): NV2 pairs get 50 GB/s, NV1 pairs 25 GB/s. A pair without a
// direct NVLink (gpu0-gpu5) does NOT take two NVLink hops through a third GPU: GPUs do not forward
// traffic (NCCL's P2P model), so it goes over PCIe through both sockets, SYS, at the 6 GB/s of the
// Broadwell socket link.
TEST(Routes, P3CubeMesh) {
  const Cluster c = load_topology_file(repo_path("topologies/p3.16xlarge.yaml"));
  const Route nv2 = route_between(c, "node0/gpu0", "node0/gpu3");
  EXPECT_EQ(nv2.path_class, PathClass::NVL);
  EXPECT_EQ(nv2.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(nv2.bandwidth.in_bytes_per_sec(), 50e9);
  const Route nv1 = route_between(c, "node0/gpu0", "node0/gpu1");
  EXPECT_DOUBLE_EQ(nv1.bandwidth.in_bytes_per_sec(), 25e9);

  const Route none = route_between(c, "node0/gpu0", "node0/gpu5");
  EXPECT_EQ(none.path_class, PathClass::SYS);
  EXPECT_EQ(hop_names(c, none), (std::vector<std::string>{"node0/gpu0", "node0/pcie-switch0", "node0/cpu0",
                                                          "node0/cpu1", "node0/pcie-switch2", "node0/gpu5"}));
  EXPECT_DOUBLE_EQ(none.bandwidth.in_bytes_per_sec(), 6e9);
  // Every GPU has exactly four NVLink peers (6 links: two NV2 + two NV1).
  for (const DeviceId a : c.gpus()) {
    int nvlink_peers = 0;
    for (const DeviceId b : c.gpus()) {
      if (a == b) continue;
      nvlink_peers += route_between(c, c.device(a).name, c.device(b).name).path_class == PathClass::NVL ? 1 : 0;
    }
    EXPECT_EQ(nvlink_peers, 4) << c.device(a).name;
  }
}

// Rail-optimized: node0/gpu0 reaches node1/gpu0 through its PCIe-local NIC and rail 0's leaf switch,
// never the spine; bottleneck is the 400 Gb/s NIC (50 GB/s), latency the two 0.5 us NIC ports.
TEST(Routes, SixteenDgxH100OverTheRail) {
  const Cluster c = load_topology_file(repo_path("topologies/16x-dgx-h100.yaml"));
  const Route r = route_between(c, "node0/gpu0", "node1/gpu0");
  EXPECT_EQ(hop_names(c, r),
            (std::vector<std::string>{"node0/gpu0", "node0/pcie-switch0", "node0/nic0", "fabric/rail0-leaf0",
                                      "node1/nic0", "node1/pcie-switch0", "node1/gpu0"}));
  EXPECT_EQ(r.path_class, PathClass::NET);
  EXPECT_DOUBLE_EQ(r.bandwidth.in_bytes_per_sec(), 50e9);
  EXPECT_EQ(r.latency, TimeNs::us(1));
  // gpu3 uses rail 3.
  const Route r3 = route_between(c, "node2/gpu3", "node9/gpu3");
  EXPECT_EQ(c.device(r3.hops[3]).name, "fabric/rail3-leaf0");
}

// The short form's latencies are end to end, so transfer closed forms hold exactly.
TEST(Routes, ShortFormLatencyIsEndToEnd) {
  const Cluster c = cluster_from(R"(
cluster:
  nodes: 2
  gpus_per_node: 8
  gpu: a100-80gb
  intra_node: { kind: nvswitch, bandwidth: "300 GB/s", latency: "2 us" }
  inter_node: { kind: infiniband, bandwidth: "200 Gb/s", latency: "5 us", nics_per_node: 8 }
)");
  const Route intra = route_between(c, "node0/gpu0", "node0/gpu1");
  EXPECT_EQ(intra.path_class, PathClass::NVL);
  EXPECT_EQ(intra.latency, TimeNs::us(2));
  EXPECT_DOUBLE_EQ(intra.bandwidth.in_bytes_per_sec(), 300e9);
  const Route inter = route_between(c, "node0/gpu0", "node1/gpu0");
  EXPECT_EQ(inter.path_class, PathClass::NET);
  EXPECT_EQ(inter.latency, TimeNs::us(5));
  EXPECT_DOUBLE_EQ(inter.bandwidth.in_bytes_per_sec(), 25e9);
  // 1 GB over the network: 5 us + 1e9 / 25e9 s = 40.005 ms.
  EXPECT_EQ(inter.latency + transfer_time(Bytes::gb(1), inter.bandwidth), TimeNs::us(40005));
}

// PCIe box: PIX on one switch, PHB through one CPU's host bridge, SYS across sockets.
TEST(Routes, PcieBoxClasses) {
  const Cluster c = load_topology_file(repo_path("topologies/pcie-8gpu.yaml"));
  EXPECT_EQ(route_between(c, "node0/gpu0", "node0/gpu1").path_class, PathClass::PIX);
  EXPECT_EQ(route_between(c, "node0/gpu0", "node0/gpu2").path_class, PathClass::PHB);
  const Route sys = route_between(c, "node0/gpu0", "node0/gpu7");
  EXPECT_EQ(sys.path_class, PathClass::SYS);
  EXPECT_DOUBLE_EQ(sys.bandwidth.in_bytes_per_sec(), 16e9);
}

// A NIC is not a PCIe switch: GPUs that share only a NIC cannot talk through it, so this node is
// refused although its graph is connected.
TEST(Routes, NicsDoNotBridgePcieDevices) {
  const std::string error = testing::error_of(R"(
node:
  gpu: a100-80gb
  gpus: 2
  nics: { count: 1, bandwidth: "100 Gb/s" }
  links:
    - { kind: pcie, from: [gpu0, gpu1], to: nic0, bandwidth: "31 GB/s" }
nodes: 2
fabric: { kind: single-switch }
)");
  EXPECT_NE(error.find("node0/gpu1 is not connected to node0/gpu0"), std::string::npos) << error;
}

TEST(Routes, SeleneCrossesTheFabricLevels) {
  const Cluster c = load_topology_file(repo_path("topologies/selene.yaml"));
  const Route same_unit = route_between(c, "node0/gpu0", "node19/gpu0");
  EXPECT_EQ(c.device(same_unit.hops[3]).name, "fabric/rail0-leaf0");
  EXPECT_EQ(same_unit.hops.size(), 7u);
  const Route far = route_between(c, "node0/gpu0", "node559/gpu0");
  EXPECT_EQ(far.path_class, PathClass::NET);
  EXPECT_DOUBLE_EQ(far.bandwidth.in_bytes_per_sec(), 25e9);  // HDR 200 Gb/s, non-blocking above
  EXPECT_EQ(c.device(far.hops[4]).name, "fabric/pod0-spine");
  EXPECT_EQ(far.hops.size(), 9u);
}

TEST(RouteTable, PrecomputedEqualsOnDemand) {
  const Cluster c = load_topology_file(repo_path("topologies/4x-p4d.yaml"));
  const RouteTable table(c);
  for (const DeviceId a : c.gpus()) {
    for (const DeviceId b : c.gpus()) {
      const auto pre = table.route(a, b);
      const auto direct = find_route(c, a, b);
      ASSERT_EQ(pre.has_value(), direct.has_value());
      EXPECT_EQ(pre->hops, direct->hops);
      EXPECT_EQ(pre->latency, direct->latency);
    }
  }
}

}  // namespace
}  // namespace mpsim::topology
