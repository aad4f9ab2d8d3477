// Model YAML: dense, MoE and MLA blocks, units, and the derived per-layer costs.
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    (void)mpsim::model::load_model(doc.root());
  });
  return 0;
}
