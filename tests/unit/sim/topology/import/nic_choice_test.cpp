// Storage and front-end NICs are told from training rails the same way in both inputs: a NIC that
// shares no PCIe switch with a GPU is left out when others do; --exclude-nic leaves out more by name.
#include "sim/topology/import/nic_choice.h"

#include <gtest/gtest.h>

#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology::import {
namespace {

using testing::error_of;
using testing::only_node;

TEST(NicChoice, TheDgxA100StorageNicIsLeftOutOfBothInputs) {
  for (const char* file : {"dgx-a100.topo.txt", "dgx-a100.nccl.xml"}) {
    const TopologySpec spec = testing::import_sample(file, "a100-80gb");
    EXPECT_EQ(only_node(spec).nics.count, 8) << file;
    EXPECT_NE(spec.source.find("Left out as storage or front-end NICs: mlx5_8, mlx5_9"), std::string::npos)
        << spec.source;
    EXPECT_NE(spec.source.find("nic7 = mlx5_7"), std::string::npos) << spec.source;
    EXPECT_EQ(spec.source.find("nic8"), std::string::npos) << spec.source;
  }
}

TEST(NicChoice, ExcludedNicsGoByEitherName) {
  ImportOptions options;
  options.gpu_kind = "a100-80gb";
  options.exclude_nics = {"NIC3", "mlx5_5"};
  const TopologySpec spec = import_topology_file(testing::data_path("dgx-a100.topo.txt"), options);
  EXPECT_EQ(only_node(spec).nics.count, 6);
  EXPECT_NE(spec.source.find("Left out as asked (--exclude-nic): mlx5_3, mlx5_5."), std::string::npos) << spec.source;
  options.exclude_nics = {"mlx5_12"};
  EXPECT_EQ(error_of([&] { (void)import_topology_file(testing::data_path("dgx-a100.topo.txt"), options); }),
            "--exclude-nic mlx5_12: no NIC is called 'mlx5_12' (the input has NIC0 = mlx5_0, NIC1 = mlx5_1, NIC2 = "
            "mlx5_2, NIC3 = mlx5_3, NIC4 = mlx5_4, NIC5 = mlx5_5, NIC6 = mlx5_6, NIC7 = mlx5_7, NIC8 = mlx5_8, NIC9 = "
            "mlx5_9)");
}

TEST(NicChoice, WithoutRailsEveryNicStays) {
  // No NIC shares a switch with a GPU: nothing tells rails from the rest, so all are kept.
  const NicChoice c = choose_nics({{"NIC0", "mlx5_0", false}, {"NIC1", "mlx5_1", false}}, {});
  EXPECT_EQ(c.keep, (std::vector<bool>{true, true}));
  EXPECT_TRUE(c.note.empty());
  ImportOptions all;
  all.all_nics = true;
  EXPECT_EQ(choose_nics({{"NIC0", "mlx5_0", true}, {"NIC1", "mlx5_1", false}}, all).keep,
            (std::vector<bool>{true, true}));
  EXPECT_EQ(choose_nics({{"NIC0", "mlx5_0", true}, {"NIC1", "mlx5_1", false}}, {}).keep,
            (std::vector<bool>{true, false}));
}

}  // namespace
}  // namespace mpsim::topology::import
