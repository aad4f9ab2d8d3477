#include "cli/training_report.h"

#include <fmt/format.h>

#include "cli/table.h"

namespace mpsim::cli {
namespace {

/// "12.3 days", "5.2 hours", "41 min".
std::string duration(TimeNs t) {
  const double s = t.to_seconds();
  if (s >= 2 * 86400) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 2 * 3600) return fmt::format("{:.1f} hours", s / 3600);
  if (s >= 120) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} s", s);
}

/// 1234567 -> "1.23 M".
std::string count(double v) {
  if (v >= 1e12) return fmt::format("{:.3g} T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.3g} B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3g} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g} K", v / 1e3);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string training_text(const training::TrainingEstimate& e) {
  std::string extras;
  if (e.cost) extras += fmt::format(", cost {}", count(*e.cost));
  if (e.energy_joules) extras += fmt::format(", {:.3g} MWh", *e.energy_joules / 3.6e9);
  return fmt::format(
      "Training on {} tokens: {} steps, {} ({} GPU-hours{})\n"
      "  {} effective ({} of steps): {:.1f} interruptions expected, one every {}, each costing a restart and the "
      "work since the last checkpoint;\n"
      "  a checkpoint every {} of training, {} to write\n",
      count(e.tokens), count(static_cast<double>(e.steps)), duration(e.wall_time), count(e.gpu_hours), extras,
      percent(e.effective_time_fraction), duration(e.compute), e.expected_interruptions, duration(e.mtbf),
      duration(e.checkpoint_interval), duration(e.checkpoint_write));
}

}  // namespace mpsim::cli
