// Topology YAML: YAML syntax (yaml-cpp), the loader's typed fields, and the expansion to a Cluster.
#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    const mpsim::topology::TopologySpec spec = mpsim::topology::load_topology_spec(doc.root());
    long long nodes = 0;
    for (const auto& group : spec.nodes) nodes += group.count;
    if (nodes <= mpsim::fuzz::kMaxFuzzNodes) (void)mpsim::topology::build_cluster(spec);
  });
  return 0;
}
