#include "cli/training_report.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "sim/core/input_error.h"
#include "sim/engine/cost_model.h"

namespace mpsim::cli {
namespace {

[[noreturn]] void bad_flag(const std::string& flag, const std::string& value, const std::string& message) {
  throw InputError({flag + " " + value, 0, 0}, "", message);
}

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

double parse_token_count(const std::string& text) {
  std::string digits = text;
  double scale = 1;
  if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())) != 0) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'B':
      case 'G': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      default: bad_flag("--tokens", text, "expected a token count such as 15T, 300B or 2.5e12 (suffixes K, M, B, T)");
    }
    digits.pop_back();
  }
  double value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
    bad_flag("--tokens", text, "expected a token count such as 15T, 300B or 2.5e12 (suffixes K, M, B, T)");
  }
  if (!(value > 0) || !std::isfinite(value * scale)) bad_flag("--tokens", text, "the token count must be positive");
  return value * scale;
}

std::optional<training::TrainingEstimate> training_for(const TrainingFlags& flags, const topology::Cluster& cluster,
                                                       const model::Model& model, const plan::Plan& plan,
                                                       const trace::Report& report) {
  if (flags.tokens.empty()) {
    if (flags.gpu_hour_price) throw InputError({"--gpu-hour-price", 0, 0}, "", "a price needs --tokens to cost");
    return std::nullopt;
  }
  training::TrainingAssumptions assumptions;
  assumptions.gpu_hour_price = flags.gpu_hour_price;
  if (flags.gpu_hours_per_interruption) assumptions.gpu_hours_per_interruption = *flags.gpu_hours_per_interruption;
  if (!flags.restart.empty()) {
    const auto t = parse_time(flags.restart);
    if (!t.ok()) bad_flag("--restart-time", flags.restart, t.error);
    assumptions.restart = t.value;
  }
  if (!flags.checkpoint_bandwidth.empty()) {
    const auto b = parse_bandwidth(flags.checkpoint_bandwidth);
    if (!b.ok()) bad_flag("--checkpoint-bandwidth", flags.checkpoint_bandwidth, b.error);
    if (b.value.in_bytes_per_sec() <= 0) bad_flag("--checkpoint-bandwidth", flags.checkpoint_bandwidth, "must be positive");
    assumptions.checkpoint_bandwidth_per_gpu = b.value;
  }
  if (!model.shape || model.shape->seq_len <= 0) {
    bad_flag("--tokens", flags.tokens,
             fmt::format("model '{}' has no sequence length (seq_len), so its tokens per step are unknown", model.name));
  }
  training::TrainingJob job;
  job.tokens = parse_token_count(flags.tokens);
  job.tokens_per_step = static_cast<std::int64_t>(plan.global_batch) * model.shape->seq_len;
  job.step_time = TimeNs::seconds(report.step_time_s);
  job.gpus = static_cast<int>(cluster.gpus().size());
  job.busy_fraction = 1 - report.bubble_fraction;  // the idle share of all devices' time, complemented
  for (const topology::DeviceId gpu : cluster.gpus()) {
    const Watts tdp = cluster.gpu_kind_of(gpu).tdp;
    if (tdp.in_watts() <= 0) {
      job.gpu_tdp = Watts::watts(0);  // one unknown TDP: no energy
      break;
    }
    job.gpu_tdp += tdp;
  }
  job.checkpoint_bytes = engine::checkpoint_bytes(model, plan);
  return training::estimate_training(job, assumptions);
}

nlohmann::ordered_json training_json(const training::TrainingEstimate& e) {
  nlohmann::ordered_json j;
  j["tokens"] = e.tokens;
  j["steps"] = e.steps;
  j["wall_time_s"] = e.wall_time.to_seconds();
  j["gpu_hours"] = e.gpu_hours;
  j["cost"] = e.cost ? nlohmann::ordered_json(*e.cost) : nlohmann::ordered_json();
  j["energy_joules"] = e.energy_joules ? nlohmann::ordered_json(*e.energy_joules) : nlohmann::ordered_json();
  j["effective_time_fraction"] = e.effective_time_fraction;
  j["compute_s"] = e.compute.to_seconds();
  j["mtbf_s"] = e.mtbf.to_seconds();
  j["expected_interruptions"] = e.expected_interruptions;
  j["checkpoint_write_s"] = e.checkpoint_write.to_seconds();
  j["checkpoint_interval_s"] = e.checkpoint_interval.to_seconds();
  return j;
}

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
