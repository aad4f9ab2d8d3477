// A catalogue of instance types (`plan --catalog`): YAML syntax, the reader's fields and money, node files
// by name from topologies/, and each instance type's cluster at its largest count (capped like topologies).
#include <algorithm>
#include <filesystem>

#include "planner/catalog.h"
#include "sim/core/yaml_field.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    const std::filesystem::path topologies = std::filesystem::path(MPSIM_SOURCE_DIR) / "topologies";
    const mpsim::planner::Catalog catalog = mpsim::planner::load_catalog(doc.root(), topologies, {});
    for (const auto& instance : catalog.instances) {
      const auto count = std::min<long long>(instance.available, mpsim::fuzz::kMaxFuzzNodes);
      (void)mpsim::planner::instance_cluster(instance, static_cast<int>(count));
    }
  });
  return 0;
}
