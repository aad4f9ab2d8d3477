#pragma once
/// What every rank sends rank 0 after a step, and its wire form.
///
/// Records travel as floats through Backend::host_send (their bytes are copied, never converted):
/// first the span count (an int64 in two floats), then the record. Rank 0 decodes bytes another
/// process wrote, so decoding checks everything it will index with or trust: the count against a
/// limit, the length against the count, each span's kind, lane role and times. A bad record is a
/// StepRecordError naming the rank and the first bad field, never a wild read.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace mpsim::executor {

/// The lane a span is drawn on (one per role and rank).
enum class Role : std::uint8_t { Compute, Send, Recv, Collective };

/// One op's span as a rank measured it, in ns from the step's start on that rank.
struct RankSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int32_t kind = 0;  // trace::SpanKind
  std::int32_t role = 0;  // Role
  std::int32_t microbatch = -1;
  std::int32_t chunk = -1;
  std::int32_t stage = -1;
  std::int64_t bytes = 0;
  std::int64_t op = -1;  // index in the rank's stream: the op's identity in the Program
};

struct StepRecord {
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  std::int64_t peak_memory = 0;
  std::vector<RankSpan> spans;
};

class StepRecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// More spans than any rank's step has ops (a million-op stream is far beyond any schedule).
inline constexpr std::int64_t kMaxRecordSpans = std::int64_t{1} << 24;

/// The floats a record of `spans` spans takes.
[[nodiscard]] std::size_t step_record_words(std::size_t spans) noexcept;
[[nodiscard]] std::vector<float> encode_step_record(const StepRecord& record);
[[nodiscard]] std::array<float, 2> encode_span_count(std::size_t spans) noexcept;

/// The span count rank `from_rank` announced. Throws StepRecordError when it is negative or above
/// kMaxRecordSpans.
[[nodiscard]] std::size_t decode_span_count(std::span<const float, 2> words, int from_rank);
/// The record rank `from_rank` sent with `spans` spans. Throws StepRecordError when the length does
/// not match, or a span has an unknown kind or role, a negative start, an end before its start or a
/// negative op; or the loss count or peak memory is negative.
[[nodiscard]] StepRecord decode_step_record(std::span<const float> words, std::size_t spans, int from_rank);

}  // namespace mpsim::executor
