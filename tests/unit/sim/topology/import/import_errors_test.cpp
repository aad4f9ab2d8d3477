// Broken inputs give one located error line: FILE:LINE:COL: message (field '...').
#include <gtest/gtest.h>

#include "tests/unit/sim/topology/import/import_test_support.h"

namespace mpsim::topology::import {
namespace {

using testing::data_path;
using testing::error_of;
using testing::import_sample;

std::string smi_error(const std::string& text, const std::string& gpu = "a100-80gb") {
  ImportOptions options;
  options.gpu_kind = gpu;
  return error_of([&] { (void)import_nvidia_smi_topo(text, "m.txt", options); });
}

std::string xml_error(const std::string& text, const std::string& gpu = "h100-sxm") {
  ImportOptions options;
  options.gpu_kind = gpu;
  return error_of([&] { (void)import_nccl_xml(text, "t.xml", options); });
}

TEST(ImportErrors, BrokenSampleFiles) {
  EXPECT_EQ(error_of([] { (void)import_sample("broken-ragged.topo.txt", "a100-80gb"); }),
            data_path("broken-ragged.topo.txt") +
                ":4:21: row GPU2 has 4 entries, but the header names 5 devices (ragged row) "
                "(field 'row GPU2, column NIC0')");
  EXPECT_EQ(error_of([] { (void)import_sample("broken-entry.topo.txt", "a100-80gb"); }),
            data_path("broken-entry.topo.txt") +
                ":4:18: unknown entry 'NV?' (one of X, NV<n>, PIX, PXB, PHB, NODE, SYS) "
                "(field 'row GPU2, column GPU3')");
  EXPECT_EQ(error_of([] { (void)import_sample("broken-no-matrix.txt", "a100-80gb"); }),
            data_path("broken-no-matrix.txt") +
                ":1:1: not an `nvidia-smi topo -m` matrix: no header line starting with GPU0 (expected `GPU0 GPU1 "
                "... CPU Affinity NUMA Affinity`)");
  EXPECT_EQ(error_of([] { (void)import_sample("broken-mismatch.nccl.xml"); }),
            data_path("broken-mismatch.nccl.xml") + ":7:5: XML: </pcie> does not match <pci> opened at line 3, "
                                                    "column 5");
  EXPECT_EQ(error_of([] { (void)import_sample("broken-attr.nccl.xml", "h100"); }),
            data_path("broken-attr.nccl.xml") +
                ":5:39: 'two' is not an integer (field 'system/cpu[0]/pci[0]/gpu[0]/nvlink[0]/@count')");
}

TEST(ImportErrors, MissingOrUnknownGpuKind) {
  const std::string missing = error_of([] { (void)import_sample("p3.topo.txt"); });
  EXPECT_EQ(missing.rfind(data_path("p3.topo.txt") +
                              ":2:1: `nvidia-smi topo -m` does not name the GPU model: give the GPU kind (--gpu KIND, "
                              "one of a100-40gb, a100-80gb, b200, b300, gb200, gb300, h100-sxm, h200, t4-16gb, "
                              "v100-16gb, v100-32gb",
                          0),
            0u)
      << missing;
  EXPECT_EQ(error_of([] { (void)import_sample("p3.topo.txt", "v200"); }),
            data_path("p3.topo.txt") +
                ":2:1: unknown GPU kind 'v200' (one of a100-40gb, a100-80gb, b200, b300, gb200, gb300, h100-sxm, h200, "
                "t4-16gb, v100-16gb, "
                "v100-32gb)");
}

TEST(ImportErrors, NvLinkCountsTheGpuKindCannotHave) {
  // An NVSwitch matrix (NV12 everywhere) read with a V100, which has 6 NVLink ports.
  const std::string e = error_of([] { (void)import_sample("dgx-a100.topo.txt", "v100-16gb"); });
  EXPECT_EQ(e, data_path("dgx-a100.topo.txt") +
                   ":2:10: NV12 is more NVLinks than one v100-16gb has (6): check the GPU kind "
                   "(field 'row GPU0, column GPU1')");
  // Direct links adding up past the ports.
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\t X \tNV8\nGPU1\tNV8\t X \n", "v100-32gb"),
            "m.txt:2:10: GPU0's NVLinks add up to 8, more than one v100-32gb has (6): check the GPU kind "
            "(field 'row GPU0, column GPU1')");
}

TEST(ImportErrors, MalformedMatrices) {
  EXPECT_EQ(smi_error("GPU0\t X \tNV12\nGPU1\tNV12\t X \n"),
            "m.txt:1:1: this is a row of the matrix, but the header line above it (GPU0 GPU1 ... CPU Affinity) is "
            "missing");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\t X \tNV12\nGPU1\tNV11\t X \n"),
            "m.txt:3:6: GPU1 to GPU0 is NV11, but GPU0 to GPU1 is NV12: the matrix must be symmetric "
            "(field 'row GPU1, column GPU0')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\t X \tX\nGPU1\tX\t X \n"),
            "m.txt:2:10: X marks a device's own column only (field 'row GPU0, column GPU1')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n"),
            "m.txt:2:6: expected X where GPU0 meets itself (field 'row GPU0, column GPU0')");
  EXPECT_EQ(smi_error("\tGPU0\tNIC0\nGPU0\t X \tNV2\nNIC0\tNV2\t X \n"),
            "m.txt:2:10: only GPUs have NVLinks (field 'row GPU0, column NIC0')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\tNIC0\nGPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X \tPIX\n\nLegend:\n"),
            "m.txt:4:1: the matrix has no row for NIC0 (the header names 3 devices) (field 'row NIC0')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X \n"),
            "m.txt:2:14: row GPU0 has more entries than the header has device columns (2) (field 'row GPU0')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU2\nGPU0\t X \tPIX\nGPU2\tPIX\t X \n"),
            "m.txt:1:7: GPU columns must be GPU0, GPU1, ... in order; found GPU2 where GPU1 belongs (field "
            "'header')");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU0\tPIX\t X \n"), "m.txt:3:1: a second row for GPU0");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\n# comment\nGPU0\t X \tPIX\n"),
            "m.txt:2:1: expected a matrix row starting with a device name (such as GPU0), found '#'");
  EXPECT_EQ(smi_error("\tGPU0\tGPU1\tNV4\n"), "m.txt:1:12: 'NV4' is not a device name (field 'header')");
}

TEST(ImportErrors, MalformedNcclTopologies) {
  EXPECT_EQ(xml_error("<graphs version=\"1\"/>"),
            "t.xml:1:1: not an NCCL topology file: the root element is <graphs>, expected <system>");
  EXPECT_EQ(xml_error("<system version=\"1\"><cpu numaid=\"0\"/></system>"),
            "t.xml:1:1: no <pci> element with a <gpu> in it: there are no GPUs to import (field 'system')");
  EXPECT_EQ(xml_error("<system version=\"1\">\n  <cpu host_hash=\"0x1\"/>\n  <cpu host_hash=\"0x2\"/>\n</system>"),
            "t.xml:3:3: the file describes several hosts (host_hash); import one node at a time "
            "(field 'system/cpu[1]')");
  EXPECT_EQ(xml_error("<system>\n<cpu>\n<pci busid=\"0000:01:00.0\"><gpu sm=\"90\"/></pci>\n</cpu>\n</system>"),
            "t.xml:3:1: <pci> needs the attribute 'class' (field 'system/cpu[0]/pci[0]')");
  EXPECT_EQ(xml_error("<system>\n<cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\"/></pci>\n"
                      "</cpu>\n</system>"),
            "t.xml:3:44: <gpu> needs the attribute 'sm' (field 'system/cpu[0]/pci[0]/gpu[0]')");
  EXPECT_EQ(xml_error("<system>\n<cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"90\">"
                      "<nvlink target=\"x\" count=\"0\" tclass=\"0x068000\"/></gpu></pci>\n</cpu>\n</system>"),
            "t.xml:3:76: must be between 1 and 64 (field 'system/cpu[0]/pci[0]/gpu[0]/nvlink[0]/@count')");
  EXPECT_EQ(xml_error("<system>\n<cpu>\n"
                      "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"90\"/></pci>\n"
                      "<pci busid=\"0000:02:00.0\" class=\"0x030200\"><gpu sm=\"80\"/></pci>\n</cpu>\n</system>"),
            "t.xml:4:49: GPUs of different models in one node (sm 90 and 80) are not supported "
            "(field 'system/cpu[0]/pci[1]/gpu[0]/@sm')");
}

TEST(ImportErrors, FilesAndSniffing) {
  EXPECT_EQ(sniff_import_format("  \n<?xml version=\"1.0\"?><system/>"), ImportFormat::NcclXml);
  EXPECT_EQ(sniff_import_format("\xEF\xBB\xBF<system/>"), ImportFormat::NcclXml);
  EXPECT_EQ(sniff_import_format("\tGPU0\tGPU1\n"), ImportFormat::NvidiaSmiTopo);
  EXPECT_EQ(sniff_import_format(""), ImportFormat::NvidiaSmiTopo);
  const std::string missing = data_path("no-such-file.txt");
  EXPECT_EQ(error_of([&] { (void)import_topology_file(missing, {}); }).rfind(missing + ": cannot read", 0), 0u);
}

}  // namespace
}  // namespace mpsim::topology::import
