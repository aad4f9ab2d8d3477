#include "sim/plan/axis.h"

#include <algorithm>

#include <fmt/format.h>

namespace mpsim::plan {

std::string_view short_name(Axis a) noexcept {
  switch (a) {
    case Axis::Tensor: return "tp";
    case Axis::Context: return "cp";
    case Axis::Expert: return "ep";
    case Axis::ExpertTensor: return "etp";
    case Axis::ExpertData: return "edp";
    case Axis::Data: return "dp";
    case Axis::Pipeline: return "pp";
    case Axis::DataShard: return "dp_shard";
    case Axis::DataReplica: return "dp_replicate";
    case Axis::PipelineMirror: return "pp_mirror";
  }
  return "?";
}

std::optional<Axis> axis_from_short_name(std::string_view word) noexcept {
  for (const Axis a : kAllAxes) {
    if (short_name(a) == word) return a;
  }
  return std::nullopt;
}

std::string to_string(AxisSet axes) {
  std::string out;
  for (const Axis a : kAllAxes) {
    if (!axes.contains(a)) continue;
    if (!out.empty()) out += '-';
    out += short_name(a);
  }
  return out;
}

std::string to_string(const Placement& p) {
  std::string out;
  for (const Axis a : p) {
    if (!out.empty()) out += '-';
    out += short_name(a);
  }
  return out;
}

namespace {
bool is_order_axis(Axis a) {
  return a == Axis::Tensor || a == Axis::Context || a == Axis::Expert || a == Axis::Data || a == Axis::Pipeline;
}
}  // namespace

std::optional<std::string> placement_error(const Placement& p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!is_order_axis(p[i])) {
      return fmt::format("'{}' has no place in an order string (use tp, cp, ep, dp, pp)", short_name(p[i]));
    }
    if (std::find(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(i), p[i]) != p.begin() + static_cast<std::ptrdiff_t>(i)) {
      return fmt::format("'{}' repeats an axis", to_string(p));
    }
  }
  for (const Axis a : {Axis::Tensor, Axis::Data, Axis::Pipeline}) {
    if (std::find(p.begin(), p.end(), a) == p.end()) {
      return fmt::format("'{}' leaves out {} (name tp, dp and pp, fastest first, e.g. tp-dp-pp)", to_string(p),
                         short_name(a));
    }
  }
  return std::nullopt;
}

Placement complete_order(const Placement& p) {
  Placement out = p;
  const auto insert_after = [&](Axis missing, Axis anchor) {
    if (std::find(out.begin(), out.end(), missing) != out.end()) return;
    out.insert(std::find(out.begin(), out.end(), anchor) + 1, missing);
  };
  insert_after(Axis::Context, Axis::Tensor);
  insert_after(Axis::Expert, Axis::Context);
  return out;
}

}  // namespace mpsim::plan
