// The catalogue reader: money, the shipped catalogue, node files resolved beside the catalogue before
// topologies/, the cluster of N instances, and an error at file, line and field for each malformed entry.
#include "planner/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/core/input_error.h"
#include "tests/unit/planner/catalog_test_support.h"

namespace mpsim::planner {
namespace {

namespace fs = std::filesystem;

const fs::path kTopologies = fs::path(MPSIM_SOURCE_DIR) / "topologies";

using testing::TempDir;

TEST(Money, AnAmountAndItsCurrencyCode) {
  EXPECT_EQ(parse_money("98.32 USD").amount, 98.32);
  EXPECT_EQ(parse_money("98.32 USD").currency, "USD");
  EXPECT_EQ(parse_money("2e6 EUR").amount, 2e6);
  EXPECT_EQ(parse_money("2e6 EUR").currency, "EUR");
  EXPECT_EQ(parse_money("12USD").amount, 12);
  EXPECT_EQ(parse_money("-3 USD").amount, -3);  // a number; the reader refuses it as a price
  for (const char* bad : {"98.32", "USD", "98.32 usd", "98.32 US", "abc USD", "", "1 2 USD", "inf USD"}) {
    EXPECT_TRUE(money_error(bad).has_value()) << bad;
  }
  EXPECT_EQ(money_text(1234567.4, "USD"), "1,234,567 USD");
  EXPECT_EQ(money_text(999.5, "EUR"), "1,000 EUR");
  EXPECT_EQ(money_text(12, "USD"), "12 USD");
}

TEST(Catalog, ReadsTheShippedCatalogue) {
  const Catalog c =
      load_catalog_file(fs::path(MPSIM_SOURCE_DIR) / "configs" / "catalogs" / "aws-gpu.yaml", {kTopologies});
  EXPECT_EQ(c.currency, "USD");
  ASSERT_EQ(c.instances.size(), 4U);
  EXPECT_EQ(c.instances[0].name, "p5.48xlarge");
  EXPECT_EQ(c.instances[0].price_per_hour, 55.04);
  EXPECT_EQ(c.instances[1].name, "p4de.24xlarge");
  EXPECT_EQ(c.instances[2].name, "p4d.24xlarge");
  EXPECT_EQ(c.instances[3].name, "p3.16xlarge");
  for (const CatalogInstance& i : c.instances) {
    EXPECT_EQ(i.gpus_per_instance, 8) << i.name;
    EXPECT_GE(i.available, 1) << i.name;
    EXPECT_EQ(fs::path(i.node_file).parent_path(), kTopologies) << i.name;
  }
}

TEST(Catalog, TheClusterOfNInstancesIsNNodesOfItsNodeFile) {
  const TempDir dir;
  const fs::path file = dir.write(
      "c.yaml", "instances:\n  - { name: p4d, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 3 }\n");
  const Catalog c = load_catalog_file(file, {kTopologies});
  const topology::Cluster three = instance_cluster(c.instances[0], 3);
  EXPECT_EQ(three.gpus().size(), 24U);
  EXPECT_EQ(three.node_count, 3);
  EXPECT_EQ(three.name, "3x p4d");
  EXPECT_FALSE(c.instances[0].own_fabric);
  // A p4d node has 4 x 100 Gb/s EFA NICs (topologies/p4d.24xlarge.yaml); three nodes meet on its fabric, a
  // single switch: one switch more than the nodes' own devices, and none for one instance.
  const topology::Cluster one = instance_cluster(c.instances[0], 1);
  EXPECT_EQ(three.devices().size(), 3 * one.devices().size() + 1);
}

TEST(Catalog, NodeFilesAreFoundBesideTheCatalogueFirst) {
  const TempDir dir;
  // A 4-GPU node under a shipped file's name: the catalogue's folder wins over topologies/.
  dir.write("p4d.24xlarge.yaml",
            "cluster: { nodes: 1, gpus_per_node: 4, gpu: a100-40gb,\n"
            "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"2 us\" },\n"
            "  inter_node: { kind: infiniband, bandwidth: \"200 Gb/s\", latency: \"5 us\", nics_per_node: 4 } }\n");
  const fs::path file = dir.write(
      "c.yaml", "instances:\n  - { name: small, node_from: p4d.24xlarge.yaml, price_per_hour: \"8 USD\", available: 2 }\n");
  const Catalog c = load_catalog_file(file, {kTopologies});
  EXPECT_EQ(c.instances[0].gpus_per_instance, 4);
  EXPECT_EQ(instance_cluster(c.instances[0], 2).gpus().size(), 8U);
}

TEST(Catalog, AFabricOfTheEntryReplacesTheNodeFiles) {
  const TempDir dir;
  const fs::path file = dir.write(
      "c.yaml",
      "instances:\n  - { name: p4d, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 4,\n"
      "      fabric: { kind: fat-tree, levels: 2, leaf_ports: 8, network: efa } }\n");
  const Catalog c = load_catalog_file(file, {kTopologies});
  ASSERT_TRUE(c.instances[0].node.fabric.has_value());
  EXPECT_EQ(c.instances[0].node.fabric->kind, topology::FabricKind::FatTree);
  EXPECT_TRUE(c.instances[0].own_fabric);
  // 4 nodes x 4 NICs on leaves of 8 ports: 2 leaves and a spine.
  EXPECT_EQ(instance_cluster(c.instances[0], 4).devices().size(), 4 * instance_cluster(c.instances[0], 1).devices().size() + 3);
}

struct BadCatalog {
  const char* name;
  const char* entries;  ///< the lines under `instances:`
  int line;             ///< of the error
  const char* field;
  const char* says;     ///< part of the message
};

class MalformedCatalog : public ::testing::TestWithParam<BadCatalog> {};

TEST_P(MalformedCatalog, NamesFileLineAndField) {
  const BadCatalog& bad = GetParam();
  const TempDir dir;
  const fs::path file = dir.write("c.yaml", std::string("instances:\n") + bad.entries);
  try {
    (void)load_catalog_file(file, {kTopologies});
    FAIL() << bad.name << ": no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, file.string()) << bad.name;
    EXPECT_EQ(e.where().line, bad.line) << bad.name << ": " << e.what();
    EXPECT_EQ(e.field(), bad.field) << bad.name << ": " << e.what();
    EXPECT_NE(e.message().find(bad.says), std::string::npos) << bad.name << ": " << e.message();
  }
}

constexpr const char* kGood = "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 2 }\n";

INSTANTIATE_TEST_SUITE_P(
    Entries, MalformedCatalog,
    ::testing::Values(
        BadCatalog{"unknown node file",
                   "  - { name: a, node_from: p9.yaml, price_per_hour: \"32 USD\", available: 2 }\n", 2,
                   "instances[0].node_from", "no such topology file"},
        BadCatalog{"negative price",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"-32 USD\", available: 2 }\n", 2,
                   "instances[0].price_per_hour", "must be positive"},
        BadCatalog{"price without currency",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: 32, available: 2 }\n", 2,
                   "instances[0].price_per_hour", "currency code"},
        BadCatalog{"zero available",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 0 }\n", 2,
                   "instances[0].available", "between 1 and"},
        BadCatalog{"mixed currencies",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 2 }\n"
                   "  - { name: b, node_from: p5.48xlarge.yaml, price_per_hour: \"90 EUR\", available: 2 }\n",
                   3, "instances[1].price_per_hour", "one currency"},
        BadCatalog{"duplicate names",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 2 }\n"
                   "  - { name: a, node_from: p5.48xlarge.yaml, price_per_hour: \"90 USD\", available: 2 }\n",
                   3, "instances[1].name", "given twice (first at line 2)"},
        BadCatalog{"unknown key",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 2, gpus: 8 }\n",
                   2, "instances[0].gpus", "unknown"},
        BadCatalog{"missing price", "  - { name: a, node_from: p4d.24xlarge.yaml, available: 2 }\n", 2,
                   "instances[0].price_per_hour", ""},
        BadCatalog{"bad fabric",
                   "  - { name: a, node_from: p4d.24xlarge.yaml, price_per_hour: \"32 USD\", available: 2,\n"
                   "      fabric: { kind: torus } }\n",
                   3, "instances[0].fabric.kind", "unknown value"},
        BadCatalog{"no instances", "  []\n", 2, "instances", "at least one instance type"}),
    [](const auto& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (c == ' ') c = '_';
      }
      return name;
    });

TEST(Catalog, SeveralInstancesOfANodeWithoutNicsCannotMeet) {
  const TempDir dir;
  dir.write("box.yaml", "cluster: { nodes: 1, gpus_per_node: 2, gpu: a100-40gb,\n"
                        "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"2 us\" } }\n");
  const fs::path file = dir.write(
      "c.yaml", "instances:\n  - { name: box, node_from: box.yaml, price_per_hour: \"3 USD\", available: 2 }\n");
  try {
    (void)load_catalog_file(file, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.field(), "instances[0].available");
    EXPECT_NE(e.message().find("needs NICs"), std::string::npos) << e.message();
  }
  // One of them alone is a job.
  const fs::path alone = dir.write(
      "one.yaml", "instances:\n  - { name: box, node_from: box.yaml, price_per_hour: \"3 USD\", available: 1 }\n");
  EXPECT_EQ(instance_cluster(load_catalog_file(alone, {}).instances[0], 1).gpus().size(), 2U);
}

}  // namespace
}  // namespace mpsim::planner
