// The op kinds' table (schedule::kOpTraits): each kind is written in its own way, and its class and
// trace span agree with the span kinds' table.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/schedule/program.h"

namespace mpsim::schedule {
namespace {

TEST(OpTraits, EveryKindIsWrittenInAWayOfItsOwn) {
  std::set<std::string_view> names;
  std::set<std::string> texts;
  for (const OpTraits& t : kOpTraits) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(&traits(t.kind), &t);
    EXPECT_EQ(to_string(t.kind), t.name);
    EXPECT_TRUE(names.insert(t.name).second);
    Op op;
    op.kind = t.kind;
    op.microbatch = 3;
    op.chunk = 1;
    op.backward_microbatch = 1;
    const std::string text = to_text(op, true);
    EXPECT_TRUE(texts.insert(text).second) << text;
    if (t.kind == OpKind::ForwardBackward) {
      EXPECT_EQ(text, "F3.1&B1.0");
    } else if (t.numbered) {
      EXPECT_EQ(text, std::string(t.text) + "3.1");
      EXPECT_EQ(to_text(op, false), std::string(t.text) + "3");
    } else {
      EXPECT_EQ(text, t.text);
    }
  }
}

TEST(OpTraits, TheClassAgreesWithTheTraceSpan) {
  for (const OpTraits& t : kOpTraits) {
    SCOPED_TRACE(std::string(t.name));
    const trace::SpanTraits& span = trace::traits(span_kind(t.kind));
    EXPECT_EQ(span.compute, is_compute(t.kind));
    EXPECT_EQ(span.numbered, t.numbered);
    EXPECT_EQ(is_send(t.kind), span.kind == trace::SpanKind::Send);
    EXPECT_EQ(is_recv(t.kind), span.kind == trace::SpanKind::Recv);
    EXPECT_EQ(is_collective(t.kind), span.group == trace::SpanGroup::Collective);
    EXPECT_EQ(is_pass(t.kind), is_compute(t.kind) && t.kind != OpKind::OptimizerStep);
    // One class each.
    EXPECT_EQ(int{is_compute(t.kind)} + int{is_send(t.kind)} + int{is_recv(t.kind)} + int{is_collective(t.kind)}, 1);
  }
}

}  // namespace
}  // namespace mpsim::schedule
