// Topology YAML: YAML syntax (yaml-cpp), the loader's typed fields, and the expansion to a Cluster.
#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    (void)mpsim::topology::build_cluster(mpsim::topology::load_topology_spec(doc.root()));
  });
  return 0;
}
