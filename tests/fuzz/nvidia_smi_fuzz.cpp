// `nvidia-smi topo -m` text (the matrix reader and the node it builds).
#include "sim/topology/import/nvidia_smi_topo.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    mpsim::topology::import::ImportOptions options;
    options.gpu_kind = "h100";
    (void)mpsim::topology::build_cluster(
        mpsim::topology::import::import_nvidia_smi_topo(mpsim::fuzz::text_of(data, size), "fuzz.txt", options));
  });
  return 0;
}
