// Plan YAML, read and then resolved against a shipped cluster and model (degrees, batch,
// partition, placement, schedule parameters are all checked there).
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

struct Context {
  mpsim::topology::Cluster cluster =
      mpsim::topology::load_topology_file(mpsim::fuzz::source_path("topologies/16x-dgx-h100.yaml"));
  mpsim::model::Model model = mpsim::model::load_model_file(mpsim::fuzz::source_path("configs/models/gpt3-13b.yaml"));
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Context context;
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    (void)mpsim::plan::resolve_plan(mpsim::plan::load_plan_spec(doc.root()), context.cluster, context.model);
  });
  return 0;
}
