#include "executor/interpreter/step_record.h"

#include <cstring>

#include <fmt/format.h>

#include "sim/trace/timeline.h"

namespace mpsim::executor {
namespace {

constexpr std::size_t kFixedBytes = sizeof(double) + 2 * sizeof(std::int64_t);

[[noreturn]] void refuse(int from_rank, const std::string& what) {
  throw StepRecordError(fmt::format("the step record from rank {} is corrupt: {}", from_rank, what));
}

void check_span(const RankSpan& s, std::size_t index, int from_rank) {
  const auto bad = [&](const char* field, std::int64_t value) {
    refuse(from_rank, fmt::format("span {} has {} = {}", index, field, value));
  };
  if (s.kind < 0 || s.kind > static_cast<std::int32_t>(trace::SpanKind::ForwardBackward)) bad("kind", s.kind);
  if (s.role < 0 || s.role > static_cast<std::int32_t>(Role::Collective)) bad("role", s.role);
  if (s.start < 0) bad("start", s.start);
  if (s.end < s.start) bad("end before its start", s.end);
  if (s.op < 0) bad("op", s.op);
}

}  // namespace

std::size_t step_record_words(std::size_t spans) noexcept {
  return (kFixedBytes + spans * sizeof(RankSpan) + sizeof(float) - 1) / sizeof(float);
}

std::vector<float> encode_step_record(const StepRecord& record) {
  std::vector<float> out(step_record_words(record.spans.size()));
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, &record.loss_sum, sizeof(double));
  p += sizeof(double);
  std::memcpy(p, &record.loss_count, sizeof(std::int64_t));
  p += sizeof(std::int64_t);
  std::memcpy(p, &record.peak_memory, sizeof(std::int64_t));
  p += sizeof(std::int64_t);
  if (!record.spans.empty()) std::memcpy(p, record.spans.data(), record.spans.size() * sizeof(RankSpan));
  return out;
}

std::array<float, 2> encode_span_count(std::size_t spans) noexcept {
  static_assert(sizeof(std::array<float, 2>) == sizeof(std::int64_t));
  const auto count = static_cast<std::int64_t>(spans);
  std::array<float, 2> words{};
  std::memcpy(words.data(), &count, sizeof count);
  return words;
}

std::size_t decode_span_count(std::span<const float, 2> words, int from_rank) {
  std::int64_t count = 0;
  std::memcpy(&count, words.data(), sizeof count);
  if (count < 0 || count > kMaxRecordSpans) {
    refuse(from_rank, fmt::format("it announces {} spans (at most {})", count, kMaxRecordSpans));
  }
  return static_cast<std::size_t>(count);
}

StepRecord decode_step_record(std::span<const float> words, std::size_t spans, int from_rank) {
  if (words.size() != step_record_words(spans)) {
    refuse(from_rank, fmt::format("{} words for {} spans, expected {}", words.size(), spans, step_record_words(spans)));
  }
  StepRecord r;
  const auto* p = reinterpret_cast<const unsigned char*>(words.data());
  std::memcpy(&r.loss_sum, p, sizeof(double));
  p += sizeof(double);
  std::memcpy(&r.loss_count, p, sizeof(std::int64_t));
  p += sizeof(std::int64_t);
  std::memcpy(&r.peak_memory, p, sizeof(std::int64_t));
  p += sizeof(std::int64_t);
  if (r.loss_count < 0) refuse(from_rank, fmt::format("loss count = {}", r.loss_count));
  if (r.peak_memory < 0) refuse(from_rank, fmt::format("peak memory = {}", r.peak_memory));
  r.spans.resize(spans);
  if (spans > 0) std::memcpy(r.spans.data(), p, spans * sizeof(RankSpan));
  for (std::size_t i = 0; i < spans; ++i) check_span(r.spans[i], i, from_rank);
  return r;
}

}  // namespace mpsim::executor
