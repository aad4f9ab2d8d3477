#pragma once
/// `--samples N --gpu-speed-spread S [--link-speed-spread S] [--seed K]` of simulate and plan: the flags as
/// written, the request they make, and the sampled step's fields in the JSON and text reports
/// (docs/stragglers.md).
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/variability/speed_sample.h"
#include "sim/variability/step_distribution_summary.h"

namespace CLI {
class App;
}  // namespace CLI

namespace mpsim::cli {

struct SamplingFlags {
  std::string samples;      ///< --samples; empty: not given
  std::string gpu_spread;   ///< --gpu-speed-spread
  std::string link_spread;  ///< --link-speed-spread
  std::string seed;         ///< --seed
};

/// Registers the four flags on `command`, filling `flags` (kept alive by the caller).
void add_sampling_options(CLI::App& command, SamplingFlags& flags);

/// The request the flags make; inactive without --samples. Throws InputError naming the flag for a
/// sample count that is not a positive whole number, a bad spread (variability::parse_spread), a seed
/// that is not a whole number from 0 to 2^64 - 1, and flags given without each other: --samples needs
/// a spread, and a spread or --seed needs --samples.
[[nodiscard]] variability::SamplingRequest sampling_request(const SamplingFlags& flags);

/// The report's fields of a sampled step: `step_time_quantiles_s` {p50, p95, p99}, `step_time_mean_s`
/// and `step_time_sampling` (samples, distribution, spreads, seed, min_s, max_s), added to `json`.
void add_sampled_step_fields(nlohmann::ordered_json& json, const variability::SamplingRequest& request,
                             const variability::StepDistributionSummary& summary);

/// One line: "Over 200 sampled steps (GPU speed spread 5%, seed 0): mean ..., p50 ..., p95 ... (+4.1%), p99 ...",
/// each quantile's change against `unsampled_step_s`.
[[nodiscard]] std::string sampled_step_text(const variability::SamplingRequest& request,
                                            const variability::StepDistributionSummary& summary,
                                            double unsampled_step_s);

/// The spreads, as the text reports name them: "GPU speed spread 5%, link speed spread 2%".
[[nodiscard]] std::string spread_text(const variability::SpeedSpread& spread);

}  // namespace mpsim::cli
