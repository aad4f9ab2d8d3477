// PyTorch's pipeline-schedule CSV (`mpsim schedule import`). The first byte picks the shape the
// rows are read against, so the corpus reaches every schedule kind's placement rules.
#include "interop/formats/torch_csv.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using mpsim::plan::ScheduleKind;
  static constexpr mpsim::schedule::PipelineShape kShapes[] = {
      {.stages = 4, .microbatches = 8, .chunks = 2, .kind = ScheduleKind::ZbV},
      {.stages = 4, .microbatches = 10, .chunks = 2, .kind = ScheduleKind::DualPipeV},
      {.stages = 4, .microbatches = 8, .chunks = 1, .kind = ScheduleKind::OneFOneB},
      {.stages = 2, .microbatches = 4, .chunks = 2, .kind = ScheduleKind::Interleaved1F1B, .microbatch_group_size = 2},
  };
  const auto& shape = kShapes[data[0] % std::size(kShapes)];
  mpsim::fuzz::expect_only<mpsim::InputError>(
      [&] { (void)mpsim::interop::from_torch_csv(mpsim::fuzz::text_of(data + 1, size - 1), "fuzz.csv", shape); });
  return 0;
}
