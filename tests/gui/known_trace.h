#pragma once
// A small trace with known rows, spans and bubbles, shared by the viewer tests.
//
//   node0 / gpu0 compute  F0 [0,100us) F1 [100,200us)   bubble [200,400us)   B0 [400,600us) B1 [600,800us)
//   node0 / gpu0 send     S0 [100,110us) S1 [200,210us)
//   node1 / gpu1 compute  bubble [0,120us) F0 [120,220us) F1 [220,320us) B0 [320,400us) B1 [400,480us)
//                         bubble [480,800us)
//   links / node0/nic0-node1/nic0   two transfers; links / unused   no traffic (not shown)
// knownReportWithMemory adds gpu0's memory timeline: a memory row under its compute row.
#include <QString>
#include <QTemporaryDir>

#include <cstdint>
#include <fstream>
#include <string>

#include "sim/trace/trace_json.h"

namespace mpsim::view::testing {

inline mpsim::trace::Span makeSpan(std::uint32_t lane, mpsim::trace::SpanKind kind, std::int64_t startUs,
                                   std::int64_t endUs, int mb, int stage, std::int64_t bytes = 0) {
  mpsim::trace::Span s;
  s.lane = lane;
  s.kind = kind;
  s.start_ns = startUs * 1000;
  s.end_ns = endUs * 1000;
  s.microbatch = mb;
  s.chunk = 0;
  s.stage = stage;
  s.bytes = bytes;
  return s;
}

inline mpsim::trace::Timeline knownTimeline() {
  using mpsim::trace::SpanKind;
  mpsim::trace::Timeline t;
  t.lanes = {{"node0", "gpu0 compute"},
             {"node0", "gpu0 send"},
             {"node1", "gpu1 compute"},
             {"links", "node0/nic0-node1/nic0"},
             {"links", "unused"}};
  t.spans = {
      makeSpan(0, SpanKind::Forward, 0, 100, 0, 0),
      makeSpan(1, SpanKind::Send, 100, 110, 0, 0, 1 << 20),
      makeSpan(3, SpanKind::Transfer, 100, 110, -1, -1, 1 << 20),
      makeSpan(0, SpanKind::Forward, 100, 200, 1, 0),
      makeSpan(2, SpanKind::Forward, 120, 220, 0, 1),
      makeSpan(1, SpanKind::Send, 200, 210, 1, 0, 1 << 20),
      makeSpan(3, SpanKind::Transfer, 200, 210, -1, -1, 1 << 20),
      makeSpan(2, SpanKind::Forward, 220, 320, 1, 1),
      makeSpan(2, SpanKind::Backward, 320, 400, 0, 1),
      makeSpan(0, SpanKind::Backward, 400, 600, 0, 0),
      makeSpan(2, SpanKind::Backward, 400, 480, 1, 1),
      makeSpan(0, SpanKind::Backward, 600, 800, 1, 0),
  };
  return t;
}

inline mpsim::trace::Report knownReport() {
  mpsim::trace::Report r;
  r.step_time_s = 800e-6;
  r.bubble_fraction = 0.3;
  r.devices.push_back({"node0/gpu0", 0, 600e-6, 200e-6, 0.25, 1LL << 30, 8LL << 30, false, {}});
  r.devices.push_back({"node1/gpu1", 1, 360e-6, 440e-6, 0.55, 3LL << 30, 8LL << 30, false, {}});
  r.links.push_back({"node0/nic0-node1/nic0", 2 << 20, 20e-6});
  r.plan.pipeline = 2;
  r.plan.microbatches = 2;
  r.plan.schedule = "1f1b";
  return r;
}

/// knownReport with gpu0's memory over the step: 512 MiB held all step, and 256 MiB stashed by each
/// forward until its backward (F0 at 0, F1 at 100 us, B0 at 400 us, B1 at 600 us): its peak, 1 GiB,
/// from 100 to 400 us. gpu1 has no timeline.
inline mpsim::trace::Report knownReportWithMemory() {
  mpsim::trace::Report r = knownReport();
  constexpr std::int64_t kMiB = 1 << 20;
  r.devices.front().memory_timeline = {
      {0.0, 768 * kMiB}, {100e-6, 1024 * kMiB}, {400e-6, 768 * kMiB}, {600e-6, 512 * kMiB}};
  return r;
}

/// Writes `text` to dir/name and returns the path.
inline QString writeFile(const QTemporaryDir& dir, const QString& name, const std::string& text) {
  const QString path = dir.filePath(name);
  std::ofstream out(path.toStdString(), std::ios::binary);
  out << text;
  return path;
}

inline QString writeKnownTrace(const QTemporaryDir& dir, const QString& name = QStringLiteral("known.json")) {
  return writeFile(dir, name, mpsim::trace::chrome_trace(knownTimeline(), knownReport()));
}

inline QString writeKnownTraceWithMemory(const QTemporaryDir& dir) {
  const std::string text = mpsim::trace::chrome_trace(knownTimeline(), knownReportWithMemory());
  return writeFile(dir, QStringLiteral("memory.json"), text);
}

}  // namespace mpsim::view::testing
