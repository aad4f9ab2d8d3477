#include "sim/topology/instance_override.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "sim/core/input_error.h"
#include "sim/topology/route_table.h"
#include "topology_test_support.h"

namespace mpsim::topology {
namespace {

using testing::repo_path;

Override set(const std::string& text) { return parse_override(text, "--set"); }

Cluster sixteen_dgx_h100() { return load_topology_file(repo_path("topologies/16x-dgx-h100.yaml")); }

const Link& link_named(const Cluster& c, const std::string& name) {
  const auto& links = c.links();
  const auto it = std::find_if(links.begin(), links.end(), [&](const Link& l) { return l.name == name; });
  EXPECT_NE(it, links.end()) << name;
  return *it;
}

std::string override_error(Cluster& c, const std::string& text) {
  try {
    apply_instance_overrides(c, {set(text)});
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(InstanceOverride, PathsOfTheClusterAndOfTheFile) {
  EXPECT_TRUE(is_instance_path("gpus[node5/gpu3].slowdown"));
  EXPECT_TRUE(is_instance_path("links[net:node5/nic0-fabric/rail0-leaf0].down"));
  EXPECT_TRUE(is_instance_path("nodes[5].nics.bandwidth"));
  EXPECT_TRUE(is_instance_path("nodes[node5].slowdown"));
  // A node group's own fields, and plain fields, stay edits of the YAML.
  EXPECT_FALSE(is_instance_path("nodes[1].count"));
  EXPECT_FALSE(is_instance_path("nodes[0].template"));
  EXPECT_FALSE(is_instance_path("nodes"));
  EXPECT_FALSE(is_instance_path("node.nics.bandwidth"));
}

TEST(InstanceOverride, OneGpuAndOneNodeSlowDown) {
  Cluster c = sixteen_dgx_h100();
  apply_instance_overrides(c, {set("topology.gpus[node5/gpu3].slowdown=1.25"), set("topology.nodes[7].slowdown=2")});
  int slowed = 0;
  for (const DeviceId g : c.gpus()) {
    const Device& d = c.device(g);
    const double expected = d.name == "node5/gpu3" ? 1.25 : d.node == 7 ? 2.0 : 1.0;
    EXPECT_EQ(d.slowdown, expected) << d.name;
    slowed += d.slowdown != 1.0 ? 1 : 0;
  }
  EXPECT_EQ(slowed, 1 + 8);
}

TEST(InstanceOverride, NodeNicsChangeOnlyThatNodesPorts) {
  const Cluster before = sixteen_dgx_h100();
  Cluster c = sixteen_dgx_h100();
  apply_instance_overrides(c, {set("topology.nodes[5].nics.bandwidth=\"100 Gb/s\""),
                               set("topology.nodes[node5].nics.latency=2us")});
  int ports = 0;
  for (std::size_t l = 0; l < c.links().size(); ++l) {
    const Link& link = c.links()[l];
    const bool port = link.name.rfind("net:node5/nic", 0) == 0;
    ports += port ? 1 : 0;
    EXPECT_DOUBLE_EQ(link.bandwidth.in_bytes_per_sec(), port ? 12.5e9 : before.links()[l].bandwidth.in_bytes_per_sec())
        << link.name;
    EXPECT_EQ(link.latency, port ? TimeNs::us(2) : before.links()[l].latency) << link.name;
  }
  EXPECT_EQ(ports, 8);
  // A route from node5 now has the port's bandwidth as its bottleneck, and the new latency.
  const auto r = find_route(c, *c.find("node5/gpu0"), *c.find("node6/gpu0"));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->bandwidth.in_bytes_per_sec(), 12.5e9);
  EXPECT_EQ(r->latency, TimeNs::us(2) + TimeNs::us(0.5));
}

TEST(InstanceOverride, ALinkDownCarriesNoRoute) {
  Cluster c = sixteen_dgx_h100();
  const std::string port = "net:node0/nic0-fabric/rail0-leaf0";
  const std::string nvlink = "node0/nvlink:gpu0-nvswitch0";
  apply_instance_overrides(c, {set("topology.links[" + port + "].down=true"), set("topology.links[" + nvlink + "].down=true")});
  EXPECT_TRUE(link_named(c, port).down);
  EXPECT_TRUE(link_named(c, nvlink).down);
  for (const auto& [from, to] : {std::pair{"node0/gpu0", "node1/gpu0"}, std::pair{"node0/gpu0", "node0/gpu1"}}) {
    const auto r = find_route(c, *c.find(from), *c.find(to));
    ASSERT_TRUE(r) << from << " -> " << to;
    for (const LinkId l : r->links) EXPECT_FALSE(c.link(l).down) << c.link(l).name;
  }
  // Inside the node gpu0 now goes over PCIe through the host.
  EXPECT_EQ(find_route(c, *c.find("node0/gpu0"), *c.find("node0/gpu1"))->path_class, PathClass::PHB);
}

TEST(InstanceOverride, BadWhatIfsNameTheFlag) {
  Cluster c = sixteen_dgx_h100();
  EXPECT_NE(override_error(c, "topology.gpus[node5/gpu9].slowdown=2").find("--set topology.gpus[node5/gpu9].slowdown=2: no GPU named 'node5/gpu9'"),
            std::string::npos);
  EXPECT_NE(override_error(c, "topology.gpus[node5/gpu3].slowdown=0.5").find("a slowdown is a factor from 1 to 100"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.gpus[node5/gpu3].speed=2").find("a GPU's what-if is slowdown"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.nodes[16].slowdown=2").find("this cluster has 16 nodes (node0 to node15)"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.nodes[3].nics.speed=2").find("nics.bandwidth and nics.latency"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.links[nope].down=true").find("no link named 'nope'"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.links[node0/nvlink:gpu0-nvswitch0].down=maybe").find("down is true or false"), std::string::npos);
  EXPECT_NE(override_error(c, "topology.links[node0/nvlink:gpu0-nvswitch0].bandwidth=0 GB/s").find("must be positive"), std::string::npos);
  // A GPU cut off from the rest.
  Cluster one = load_topology_file(repo_path("topologies/dgx-h100.yaml"));
  apply_instance_overrides(one, {set("topology.links[node0/pcie:gpu0-pcie-switch0].down=true")});
  EXPECT_NE(override_error(one, "topology.links[node0/nvlink:gpu0-nvswitch0].down=true").find("cannot reach"), std::string::npos);
}

}  // namespace
}  // namespace mpsim::topology
