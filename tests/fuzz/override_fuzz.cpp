// `--set` overrides: each input line is one `--set TARGET.PATH=VALUE`, applied to the shipped
// GPT-3 13B plan on four p4d nodes exactly as `mpsim simulate` applies them.
#include <yaml-cpp/yaml.h>

#include "cli/inputs.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

/// Whether `value` is YAML for an integer above kMaxFuzzNodes (any spelling yaml-cpp reads: 03106, 0xC22).
bool large_count(const std::string& value) {
  try {
    return YAML::Load(value).as<long long>() > mpsim::fuzz::kMaxFuzzNodes;
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using mpsim::fuzz::source_path;
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    std::vector<mpsim::Override> overrides;
    const std::string_view text = mpsim::fuzz::text_of(data, size);
    std::size_t begin = 0;
    while (begin < text.size() && overrides.size() < 8) {
      const std::size_t end = std::min(text.find('\n', begin), text.size());
      overrides.push_back(mpsim::parse_override(text.substr(begin, end - begin), "--set"));
      begin = end + 1;
    }
    for (const mpsim::Override& o : overrides) {
      if (o.target == "topology" && large_count(o.value)) return;  // node counts: see kMaxFuzzNodes
    }
    const mpsim::cli::InputFiles files{source_path("topologies/4x-p4d.yaml"), source_path("configs/models/gpt3-13b.yaml"),
                                       source_path("configs/plans/gpt3-13b-4x-p4d.yaml")};
    (void)mpsim::cli::load_inputs(files, overrides);
  });
  return 0;
}
