// `--set` overrides: each input line is one `--set TARGET.PATH=VALUE`, applied to the shipped
// GPT-3 13B plan on four p4d nodes exactly as `mpsim simulate` applies them.
#include <yaml-cpp/yaml.h>

#include "cli/inputs.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

/// Whether `value` may be read as an integer above kMaxFuzzNodes: a run of decimal digits (leading
/// zeros dropped: 08135) or whatever else yaml-cpp reads as an integer (0xC22).
bool large_count(const std::string& value) {
  std::string digits;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i < value.size() && value[i] >= '0' && value[i] <= '9') {
      if (!digits.empty() || value[i] != '0') digits += value[i];
      continue;
    }
    if (digits.size() > 3 || (!digits.empty() && std::stoll(digits) > mpsim::fuzz::kMaxFuzzNodes)) return true;
    digits.clear();
  }
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
                                       source_path("configs/plans/gpt3-13b-4x-p4d.yaml"), ""};
    (void)mpsim::cli::load_inputs(files, overrides);
  });
  return 0;
}
