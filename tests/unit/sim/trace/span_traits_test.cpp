// The span kinds' table (trace::kSpanTraits): a Chrome trace written with every kind reads back with
// every kind and its name, and a comparison counts every kind, F&B pairs included.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/trace/compare.h"
#include "sim/trace/trace_json.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::trace {
namespace {

/// One span of every kind on one lane, one after the other, microbatch 3 of chunk 1.
Timeline every_kind() {
  Timeline t;
  t.lanes.push_back({"node0", "gpu0 compute"});
  std::int64_t at = 0;
  for (const SpanTraits& row : kSpanTraits) {
    Span s;
    s.kind = row.kind;
    s.start_ns = at;
    s.end_ns = at + 1000;
    s.microbatch = 3;
    s.chunk = 1;
    at += 2000;
    t.spans.push_back(s);
  }
  return t;
}

TEST(SpanTraits, EveryKindReadsBackFromItsWord) {
  std::set<std::string_view> words;
  for (const SpanTraits& row : kSpanTraits) {
    EXPECT_TRUE(words.insert(row.word).second) << row.word;
    EXPECT_EQ(to_string(row.kind), row.word);
    EXPECT_EQ(&traits(row.kind), &row);
  }
  const Timeline written = every_kind();
  const TraceFile read = parse_trace(chrome_trace(written, Report{}), "every_kind.json");
  ASSERT_EQ(read.timeline.spans.size(), written.spans.size());
  for (std::size_t i = 0; i < written.spans.size(); ++i) {
    EXPECT_EQ(read.timeline.spans[i].kind, written.spans[i].kind) << to_string(written.spans[i].kind);
  }
}

TEST(SpanTraits, ANumberedSpanIsNamedByItsMicrobatchAndChunk) {
  const std::string trace = chrome_trace(every_kind(), Report{});
  for (const SpanTraits& row : kSpanTraits) {
    const std::string name = "\"name\":\"" + std::string(row.trace_name) + (row.numbered ? "3.1\"" : "\"");
    EXPECT_NE(trace.find(name), std::string::npos) << name;
  }
}

TEST(SpanTraits, EveryGroupHasAKindAndTheCollectivesShareOne) {
  std::set<SpanGroup> groups;
  for (const SpanTraits& row : kSpanTraits) groups.insert(row.group);
  EXPECT_EQ(groups.size(), kSpanGroupCount);
  EXPECT_EQ(traits(SpanKind::AllReduce).group, traits(SpanKind::AllToAll).group);
  EXPECT_NE(traits(SpanKind::Forward).group, traits(SpanKind::ForwardBackward).group);
}

TEST(SpanTraits, ComparingCountsEveryKind) {
  StepRecord record;
  record.timeline = every_kind();
  const Comparison c = compare(record, record);
  ASSERT_EQ(c.per_kind.size(), kSpanKindCount);
  for (std::size_t i = 0; i < kSpanKindCount; ++i) {
    EXPECT_EQ(c.per_kind[i].kind, kSpanTraits[i].kind);
    EXPECT_EQ(c.per_kind[i].predicted.count, 1);
  }
}

}  // namespace
}  // namespace mpsim::trace
