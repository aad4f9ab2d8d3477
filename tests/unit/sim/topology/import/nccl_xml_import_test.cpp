#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/topology/import/nccl_model.h"
#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology::import {
namespace {

using testing::class_of;
using testing::data_path;
using testing::error_of;
using testing::gbps;
using testing::import_sample;
using testing::only_node;
using testing::route;

std::string gpu(int i) { return fmt::format("node0/gpu{}", i); }
std::string nic(int i) { return fmt::format("node0/nic{}", i); }

TEST(NcclXmlImport, DgxA100) {
  const TopologySpec spec = import_sample("dgx-a100.nccl.xml", "a100-80gb", true);
  EXPECT_EQ(spec.name, "dgx-a100");
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.gpus, 8);
  EXPECT_EQ(node.cpus, 2);
  EXPECT_EQ(node.nvswitches, 1);       // six NVSwitch chips, one switch plane
  EXPECT_EQ(node.pcie_switches, 20);   // 4 trees of a switch over four (the NVMe bridge is left out)
  EXPECT_EQ(node.nics.count, 10);      // 8 compute NICs and both ports of the storage NIC
  EXPECT_DOUBLE_EQ(node.nics.bandwidth.in_bytes_per_sec(), 25e9);  // the fastest <net speed>
  ASSERT_FALSE(node.links.empty());
  EXPECT_EQ(node.links.front().count, 12);  // 6 targets x count 2

  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, gpu(0), gpu(5));
  EXPECT_EQ(to_string(r.path_class), "NVL");
  EXPECT_DOUBLE_EQ(gbps(r), 300.0);
  EXPECT_EQ(class_of(cluster, gpu(0), nic(1)), "PXB");
  EXPECT_DOUBLE_EQ(gbps(route(cluster, gpu(0), nic(1))), 31.0);  // 16.0 GT/s x16
  EXPECT_EQ(class_of(cluster, gpu(4), nic(9)), "PHB");
  const Route sys = route(cluster, gpu(0), nic(9));
  EXPECT_EQ(to_string(sys.path_class), "SYS");
  EXPECT_DOUBLE_EQ(gbps(sys), 16.0);  // AMD Rome: NCCL's AMD_ZEN12_BW
  EXPECT_NE(spec.source.find("AMD_ZEN12_BW"), std::string::npos) << spec.source;
  EXPECT_NE(spec.source.find("nic9 = mlx5_9"), std::string::npos) << spec.source;
}

// The two dumps of one machine agree: the same GPU-to-GPU classes and bandwidths, and the same
// classes from each GPU to each NIC.
TEST(NcclXmlImport, DgxA100AgreesWithNvidiaSmi) {
  ImportOptions options;
  options.gpu_kind = "a100-80gb";
  options.smp_bandwidth = BytesPerSec::gigabytes_per_sec(16);  // what the XML's CPU model gives
  options.all_nics = true;
  const Cluster xml = build_cluster(import_topology_file(data_path("dgx-a100.nccl.xml"), options));
  const Cluster smi = build_cluster(import_topology_file(data_path("dgx-a100.topo.txt"), options));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Route rx = route(xml, gpu(a), gpu(b));
      const Route rs = route(smi, gpu(a), gpu(b));
      EXPECT_EQ(rx.path_class, rs.path_class) << a << "->" << b;
      EXPECT_DOUBLE_EQ(gbps(rx), gbps(rs)) << a << "->" << b;
    }
    for (int n = 0; n < 10; ++n) {
      const Route rx = route(xml, gpu(a), nic(n));
      const Route rs = route(smi, gpu(a), nic(n));
      EXPECT_EQ(to_string(rx.path_class), to_string(rs.path_class)) << "gpu" << a << "->nic" << n;
      EXPECT_DOUBLE_EQ(gbps(rx), gbps(rs)) << "gpu" << a << "->nic" << n;
    }
  }
}

TEST(NcclXmlImport, P5) {
  const TopologySpec spec = import_sample("p5.nccl.xml", "h100-sxm");
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.gpus, 8);
  EXPECT_EQ(node.cpus, 2);
  EXPECT_EQ(node.nvswitches, 1);
  EXPECT_EQ(node.pcie_switches, 8);
  EXPECT_EQ(node.nics.count, 32);
  EXPECT_DOUBLE_EQ(node.nics.bandwidth.in_bytes_per_sec(), 12.5e9);  // 100000 Mb/s EFA
  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, gpu(0), gpu(7));
  EXPECT_EQ(to_string(r.path_class), "NVL");
  EXPECT_DOUBLE_EQ(gbps(r), (5 + 5 + 4 + 4) * 25.0);
  const Route efa = route(cluster, gpu(3), nic(13));  // GPU3's switch holds EFA devices 12..15
  EXPECT_EQ(to_string(efa.path_class), "PIX");
  EXPECT_DOUBLE_EQ(gbps(efa), 15.5);  // the NIC's 16.0 GT/s x8 link
  EXPECT_EQ(class_of(cluster, gpu(3), nic(4)), "PHB");   // GPU1's NIC, same socket
  EXPECT_EQ(class_of(cluster, gpu(3), nic(31)), "SYS");  // GPU7's NIC, other socket
  const auto smp = std::find_if(node.links.begin(), node.links.end(),
                                [](const LinkSpec& l) { return l.kind == LinkKind::Smp; });
  ASSERT_NE(smp, node.links.end());
  EXPECT_DOUBLE_EQ(smp->bandwidth.in_bytes_per_sec(), 24e9);  // AMD Genoa: NCCL's AMD_ZEN34_BW
}

TEST(NcclXmlImport, AmbiguousComputeCapabilityNeedsTheGpuKind) {
  EXPECT_EQ(error_of([] { (void)import_sample("p5.nccl.xml"); }),
            data_path("p5.nccl.xml") +
                ":7:9: sm 90 fits several GPU kinds (h100-sxm, h200), and the file does not say which: give the GPU "
                "kind (--gpu KIND) (field 'system/cpu[0]/pci[0]/pci[0]/gpu[0]/@sm')");
}

std::string one_gpu_xml(int sm, const std::string& nvlinks = "") {
  return fmt::format(
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n"
      "    <pci busid=\"0000:18:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "      <gpu dev=\"0\" sm=\"{}\" rank=\"0\" gdr=\"1\">{}</gpu>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n",
      sm, nvlinks);
}

TEST(NcclXmlImport, ComputeCapabilityOfOneKindChoosesIt) {
  const TopologySpec spec = import_nccl_xml(one_gpu_xml(100), "b.xml", {});
  EXPECT_EQ(only_node(spec).gpu_kind, "b200");
  EXPECT_NE(spec.source.find("the only built-in kind with sm 100"), std::string::npos) << spec.source;
  EXPECT_EQ(error_of([] { (void)import_nccl_xml(one_gpu_xml(86), "a.xml", {}); }).rfind("a.xml:4:7: no built-in GPU kind has sm 86: give the GPU kind (--gpu KIND, one of a100-40gb", 0), 0u);
}

TEST(NcclXmlImport, MoreNvLinksThanTheKindHas) {
  ImportOptions options;
  options.gpu_kind = "v100-32gb";
  const std::string xml = one_gpu_xml(70, "<nvlink target=\"0000:c4:00.0\" count=\"12\" tclass=\"0x068000\"/>");
  EXPECT_EQ(error_of([&] { (void)import_nccl_xml(xml, "v.xml", options); }),
            "v.xml:4:7: this GPU lists 12 NVLinks, more than one v100-32gb has (6): check the GPU kind "
            "(field 'system/cpu[0]/pci[0]/gpu[0]')");
}

// Two GPUs joined directly (tclass of a GPU); both ends list the link, which counts once. The GPUs
// are listed out of `dev` order and are numbered by `dev`.
TEST(NcclXmlImport, DirectNvLinksAndDeviceOrder) {
  const std::string xml =
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">\n"
      "    <pci busid=\"0000:3b:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">\n"
      "      <gpu dev=\"1\" sm=\"70\" rank=\"1\" gdr=\"1\">\n"
      "        <nvlink target=\"0000:18:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"
      "        <nvlink target=\"0000:86:00.0\" count=\"1\" tclass=\"0x030200\"/>\n"  // not in the file
      "      </gpu>\n"
      "    </pci>\n"
      "    <pci busid=\"0000:18:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">\n"
      "      <gpu dev=\"0\" sm=\"70\" rank=\"0\" gdr=\"1\">\n"
      "        <nvlink target=\"0000:3B:00.0\" count=\"2\" tclass=\"0x030200\"/>\n"
      "      </gpu>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n";
  ImportOptions options;
  options.gpu_kind = "v100-16gb";
  const TopologySpec spec = import_nccl_xml(xml, "dgx1.xml", options);
  const NodeSpec& node = only_node(spec);
  EXPECT_EQ(node.nvswitches, 0);
  const Cluster cluster = build_cluster(spec);
  const Route r = route(cluster, gpu(0), gpu(1));
  EXPECT_EQ(r.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(gbps(r), 50.0);
  ASSERT_FALSE(node.links.empty());
  EXPECT_EQ(node.links.front().pairs.size(), 1u);
  // GPU dev 0 is the second <pci> (18:00.0, 16 GT/s), dev 1 the first (3b:00.0, 8 GT/s).
  EXPECT_DOUBLE_EQ(gbps(route(cluster, gpu(0), "node0/cpu0")), 31.0);
  EXPECT_DOUBLE_EQ(gbps(route(cluster, gpu(1), "node0/cpu0")), 16.0);
  EXPECT_NE(spec.source.find("1 NVLinks to CPUs or to GPUs not in the file are left out"), std::string::npos)
      << spec.source;
  EXPECT_EQ(spec.source.find("CPUs:"), std::string::npos) << spec.source;  // one CPU: no SMP link
}

TEST(NcclModel, PcieLinkRates) {
  const auto gb = [](std::string_view speed, int width) { return pcie_link(speed, width).bandwidth.in_bytes_per_sec() / 1e9; };
  EXPECT_DOUBLE_EQ(gb("16.0 GT/s PCIe", 16), 31.0);
  EXPECT_DOUBLE_EQ(gb("16 GT/s", 16), 31.0);
  EXPECT_DOUBLE_EQ(gb("32.0 GT/s PCIe", 16), 63.0);
  EXPECT_DOUBLE_EQ(gb("32.0 GT/s", 8), 31.5);
  EXPECT_DOUBLE_EQ(gb("64.0 GT/s PCIe", 16), 121.0);
  EXPECT_DOUBLE_EQ(gb("8.0 GT/s PCIe", 16), 16.0);
  EXPECT_DOUBLE_EQ(gb("5.0 GT/s PCIe", 4), 2.0);
  EXPECT_DOUBLE_EQ(gb("2.5 GT/s PCIe", 1), 0.25);
  EXPECT_DOUBLE_EQ(gb("16.0 GT/s PCIe", 0), 31.0);  // width 0 counts as 16, as in NCCL
  EXPECT_TRUE(pcie_link("16.0 GT/s PCIe", 16).speed_known);
  EXPECT_FALSE(pcie_link("Unknown", 16).speed_known);
  EXPECT_DOUBLE_EQ(gb("Unknown", 16), 16.0);  // NCCL's fallback: 8 GT/s
  EXPECT_DOUBLE_EQ(gb("", 16), 16.0);
}

TEST(NcclModel, InterCpuBandwidthFollowsNccl) {
  const auto bw = [](std::string arch, std::string vendor, int family, int model) {
    return inter_cpu_bandwidth({std::move(arch), std::move(vendor), family, model});
  };
  EXPECT_EQ(bw("x86_64", "GenuineIntel", 6, 0x4f).nccl_name, "BDW_QPI_BW");
  EXPECT_DOUBLE_EQ(bw("x86_64", "GenuineIntel", 6, 0x4f).bandwidth.in_bytes_per_sec(), 6e9);
  EXPECT_EQ(bw("x86_64", "GenuineIntel", 6, 0x55).nccl_name, "SKL_QPI_BW");
  EXPECT_EQ(bw("x86_64", "GenuineIntel", 6, 0x8f).nccl_name, "SRP_QPI_BW");
  EXPECT_EQ(bw("x86_64", "GenuineIntel", 6, 0xcf).nccl_name, "ERP_QPI_BW");
  EXPECT_EQ(bw("x86_64", "GenuineIntel", 6, 0xad).nccl_name, "ERP_QPI_BW");
  EXPECT_EQ(bw("x86_64", "AuthenticAMD", 23, 49).nccl_name, "AMD_ZEN12_BW");
  EXPECT_EQ(bw("x86_64", "AuthenticAMD", 143, 49).nccl_name, "AMD_ZEN12_BW");
  EXPECT_EQ(bw("x86_64", "AuthenticAMD", 25, 17).nccl_name, "AMD_ZEN34_BW");
  EXPECT_DOUBLE_EQ(bw("x86_64", "AuthenticAMD", 26, 2).bandwidth.in_bytes_per_sec(), 32e9);
  EXPECT_EQ(bw("arm64", "", -1, -1).nccl_name, "ARM_BW");
  EXPECT_EQ(bw("ppc64", "", -1, -1).nccl_name, "P9_BW");
  EXPECT_DOUBLE_EQ(bw("x86_64", "Unknown", 1, 1).bandwidth.in_bytes_per_sec(), kDefaultSmpBandwidth.in_bytes_per_sec());
}

}  // namespace
}  // namespace mpsim::topology::import
