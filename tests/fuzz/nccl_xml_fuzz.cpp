// NCCL topology XML: the XML reader and the importer's walk of <cpu>/<pci>/<gpu>/<nvlink>/<nic>.
#include "sim/topology/import/nccl_xml.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    (void)mpsim::topology::build_cluster(
        mpsim::topology::import::import_nccl_xml(mpsim::fuzz::text_of(data, size), "fuzz.xml", {}));
  });
  return 0;
}
