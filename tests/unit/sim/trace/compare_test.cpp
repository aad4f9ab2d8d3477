// compare(): predicted against measured steps on hand-made timelines and reports, with every expected
// number worked out by hand in the comments.
#include "sim/trace/compare.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mpsim::trace {
namespace {

constexpr std::int64_t kMs = 1'000'000;  // nanoseconds

Span span(SpanKind kind, std::int64_t start_ms, std::int64_t duration_ms) {
  Span s;
  s.kind = kind;
  s.start_ns = start_ms * kMs;
  s.end_ns = (start_ms + duration_ms) * kMs;
  return s;
}

DeviceReport device(const std::string& id, int stage, double busy_s, double step_s) {
  DeviceReport d;
  d.id = id;
  d.stage = stage;
  d.busy_s = busy_s;
  d.idle_s = step_s - busy_s;
  d.bubble_fraction = d.idle_s / step_s;
  return d;
}

/// Predicted: a 1 s step on two devices; forwards of 100, 200, 300 ms; two backwards of 400 ms.
StepRecord predicted_step() {
  StepRecord p;
  p.report.step_time_s = 1.0;
  p.report.bubble_fraction = 0.3;
  p.report.devices = {device("node0/gpu0", 0, 0.8, 1.0), device("node0/gpu1", 1, 0.6, 1.0)};
  Timeline t;
  t.lanes = {{"node0", "gpu0 compute"}};
  t.spans = {span(SpanKind::Forward, 0, 100), span(SpanKind::Forward, 100, 200), span(SpanKind::Forward, 300, 300),
             span(SpanKind::Backward, 600, 400), span(SpanKind::Backward, 1000, 400)};
  p.timeline = t;
  return p;
}

/// Measured: a 1.25 s step; forwards of 100, 200, 400, 700 ms; one send of 50 ms; no backward.
StepRecord measured_step() {
  StepRecord m;
  m.report.step_time_s = 1.25;
  m.report.bubble_fraction = 0.5;
  m.report.devices = {device("node0/gpu1", 1, 0.5, 1.25), device("node0/gpu0", 0, 1.0, 1.25)};
  Timeline t;
  t.lanes = {{"node0", "gpu0 compute"}};
  t.spans = {span(SpanKind::Forward, 0, 100), span(SpanKind::Send, 50, 50), span(SpanKind::Forward, 100, 200),
             span(SpanKind::Forward, 300, 400), span(SpanKind::Forward, 700, 700)};
  m.timeline = t;
  return m;
}

TEST(DurationStats, OddCountTakesTheMiddleValue) {
  const DurationStats s = duration_stats({300, 100, 200});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.total_s, 600e-9);
  EXPECT_DOUBLE_EQ(s.mean_s, 200e-9);
  EXPECT_DOUBLE_EQ(s.median_s, 200e-9);
}

TEST(DurationStats, EvenCountAveragesTheTwoMiddleValues) {
  // Sorted: 100 200 400 700; median (200 + 400) / 2 = 300; mean 1400 / 4 = 350.
  const DurationStats s = duration_stats({700, 100, 400, 200});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean_s, 350e-9);
  EXPECT_DOUBLE_EQ(s.median_s, 300e-9);
}

TEST(DurationStats, EmptyIsAllZero) {
  const DurationStats s = duration_stats({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.mean_s, 0);
  EXPECT_EQ(s.median_s, 0);
}

TEST(TimelineExtent, FirstStartToLastEnd) {
  Timeline t;
  t.spans = {span(SpanKind::Forward, 5, 10), span(SpanKind::Backward, 2, 4), span(SpanKind::Send, 20, 30)};
  EXPECT_DOUBLE_EQ(timeline_extent_s(t), 0.048);  // 2 ms .. 50 ms
  EXPECT_EQ(timeline_extent_s(Timeline{}), 0);
}

TEST(Compare, StepTimeErrorIsRelativeToTheMeasurement) {
  const Comparison c = compare(predicted_step(), measured_step());
  EXPECT_DOUBLE_EQ(c.predicted_step_time_s, 1.0);
  EXPECT_DOUBLE_EQ(c.measured_step_time_s, 1.25);
  ASSERT_TRUE(c.step_time_error.has_value());
  EXPECT_DOUBLE_EQ(*c.step_time_error, 0.2);  // |1 - 1.25| / 1.25
  EXPECT_DOUBLE_EQ(c.predicted_bubble_fraction, 0.3);
  EXPECT_DOUBLE_EQ(c.measured_bubble_fraction, 0.5);
}

TEST(Compare, OverestimateGivesTheSameKindOfError) {
  StepRecord p = predicted_step();
  p.report.step_time_s = 1.5;
  const Comparison c = compare(p, measured_step());
  EXPECT_DOUBLE_EQ(*c.step_time_error, 0.2);  // |1.5 - 1.25| / 1.25
}

TEST(Compare, NoErrorWithoutAMeasuredStepTime) {
  StepRecord m = measured_step();
  m.report.step_time_s = 0;
  EXPECT_FALSE(compare(predicted_step(), m).step_time_error.has_value());
}

TEST(Compare, PerKindStatisticsAndRatios) {
  const Comparison c = compare(predicted_step(), measured_step());
  // Kinds in SpanKind order: forward, backward, send.
  ASSERT_EQ(c.per_kind.size(), 3u);
  const KindComparison& f = c.per_kind[0];
  EXPECT_EQ(f.kind, SpanKind::Forward);
  EXPECT_EQ(f.predicted.count, 3);
  EXPECT_EQ(f.measured.count, 4);
  EXPECT_DOUBLE_EQ(f.predicted.mean_s, 0.2);    // (100 + 200 + 300) / 3 ms
  EXPECT_DOUBLE_EQ(f.measured.mean_s, 0.35);    // (100 + 200 + 400 + 700) / 4 ms
  EXPECT_DOUBLE_EQ(f.predicted.median_s, 0.2);
  EXPECT_DOUBLE_EQ(f.measured.median_s, 0.3);   // (200 + 400) / 2 ms
  EXPECT_DOUBLE_EQ(*f.mean_ratio, 0.2 / 0.35);  // 0.571...
  EXPECT_DOUBLE_EQ(*f.median_ratio, 0.2 / 0.3);
  EXPECT_DOUBLE_EQ(f.predicted.total_s, 0.6);
  EXPECT_DOUBLE_EQ(f.measured.total_s, 1.4);

  const KindComparison& b = c.per_kind[1];
  EXPECT_EQ(b.kind, SpanKind::Backward);
  EXPECT_EQ(b.predicted.count, 2);
  EXPECT_EQ(b.measured.count, 0);
  EXPECT_DOUBLE_EQ(b.predicted.mean_s, 0.4);
  EXPECT_FALSE(b.mean_ratio.has_value());  // nothing measured
  EXPECT_FALSE(b.median_ratio.has_value());

  const KindComparison& s = c.per_kind[2];
  EXPECT_EQ(s.kind, SpanKind::Send);
  EXPECT_EQ(s.predicted.count, 0);
  EXPECT_EQ(s.measured.count, 1);
  EXPECT_DOUBLE_EQ(s.measured.median_s, 0.05);
  EXPECT_FALSE(s.mean_ratio.has_value());  // nothing predicted
}

TEST(Compare, DevicesMatchedById) {
  const Comparison c = compare(predicted_step(), measured_step());
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].id, "node0/gpu0");
  EXPECT_DOUBLE_EQ(*c.devices[0].predicted_busy_s, 0.8);
  EXPECT_DOUBLE_EQ(*c.devices[0].measured_busy_s, 1.0);
  EXPECT_DOUBLE_EQ(*c.devices[0].predicted_bubble_fraction, 0.2);  // 0.2 / 1
  EXPECT_DOUBLE_EQ(*c.devices[0].measured_bubble_fraction, 0.2);   // 0.25 / 1.25
  EXPECT_EQ(c.devices[1].id, "node0/gpu1");
  EXPECT_DOUBLE_EQ(*c.devices[1].predicted_busy_s, 0.6);
  EXPECT_DOUBLE_EQ(*c.devices[1].measured_busy_s, 0.5);
  EXPECT_DOUBLE_EQ(*c.devices[1].measured_bubble_fraction, 0.6);  // 0.75 / 1.25
}

TEST(Compare, DeviceOnOneSideOnlyKeepsTheOtherSideAbsent) {
  StepRecord m = measured_step();
  m.report.devices.push_back(device("node0/gpu2", 2, 0.25, 1.25));
  StepRecord p = predicted_step();
  p.report.devices.erase(p.report.devices.begin() + 1);  // no node0/gpu1 predicted
  const Comparison c = compare(p, m);
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[0].id, "node0/gpu0");
  EXPECT_TRUE(c.devices[0].measured_busy_s.has_value());
  EXPECT_EQ(c.devices[1].id, "node0/gpu1");  // measured-only, in the measured report's order
  EXPECT_FALSE(c.devices[1].predicted_busy_s.has_value());
  EXPECT_DOUBLE_EQ(*c.devices[1].measured_busy_s, 0.5);
  EXPECT_EQ(c.devices[2].id, "node0/gpu2");
  EXPECT_EQ(c.devices[2].stage, 2);
}

TEST(Compare, DevicesNamedDifferentlyAreMatchedByPosition) {
  StepRecord m = measured_step();
  m.report.devices[0].id = "rank0";
  m.report.devices[1].id = "rank1";
  const Comparison c = compare(predicted_step(), m);
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].id, "node0/gpu0");
  EXPECT_DOUBLE_EQ(*c.devices[0].measured_busy_s, 0.5);  // the first measured device
  EXPECT_DOUBLE_EQ(*c.devices[1].measured_busy_s, 1.0);
}

TEST(Compare, BareReportsHaveNoPerKindTable) {
  StepRecord p = predicted_step();
  StepRecord m = measured_step();
  p.timeline.reset();
  m.timeline.reset();
  const Comparison c = compare(p, m);
  EXPECT_TRUE(c.per_kind.empty());
  EXPECT_DOUBLE_EQ(*c.step_time_error, 0.2);
  EXPECT_EQ(c.devices.size(), 2u);
}

TEST(Compare, OneTimelineStillListsItsKinds) {
  StepRecord m = measured_step();
  m.timeline.reset();
  const Comparison c = compare(predicted_step(), m);
  ASSERT_EQ(c.per_kind.size(), 2u);  // forward, backward
  EXPECT_EQ(c.per_kind[0].measured.count, 0);
  EXPECT_FALSE(c.per_kind[0].mean_ratio.has_value());
}

TEST(ComparisonJson, InterfaceFieldsAndNullsForAbsentValues) {
  const auto j = comparison_json(compare(predicted_step(), measured_step()));
  EXPECT_DOUBLE_EQ(j.at("step_time_error").get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j.at("predicted_step_time_s").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j.at("measured_step_time_s").get<double>(), 1.25);
  const auto& f = j.at("per_kind").at("forward");
  EXPECT_EQ(f.at("predicted_count").get<int>(), 3);
  EXPECT_EQ(f.at("measured_count").get<int>(), 4);
  EXPECT_DOUBLE_EQ(f.at("mean_ratio").get<double>(), 0.2 / 0.35);
  EXPECT_DOUBLE_EQ(f.at("measured_median_s").get<double>(), 0.3);
  EXPECT_TRUE(j.at("per_kind").at("backward").at("median_ratio").is_null());
  EXPECT_TRUE(j.at("per_kind").contains("send"));
  EXPECT_FALSE(j.at("per_kind").contains("recv"));
  ASSERT_EQ(j.at("devices").size(), 2u);
  EXPECT_EQ(j.at("devices")[0].at("id"), "node0/gpu0");
  EXPECT_DOUBLE_EQ(j.at("devices")[1].at("measured_bubble_fraction").get<double>(), 0.6);
  // The keys in the order of docs/closed-loop.md, "`mpsim compare`".
  EXPECT_EQ(j.begin().key(), "step_time_error");
}

TEST(ComparisonJson, NullErrorWithoutAMeasuredStepTime) {
  StepRecord m = measured_step();
  m.report.step_time_s = 0;
  EXPECT_TRUE(comparison_json(compare(predicted_step(), m)).at("step_time_error").is_null());
}

// Ops matched by device, op index and kind: the predicted forward op 3 on gpu0 (100 ms) meets the
// measured one (300 ms); op 4 exists only in the prediction; gpu1's op 3 only in the measurement.
TEST(Compare, MatchesPredictionAndMeasurementPerOp) {
  const auto with_op = [](Span s, std::uint32_t lane, std::int32_t op) {
    s.lane = lane;
    s.op = op;
    s.microbatch = 1;
    return s;
  };
  StepRecord p;
  p.report.step_time_s = 1;
  Timeline pt;
  pt.lanes = {{"node0", "gpu0 compute"}, {"node0", "gpu0 send"}};
  pt.spans = {with_op(span(SpanKind::Forward, 0, 100), 0, 3), with_op(span(SpanKind::Send, 100, 10), 1, 5),
              with_op(span(SpanKind::Backward, 200, 200), 0, 4)};
  p.timeline = pt;
  StepRecord m;
  m.report.step_time_s = 1;
  Timeline mt;
  mt.lanes = {{"node0", "gpu1 compute"}, {"node0", "gpu0 compute"}, {"node0", "gpu0 send"}};
  mt.spans = {with_op(span(SpanKind::Forward, 0, 50), 0, 3), with_op(span(SpanKind::Forward, 0, 300), 1, 3),
              with_op(span(SpanKind::Send, 300, 20), 2, 5), span(SpanKind::Transfer, 0, 10)};
  m.timeline = mt;
  const Comparison c = compare(p, m);
  EXPECT_EQ(c.matched_ops, 2);
  // Ratios 100/300 and 10/20: the median of two is their mean.
  ASSERT_TRUE(c.op_median_ratio);
  EXPECT_NEAR(*c.op_median_ratio, (1.0 / 3 + 0.5) / 2, 1e-12);
  ASSERT_EQ(c.worst_ops.size(), 2u);
  EXPECT_EQ(c.worst_ops[0].device, "node0/gpu0");
  EXPECT_EQ(c.worst_ops[0].op, 3);
  EXPECT_EQ(c.worst_ops[0].kind, SpanKind::Forward);
  EXPECT_DOUBLE_EQ(c.worst_ops[0].predicted_s, 0.1);
  EXPECT_DOUBLE_EQ(c.worst_ops[0].measured_s, 0.3);
  EXPECT_EQ(c.worst_ops[1].op, 5);
  const auto json = comparison_json(c);
  EXPECT_EQ(json["per_op"]["matched"], 2);
  EXPECT_EQ(json["per_op"]["worst"][0]["kind"], "forward");
}

}  // namespace
}  // namespace mpsim::trace
