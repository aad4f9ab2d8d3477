#include "planner/kind_alone.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/units.h"
#include "sim/topology/route_table.h"

namespace mpsim::planner {
namespace {

/// Differences listed in the reason before the rest are counted: a plan file has many fields.
constexpr std::size_t kDifferencesNamed = 4;

std::string seconds_text(double s) { return to_string(TimeNs::seconds(s)); }

/// The GPU kind (name) of the devices that report pipeline rank `stage`; empty when none does.
std::string kind_of_stage(const topology::Cluster& cluster, const trace::Report& report, int stage) {
  for (const trace::DeviceReport& d : report.devices) {
    if (d.stage != stage) continue;
    if (const auto id = cluster.find(d.id)) return cluster.gpu_kind_of(*id).name;
  }
  return {};
}

/// "pipeline 1 vs 2, recompute none vs full and 3 more".
std::string named_differences(const std::vector<std::string>& differences) {
  const std::size_t named = std::min(differences.size(), kDifferencesNamed);
  std::string out = fmt::format("{}", fmt::join(differences.begin(), differences.begin() + static_cast<std::ptrdiff_t>(named), ", "));
  if (differences.size() > named) out += fmt::format(" and {} more", differences.size() - named);
  return out;
}

/// The first job GPU of `kind` on `cluster`, the first of another kind; nothing when there is none.
std::optional<topology::DeviceId> first_gpu(const topology::Cluster& cluster, int kind, bool of_kind) {
  for (const topology::DeviceId g : cluster.gpus()) {
    if ((cluster.device(g).gpu_kind == kind) == of_kind) return g;
  }
  return std::nullopt;
}

/// "; a route between the kinds runs at 1 Gb/s, between two of the kind alone's nodes at 256 Gb/s": the
/// bottleneck of the route from the kind's first GPU to the first GPU of another kind in the mix, and
/// of the route between the kind alone's first two nodes (or its first two GPUs on one node).
std::string links_text(const topology::Cluster& mixed, const KindAlone& alone) {
  const auto mine = first_gpu(mixed, alone.kind, true);
  const auto other = first_gpu(mixed, alone.kind, false);
  if (!mine || !other) return {};
  const auto across = topology::find_route(mixed, *mine, *other);
  if (!across) return {};
  const topology::Cluster& c = alone.cluster;
  std::optional<topology::Route> within;
  std::string where;
  if (c.node_count > 1 && !c.gpus_of_node(0).empty() && !c.gpus_of_node(1).empty()) {
    within = topology::find_route(c, c.gpus_of_node(0).front(), c.gpus_of_node(1).front());
    where = "between two of its nodes";
  } else if (c.gpus().size() > 1) {
    within = topology::find_route(c, c.gpus()[0], c.gpus()[1]);
    where = "between two of its GPUs";
  }
  std::string out = fmt::format("; a route between the kinds ({} to {}) runs at {}", mixed.device(*mine).name,
                                mixed.device(*other).name, to_string(across->bandwidth));
  if (within) out += fmt::format(", {} at {}", where, to_string(within->bandwidth));
  return out;
}

}  // namespace

std::vector<KindAlone> kinds_alone(const topology::Cluster& mixed) {
  std::vector<KindAlone> out;
  const std::vector<int> kinds = mixed.job_gpu_kinds();
  if (kinds.size() < 2) return out;
  for (const int k : kinds) {
    const topology::GpuKind& gpu = mixed.gpu_kinds().at(static_cast<std::size_t>(k));
    out.push_back({k, gpu.id, gpu.name, mixed.only_gpu_kind(k)});
  }
  return out;
}

AgainstMix against_mix(const topology::Cluster& mixed, const Evaluated& mix_best, const KindAlone& alone,
                       const Evaluated& alone_best, const model::Model& model) {
  AgainstMix out;
  const double mix_s = mix_best.report.step_time_s;
  const double alone_s = alone_best.report.step_time_s;
  out.mix_step_s = mix_s;
  out.alone_step_s = alone_s;
  out.alone_faster = alone_s < mix_s;
  out.mix_speedup = alone_s / mix_s;
  out.comparison = out.alone_faster ? compare(alone.cluster, mixed, model, alone_best, mix_best)
                                    : compare(mixed, alone.cluster, model, mix_best, alone_best);
  const TimeBreakdown& mix = out.alone_faster ? out.comparison.other : out.comparison.winner;
  out.mix_busiest_stage = mix.stage;
  out.mix_busiest_kind = kind_of_stage(mixed, mix_best.report, mix.stage);
  if (!out.alone_faster) return out;

  // The other kinds of the mix, by name, in the order its GPUs show them.
  std::vector<std::string> others;
  for (const int k : mixed.job_gpu_kinds()) {
    if (k != alone.kind) others.push_back(mixed.gpu_kinds().at(static_cast<std::size_t>(k)).name);
  }
  const TimeBreakdown& own = out.comparison.winner;
  out.why = fmt::format(
      "the {} nodes slow the job down: the mix's busiest pipeline rank ({}{}) spends {} computing, {} in the bubble "
      "and {} on exposed communication, against {}, {} and {} on the {} alone's; the mix loses on {}",
      fmt::join(others, " and "), mix.stage, out.mix_busiest_kind.empty() ? "" : ", on " + out.mix_busiest_kind,
      seconds_text(mix.compute_s), seconds_text(mix.bubble_s), seconds_text(mix.exposed_communication_s),
      seconds_text(own.compute_s), seconds_text(own.bubble_s), seconds_text(own.exposed_communication_s), alone.name,
      out.comparison.main_reason);
  // Exposed communication: the routes say whether the link between the kinds is the slower.
  const double exposed_gap = mix.exposed_communication_s - own.exposed_communication_s;
  if (exposed_gap > mix.compute_s - own.compute_s && exposed_gap > mix.bubble_s - own.bubble_s) {
    out.why += links_text(mixed, alone);
  }
  if (!out.comparison.differences.empty()) {
    out.why += fmt::format(" (the plans differ in {}: the {} alone's first)",
                           named_differences(out.comparison.differences), alone.name);
  }
  return out;
}

}  // namespace mpsim::planner
