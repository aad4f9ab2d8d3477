#include "executor/interpreter/step_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "sim/trace/timeline.h"

namespace mpsim::executor {
namespace {

StepRecord two_spans() {
  StepRecord r;
  r.loss_sum = 12.5;
  r.loss_count = 64;
  r.peak_memory = 1 << 20;
  r.spans.push_back({.start = 0, .end = 10, .kind = 0, .role = 0, .microbatch = 0, .chunk = 0, .stage = 1, .bytes = 0, .op = 0});
  r.spans.push_back({.start = 10,
                     .end = 25,
                     .kind = static_cast<std::int32_t>(trace::SpanKind::Send),
                     .role = static_cast<std::int32_t>(Role::Send),
                     .microbatch = 0,
                     .chunk = 0,
                     .stage = 1,
                     .bytes = 4096,
                     .op = 1});
  return r;
}

std::string error_of(std::span<const float> words, std::size_t spans) {
  try {
    (void)decode_step_record(words, spans, 3);
  } catch (const StepRecordError& e) {
    return e.what();
  }
  return "";
}

TEST(StepRecord, RoundTripsItsBytes) {
  const StepRecord sent = two_spans();
  const std::vector<float> words = encode_step_record(sent);
  EXPECT_EQ(words.size(), step_record_words(2));
  const std::size_t spans = decode_span_count(encode_span_count(2), 3);
  ASSERT_EQ(spans, 2u);
  const StepRecord got = decode_step_record(words, spans, 3);
  EXPECT_EQ(got.loss_sum, sent.loss_sum);
  EXPECT_EQ(got.loss_count, sent.loss_count);
  EXPECT_EQ(got.peak_memory, sent.peak_memory);
  ASSERT_EQ(got.spans.size(), 2u);
  EXPECT_EQ(got.spans[1].bytes, 4096);
  EXPECT_EQ(got.spans[1].end, 25);
}

// A float carries 24 bits of integer exactly; the count message carries the whole int64.
TEST(StepRecord, SpanCountsAboveFloatPrecisionSurvive) {
  const std::size_t count = (std::size_t{1} << 24) - 1;
  EXPECT_EQ(decode_span_count(encode_span_count(count), 0), count);
}

TEST(StepRecord, CorruptRecordsNameRankAndField) {
  const std::vector<float> words = encode_step_record(two_spans());
  EXPECT_EQ(error_of(words, 3), "the step record from rank 3 is corrupt: " + std::to_string(words.size()) +
                                    " words for 3 spans, expected " + std::to_string(step_record_words(3)));
  const auto with_span = [&](auto change) {
    StepRecord r = two_spans();
    change(r.spans[1]);
    return encode_step_record(r);
  };
  EXPECT_EQ(error_of(with_span([](RankSpan& s) { s.kind = 99; }), 2),
            "the step record from rank 3 is corrupt: span 1 has kind = 99");
  EXPECT_EQ(error_of(with_span([](RankSpan& s) { s.role = 4; }), 2),
            "the step record from rank 3 is corrupt: span 1 has role = 4");
  EXPECT_EQ(error_of(with_span([](RankSpan& s) { s.end = 5; }), 2),
            "the step record from rank 3 is corrupt: span 1 has end before its start = 5");
  EXPECT_EQ(error_of(with_span([](RankSpan& s) { s.op = -1; }), 2),
            "the step record from rank 3 is corrupt: span 1 has op = -1");
  StepRecord negative = two_spans();
  negative.loss_count = -1;
  EXPECT_EQ(error_of(encode_step_record(negative), 2), "the step record from rank 3 is corrupt: loss count = -1");
  std::array<float, 2> huge{};
  const std::int64_t count = -5;
  std::memcpy(huge.data(), &count, sizeof count);
  EXPECT_THROW((void)decode_span_count(huge, 3), StepRecordError);
}

}  // namespace
}  // namespace mpsim::executor
