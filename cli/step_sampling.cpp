#include "cli/step_sampling.h"

#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/variability/speed_spread.h"

namespace mpsim::cli {
namespace {

/// More sampled steps than this is a slip of the keyboard, not a distribution (each is a simulation).
constexpr long long kMostSamples = 1'000'000;

[[noreturn]] void bad_flag(const std::string& flag, const std::string& value, const std::string& message) {
  throw InputError({flag + (value.empty() ? "" : " " + value), 0, 0}, "", message);
}

int parse_samples(const std::string& text) {
  long long n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || n <= 0 || n > kMostSamples) {
    bad_flag("--samples", text, fmt::format("expected a whole number of sampled steps from 1 to {}", kMostSamples));
  }
  return static_cast<int>(n);
}

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    bad_flag("--seed", text, "expected a whole number from 0 to 18446744073709551615");
  }
  return seed;
}

std::string spread_percent(double spread) { return fmt::format("{:g}%", 100 * spread); }

}  // namespace

void add_sampling_options(CLI::App& command, SamplingFlags& flags) {
  command.add_option("--samples", flags.samples,
                     "Step time as a distribution: simulate N steps, each GPU (and link) at its own sampled speed "
                     "(with --gpu-speed-spread and/or --link-speed-spread); adds p50, p95, p99 and the mean");
  command.add_option("--gpu-speed-spread", flags.gpu_spread,
                     "With --samples: the per-step spread of each GPU's speed, 5% or 0.05 (a lognormal multiplier "
                     "of median 1; the spread is its log-standard deviation)");
  command.add_option("--link-speed-spread", flags.link_spread,
                     "With --samples: the per-step spread of each link's bandwidth, as --gpu-speed-spread");
  command.add_option("--seed", flags.seed,
                     fmt::format("With --samples: the seed of the sampled speeds (default {})",
                                 variability::kDefaultSeed));
}

variability::SamplingRequest sampling_request(const SamplingFlags& flags) {
  variability::SamplingRequest request;
  if (!flags.gpu_spread.empty()) request.spread.gpu = variability::parse_spread(flags.gpu_spread, "--gpu-speed-spread");
  if (!flags.link_spread.empty()) {
    request.spread.link = variability::parse_spread(flags.link_spread, "--link-speed-spread");
  }
  if (!flags.seed.empty()) request.seed = parse_seed(flags.seed);
  if (flags.samples.empty()) {
    for (const auto& [flag, value] :
         {std::pair{"--gpu-speed-spread", flags.gpu_spread}, std::pair{"--link-speed-spread", flags.link_spread},
          std::pair{"--seed", flags.seed}}) {
      if (!value.empty()) bad_flag(flag, value, "it shapes sampled steps: add --samples N");
    }
    return request;
  }
  request.samples = parse_samples(flags.samples);
  if (flags.gpu_spread.empty() && flags.link_spread.empty()) {
    bad_flag("--samples", flags.samples,
             "sampled steps vary by a spread: add --gpu-speed-spread S and/or --link-speed-spread S");
  }
  return request;
}

void add_sampled_step_fields(nlohmann::ordered_json& json, const variability::SamplingRequest& request,
                             const variability::StepDistributionSummary& summary) {
  json["step_time_quantiles_s"] = {{"p50", summary.p50_s}, {"p95", summary.p95_s}, {"p99", summary.p99_s}};
  json["step_time_mean_s"] = summary.mean_s;
  json["step_time_sampling"] = {{"samples", summary.samples},
                                {"distribution", "lognormal"},
                                {"gpu_speed_spread", request.spread.gpu},
                                {"link_speed_spread", request.spread.link},
                                {"seed", request.seed},
                                {"min_s", summary.min_s},
                                {"max_s", summary.max_s}};
}

std::string spread_text(const variability::SpeedSpread& spread) {
  std::vector<std::string> parts;
  if (spread.gpu > 0) parts.push_back("GPU speed spread " + spread_percent(spread.gpu));
  if (spread.link > 0) parts.push_back("link speed spread " + spread_percent(spread.link));
  if (parts.empty()) parts.emplace_back("no speed spread");
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string sampled_step_text(const variability::SamplingRequest& request,
                              const variability::StepDistributionSummary& summary, double unsampled_step_s) {
  const auto with_change = [&](double step_s) {
    return fmt::format("{} ({:+.1f}%)", to_string(TimeNs::seconds(step_s)), 100.0 * (step_s / unsampled_step_s - 1.0));
  };
  return fmt::format("Over {} sampled steps ({}, seed {}): mean {}, p50 {}, p95 {}, p99 {}\n", summary.samples,
                     spread_text(request.spread), request.seed, with_change(summary.mean_s), with_change(summary.p50_s),
                     with_change(summary.p95_s), with_change(summary.p99_s));
}

}  // namespace mpsim::cli
