// The executor's step record as rank 0 receives it from another rank: the span-count message (the
// first eight bytes), then the record.
#include <array>
#include <cstring>
#include <vector>

#include "executor/interpreter/step_record.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::array<float, 2> count{};
  std::memcpy(count.data(), data, 8);
  std::vector<float> words((size - 8) / sizeof(float));
  if (!words.empty()) std::memcpy(words.data(), data + 8, words.size() * sizeof(float));
  mpsim::fuzz::expect_only<mpsim::executor::StepRecordError>([&] {
    const std::size_t spans = mpsim::executor::decode_span_count(count, 1);
    (void)mpsim::executor::decode_step_record(words, spans, 1);
  });
  return 0;
}
