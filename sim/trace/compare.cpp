#include "sim/trace/compare.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

namespace mpsim::trace {
namespace {

using DurationsByKind = std::array<std::vector<std::int64_t>, kSpanKindCount>;

/// Span durations of a timeline, by kind.
DurationsByKind durations_by_kind(const Timeline& timeline) {
  DurationsByKind out;
  for (const Span& s : timeline.spans) out[static_cast<std::size_t>(s.kind)].push_back(s.end_ns - s.start_ns);
  return out;
}

std::optional<double> ratio(const DurationStats& predicted, const DurationStats& measured, double p, double m) {
  if (predicted.count == 0 || measured.count == 0 || m <= 0) return std::nullopt;
  return p / m;
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

/// "node0/gpu3" for a lane ("node0", "gpu3 compute"): the device a span ran on.
std::string device_of(const Lane& lane) { return lane.process + "/" + lane.thread.substr(0, lane.thread.find(' ')); }

using OpKey = std::tuple<std::string, std::int32_t, SpanKind>;

/// Op spans by (device, op, kind); a key seen twice keeps its first span.
std::map<OpKey, const Span*> op_spans(const Timeline& timeline) {
  std::map<OpKey, const Span*> out;
  for (const Span& s : timeline.spans) {
    if (s.op < 0 || s.lane >= timeline.lanes.size()) continue;
    out.emplace(OpKey{device_of(timeline.lanes[s.lane]), s.op, s.kind}, &s);
  }
  return out;
}

void compare_ops(const Timeline& predicted, const Timeline& measured, Comparison& c) {
  const auto p = op_spans(predicted);
  const auto m = op_spans(measured);
  std::vector<OpComparison> matched;
  std::vector<double> ratios;
  for (const auto& [key, ps] : p) {
    const auto found = m.find(key);
    if (found == m.end()) continue;
    OpComparison oc;
    oc.device = std::get<0>(key);
    oc.op = std::get<1>(key);
    oc.kind = std::get<2>(key);
    oc.microbatch = ps->microbatch;
    oc.chunk = ps->chunk;
    oc.predicted_s = static_cast<double>(ps->end_ns - ps->start_ns) * 1e-9;
    oc.measured_s = static_cast<double>(found->second->end_ns - found->second->start_ns) * 1e-9;
    if (oc.measured_s > 0) ratios.push_back(oc.predicted_s / oc.measured_s);
    matched.push_back(std::move(oc));
  }
  c.matched_ops = static_cast<std::int64_t>(matched.size());
  if (!ratios.empty()) {
    const auto middle = ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2);
    std::nth_element(ratios.begin(), middle, ratios.end());
    c.op_median_ratio = ratios.size() % 2 == 1 ? *middle : (*middle + *std::max_element(ratios.begin(), middle)) / 2;
  }
  // Largest error first; the map order (device, op, kind) breaks ties, so the list is deterministic.
  std::stable_sort(matched.begin(), matched.end(), [](const OpComparison& a, const OpComparison& b) {
    return std::abs(a.predicted_s - a.measured_s) > std::abs(b.predicted_s - b.measured_s);
  });
  if (matched.size() > kWorstOps) matched.resize(kWorstOps);
  c.worst_ops = std::move(matched);
}

}  // namespace

DurationStats duration_stats(std::vector<std::int64_t> durations_ns) {
  DurationStats stats;
  stats.count = static_cast<std::int64_t>(durations_ns.size());
  if (durations_ns.empty()) return stats;
  double total_ns = 0;
  for (const std::int64_t d : durations_ns) total_ns += static_cast<double>(d);
  stats.total_s = total_ns * 1e-9;
  stats.mean_s = stats.total_s / static_cast<double>(stats.count);
  const std::size_t n = durations_ns.size();
  const auto middle = durations_ns.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(durations_ns.begin(), middle, durations_ns.end());
  const double upper = static_cast<double>(*middle);
  if (n % 2 == 1) {
    stats.median_s = upper * 1e-9;
  } else {
    // The lower middle is the largest value below `middle` after nth_element.
    const double lower = static_cast<double>(*std::max_element(durations_ns.begin(), middle));
    stats.median_s = (lower + upper) * 0.5e-9;
  }
  return stats;
}

double timeline_extent_s(const Timeline& timeline) noexcept {
  if (timeline.spans.empty()) return 0;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (const Span& s : timeline.spans) {
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
  }
  return static_cast<double>(last - first) * 1e-9;
}

namespace {

/// Means per stage of the devices' figures, each side over the devices it has.
std::vector<StageComparison> stage_comparisons(const std::vector<DeviceComparison>& devices) {
  struct Sums {
    int predicted = 0, measured = 0;
    double predicted_busy = 0, measured_busy = 0, predicted_idle = 0, measured_idle = 0;
  };
  std::map<int, Sums> by_stage;
  for (const DeviceComparison& d : devices) {
    if (d.stage < 0) continue;
    Sums& s = by_stage[d.stage];
    if (d.predicted_busy_s) {
      ++s.predicted;
      s.predicted_busy += *d.predicted_busy_s;
      s.predicted_idle += d.predicted_bubble_fraction.value_or(0);
    }
    if (d.measured_busy_s) {
      ++s.measured;
      s.measured_busy += *d.measured_busy_s;
      s.measured_idle += d.measured_bubble_fraction.value_or(0);
    }
  }
  std::vector<StageComparison> out;
  for (const auto& [stage, s] : by_stage) {
    StageComparison sc{stage, s.predicted, s.measured, {}, {}, {}, {}};
    if (s.predicted > 0) {
      sc.predicted_busy_s = s.predicted_busy / s.predicted;
      sc.predicted_idle_fraction = s.predicted_idle / s.predicted;
    }
    if (s.measured > 0) {
      sc.measured_busy_s = s.measured_busy / s.measured;
      sc.measured_idle_fraction = s.measured_idle / s.measured;
    }
    out.push_back(sc);
  }
  return out;
}

}  // namespace

Comparison compare(const StepRecord& predicted, const StepRecord& measured) {
  Comparison c;
  c.predicted_step_time_s = predicted.report.step_time_s;
  c.measured_step_time_s = measured.report.step_time_s;
  if (c.measured_step_time_s > 0) {
    c.step_time_error = std::abs(c.predicted_step_time_s - c.measured_step_time_s) / c.measured_step_time_s;
  }
  c.predicted_bubble_fraction = predicted.report.bubble_fraction;
  c.measured_bubble_fraction = measured.report.bubble_fraction;

  if (predicted.timeline || measured.timeline) {
    const DurationsByKind p = predicted.timeline ? durations_by_kind(*predicted.timeline) : DurationsByKind{};
    const DurationsByKind m = measured.timeline ? durations_by_kind(*measured.timeline) : DurationsByKind{};
    for (std::size_t k = 0; k < kSpanKindCount; ++k) {
      if (p[k].empty() && m[k].empty()) continue;
      KindComparison kc;
      kc.kind = static_cast<SpanKind>(k);
      kc.predicted = duration_stats(p[k]);
      kc.measured = duration_stats(m[k]);
      kc.mean_ratio = ratio(kc.predicted, kc.measured, kc.predicted.mean_s, kc.measured.mean_s);
      kc.median_ratio = ratio(kc.predicted, kc.measured, kc.predicted.median_s, kc.measured.median_s);
      c.per_kind.push_back(kc);
    }
  }
  if (predicted.timeline && measured.timeline) compare_ops(*predicted.timeline, *measured.timeline, c);

  const auto& pd = predicted.report.devices;
  const auto& md = measured.report.devices;
  std::set<std::string> predicted_ids;
  for (const auto& d : pd) predicted_ids.insert(d.id);
  const bool any_shared =
      std::any_of(md.begin(), md.end(), [&](const DeviceReport& d) { return predicted_ids.count(d.id) > 0; });
  std::vector<bool> measured_used(md.size(), false);
  for (std::size_t i = 0; i < pd.size(); ++i) {
    DeviceComparison dc;
    dc.id = pd[i].id;
    dc.stage = pd[i].stage;
    dc.predicted_busy_s = pd[i].busy_s;
    dc.predicted_bubble_fraction = pd[i].bubble_fraction;
    std::size_t match = md.size();
    if (any_shared) {
      for (std::size_t j = 0; j < md.size(); ++j) {
        if (!measured_used[j] && md[j].id == pd[i].id) {
          match = j;
          break;
        }
      }
    } else if (i < md.size()) {
      match = i;
    }
    if (match < md.size()) {
      measured_used[match] = true;
      dc.measured_busy_s = md[match].busy_s;
      dc.measured_bubble_fraction = md[match].bubble_fraction;
    }
    c.devices.push_back(dc);
  }
  for (std::size_t j = 0; j < md.size(); ++j) {
    if (measured_used[j]) continue;
    DeviceComparison dc;
    dc.id = md[j].id;
    dc.stage = md[j].stage;
    dc.measured_busy_s = md[j].busy_s;
    dc.measured_bubble_fraction = md[j].bubble_fraction;
    c.devices.push_back(dc);
  }
  c.stages = stage_comparisons(c.devices);
  return c;
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["step_time_error"] = optional_json(c.step_time_error);
  out["predicted_step_time_s"] = c.predicted_step_time_s;
  out["measured_step_time_s"] = c.measured_step_time_s;
  out["predicted_bubble_fraction"] = c.predicted_bubble_fraction;
  out["measured_bubble_fraction"] = c.measured_bubble_fraction;
  ordered_json per_kind = ordered_json::object();
  for (const KindComparison& k : c.per_kind) {
    per_kind[std::string(to_string(k.kind))] = {
        {"predicted_count", k.predicted.count},       {"measured_count", k.measured.count},
        {"predicted_mean_s", k.predicted.mean_s},     {"measured_mean_s", k.measured.mean_s},
        {"mean_ratio", optional_json(k.mean_ratio)},  {"predicted_median_s", k.predicted.median_s},
        {"measured_median_s", k.measured.median_s},   {"median_ratio", optional_json(k.median_ratio)},
        {"predicted_total_s", k.predicted.total_s},   {"measured_total_s", k.measured.total_s}};
  }
  out["per_kind"] = per_kind;
  ordered_json devices = ordered_json::array();
  for (const DeviceComparison& d : c.devices) {
    devices.push_back({{"id", d.id},
                       {"stage", d.stage},
                       {"predicted_busy_s", optional_json(d.predicted_busy_s)},
                       {"measured_busy_s", optional_json(d.measured_busy_s)},
                       {"predicted_bubble_fraction", optional_json(d.predicted_bubble_fraction)},
                       {"measured_bubble_fraction", optional_json(d.measured_bubble_fraction)}});
  }
  out["devices"] = devices;
  ordered_json stages = ordered_json::array();
  for (const StageComparison& st : c.stages) {
    stages.push_back({{"stage", st.stage},
                      {"predicted_devices", st.predicted_devices},
                      {"measured_devices", st.measured_devices},
                      {"predicted_busy_s", optional_json(st.predicted_busy_s)},
                      {"measured_busy_s", optional_json(st.measured_busy_s)},
                      {"predicted_idle_fraction", optional_json(st.predicted_idle_fraction)},
                      {"measured_idle_fraction", optional_json(st.measured_idle_fraction)}});
  }
  out["stages"] = stages;
  ordered_json worst = ordered_json::array();
  for (const OpComparison& o : c.worst_ops) {
    worst.push_back({{"device", o.device},
                     {"op", o.op},
                     {"kind", std::string(to_string(o.kind))},
                     {"mb", o.microbatch},
                     {"chunk", o.chunk},
                     {"predicted_s", o.predicted_s},
                     {"measured_s", o.measured_s}});
  }
  out["per_op"] = {{"matched", c.matched_ops}, {"median_ratio", optional_json(c.op_median_ratio)}, {"worst", worst}};
  return out;
}

}  // namespace mpsim::trace
