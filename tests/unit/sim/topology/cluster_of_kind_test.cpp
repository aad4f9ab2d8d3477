// Cluster::only_gpu_kind and only_nodes: the nodes of one GPU kind of a cluster of several (or any of its
// nodes) equal, device for device and link for link, the cluster built from those nodes alone; its job GPUs,
// kinds and routes are theirs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/topology/route_table.h"
#include "tests/support/two_kind_topology.h"
#include "tests/unit/sim/topology/topology_test_support.h"

namespace mpsim::topology {
namespace {

using testing::cluster_from;

/// testing::two_kind_topology_yaml with the H100 nodes' NICs at 400 Gb/s.
std::string two_kinds_yaml(int fast, int slow, const std::string& slow_nic = "200 Gb/s") {
  return mpsim::testing::two_kind_topology_yaml(fast, slow, slow_nic, "400 Gb/s");
}

int kind_index(const Cluster& c, const std::string& id) {
  for (std::size_t i = 0; i < c.gpu_kinds().size(); ++i) {
    if (c.gpu_kinds()[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

/// Every device and link of `a` and `b` by position: names, kinds, nodes, endpoints, rates.
void expect_same_cluster(const Cluster& a, const Cluster& b) {
  EXPECT_EQ(a.node_count, b.node_count);
  ASSERT_EQ(a.devices().size(), b.devices().size());
  for (std::size_t i = 0; i < a.devices().size(); ++i) {
    const Device& x = a.devices()[i];
    const Device& y = b.devices()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kind, y.kind) << x.name;
    EXPECT_EQ(x.node, y.node) << x.name;
    EXPECT_EQ(x.local_index, y.local_index) << x.name;
    EXPECT_EQ(x.gpu_kind, y.gpu_kind) << x.name;
  }
  ASSERT_EQ(a.links().size(), b.links().size());
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    const Link& x = a.links()[i];
    const Link& y = b.links()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(a.device(x.a).name, b.device(y.a).name) << x.name;
    EXPECT_EQ(a.device(x.b).name, b.device(y.b).name) << x.name;
    EXPECT_EQ(x.kind, y.kind) << x.name;
    EXPECT_EQ(x.bandwidth, y.bandwidth) << x.name;
    EXPECT_EQ(x.latency, y.latency) << x.name;
  }
  ASSERT_EQ(a.gpus().size(), b.gpus().size());
  for (std::size_t i = 0; i < a.gpus().size(); ++i) EXPECT_EQ(a.gpus()[i], b.gpus()[i]);
  ASSERT_EQ(a.gpu_kinds().size(), b.gpu_kinds().size());
  for (std::size_t i = 0; i < a.gpu_kinds().size(); ++i) EXPECT_TRUE(a.gpu_kinds()[i] == b.gpu_kinds()[i]);
}

TEST(ClusterOfKind, EachKindsNodesAreTheClusterOfThoseNodesAlone) {
  const Cluster mixed = cluster_from(two_kinds_yaml(2, 3));
  ASSERT_EQ(mixed.gpus().size(), 20U);
  ASSERT_EQ(mixed.gpu_kinds().size(), 2U);

  const Cluster h100 = mixed.only_gpu_kind(kind_index(mixed, "h100-sxm"));
  EXPECT_EQ(h100.gpus().size(), 8U);
  ASSERT_EQ(h100.gpu_kinds().size(), 1U);
  EXPECT_EQ(h100.gpu_kinds().front().id, "h100-sxm");
  expect_same_cluster(h100, cluster_from(two_kinds_yaml(2, 0)));

  // The A100 nodes were node2..node4: node0..node2 now, in device and link names.
  const Cluster a100 = mixed.only_gpu_kind(kind_index(mixed, "a100-80gb"));
  EXPECT_EQ(a100.gpus().size(), 12U);
  EXPECT_EQ(a100.node_count, 3);
  EXPECT_EQ(a100.job_gpu_kinds(), std::vector<int>{0});
  EXPECT_EQ(a100.gpu_kind_of(a100.gpus().front()).id, "a100-80gb");
  EXPECT_TRUE(a100.find("node2/gpu3").has_value());
  EXPECT_FALSE(a100.find("node3/gpu0").has_value());
  expect_same_cluster(a100, cluster_from(two_kinds_yaml(0, 3)));
}

TEST(ClusterOfKind, RoutesRunOverTheKindsOwnLinks) {
  // The A100 NICs at 100 Gb/s: between two A100 nodes a route runs at 100 Gb/s in the mix and alone.
  const Cluster mixed = cluster_from(two_kinds_yaml(2, 2, "100 Gb/s"));
  const Cluster a100 = mixed.only_gpu_kind(kind_index(mixed, "a100-80gb"));
  const Cluster h100 = mixed.only_gpu_kind(kind_index(mixed, "h100-sxm"));
  const auto route = [](const Cluster& c, const char* a, const char* b) {
    const auto r = find_route(c, *c.find(a), *c.find(b));
    EXPECT_TRUE(r.has_value()) << a << " - " << b;
    return r.value_or(Route{});
  };
  const Route in_mix = route(mixed, "node2/gpu1", "node3/gpu1");
  const Route alone = route(a100, "node0/gpu1", "node1/gpu1");
  EXPECT_EQ(alone.bandwidth, BytesPerSec::gigabits_per_sec(100));
  EXPECT_EQ(alone.bandwidth, in_mix.bandwidth);
  EXPECT_EQ(alone.latency, in_mix.latency);
  EXPECT_EQ(alone.path_class, PathClass::NET);
  // Between the H100 nodes the route's bottleneck is PCIe (32 GB/s, under the 400 Gb/s NICs), as in the mix.
  EXPECT_EQ(route(h100, "node0/gpu1", "node1/gpu1").bandwidth, BytesPerSec::gigabytes_per_sec(32));
  EXPECT_EQ(route(h100, "node0/gpu1", "node1/gpu1").bandwidth, route(mixed, "node0/gpu1", "node1/gpu1").bandwidth);
  EXPECT_EQ(route(a100, "node0/gpu0", "node0/gpu3").path_class, PathClass::NVL);
}

TEST(ClusterOfKind, JobGpusWhatIfsAndLinksDownCarryOver) {
  Cluster mixed = cluster_from(two_kinds_yaml(2, 2));
  // A job of the first 2 GPUs of each node: 2 of each A100 node stay job GPUs, the others idle.
  mixed.keep_job_gpus(JobShape{4, 2, 8});
  mixed.set_slowdown(*mixed.find("node3/gpu1"), 1.5);
  const LinkId nic_link = [&] {
    for (std::size_t i = 0; i < mixed.links().size(); ++i) {
      if (mixed.links()[i].name == "net:node2/nic0-fabric/switch0") return LinkId{static_cast<std::uint32_t>(i)};
    }
    ADD_FAILURE() << "no link net:node2/nic0-fabric/switch0";
    return LinkId{};
  }();
  mixed.take_link_down(nic_link);
  mixed.profile_file = "profile.yaml";

  const Cluster a100 = mixed.only_gpu_kind(kind_index(mixed, "a100-80gb"));
  std::vector<std::string> job;
  for (const DeviceId g : a100.gpus()) job.push_back(a100.device(g).name);
  EXPECT_EQ(job, (std::vector<std::string>{"node0/gpu0", "node0/gpu1", "node1/gpu0", "node1/gpu1"}));
  EXPECT_EQ(a100.device(*a100.find("node1/gpu1")).slowdown, 1.5);
  EXPECT_EQ(a100.device(*a100.find("node0/gpu1")).slowdown, 1.0);
  EXPECT_EQ(a100.profile_file, "profile.yaml");
  int down = 0;
  for (const Link& l : a100.links()) {
    if (l.down) {
      ++down;
      EXPECT_EQ(l.name, "net:node0/nic0-fabric/switch0");
    }
  }
  EXPECT_EQ(down, 1);
  // node0/gpu0 reaches node1 in the A100 cluster exactly when node2/gpu0 reaches node3 in the mix (its
  // NIC's link down), and never over a link that is down.
  const auto alone = find_route(a100, *a100.find("node0/gpu0"), *a100.find("node1/gpu0"));
  const auto in_mix = find_route(mixed, *mixed.find("node2/gpu0"), *mixed.find("node3/gpu0"));
  ASSERT_EQ(alone.has_value(), in_mix.has_value());
  if (alone) {
    EXPECT_EQ(alone->bandwidth, in_mix->bandwidth);
    for (const LinkId l : alone->links) EXPECT_FALSE(a100.link(l).down);
  }

  EXPECT_THROW((void)mixed.only_gpu_kind(2), std::out_of_range);
}

TEST(ClusterOfKind, SomeNodesOfEachKindAreTheClusterOfThoseNodesAlone) {
  const Cluster mixed = cluster_from(two_kinds_yaml(2, 3));
  // The two H100 nodes and the first A100 node: what a topology of 2 H100 and 1 A100 nodes builds.
  const Cluster part = mixed.only_nodes({0, 1, 2});
  EXPECT_EQ(part.gpus().size(), 12U);
  EXPECT_EQ(part.node_count, 3);
  ASSERT_EQ(part.job_gpu_kinds().size(), 2U);
  expect_same_cluster(part, cluster_from(two_kinds_yaml(2, 1)));
  // An H100 node and the last A100 node (node4): node0 and node1 now, the kinds in the GPUs' order.
  const Cluster apart = mixed.only_nodes({4, 1});
  EXPECT_EQ(apart.node_count, 2);
  EXPECT_EQ(apart.gpu_kind_of(*apart.find("node0/gpu0")).id, "h100-sxm");
  EXPECT_EQ(apart.gpu_kind_of(*apart.find("node1/gpu3")).id, "a100-80gb");
  expect_same_cluster(apart, cluster_from(two_kinds_yaml(1, 1)));
  // Every node is the whole cluster; nodes it does not have are ignored.
  expect_same_cluster(mixed.only_nodes({0, 1, 2, 3, 4, 9}), mixed);
  // One kind's nodes equal that kind alone.
  expect_same_cluster(mixed.only_nodes({2, 3, 4}), mixed.only_gpu_kind(kind_index(mixed, "a100-80gb")));
}

}  // namespace
}  // namespace mpsim::topology
