#pragma once
/// How much the speed of each GPU and each link varies from one step to the next: `--gpu-speed-spread`
/// and `--link-speed-spread` (docs/stragglers.md).
///
/// The distribution: in each sampled step, every GPU's pass times are multiplied by m = exp(σ z), z a
/// standard normal drawn for that GPU and step (a lognormal of median 1), and every link's transfer
/// time likewise (its bandwidth divided by its m). Why lognormal: a multiplier must stay positive
/// however wide the spread (a normal 1 + σ z reaches zero or below at z = -1/σ); speed and time are
/// each other's inverse, and 1/m has the same law as m, so "5 % slower" and "5 % faster" are equally
/// likely whichever one names; and the spread keeps a plain reading: σ is the standard deviation of
/// ln m, which is the multiplier's coefficient of variation to first order (its exact CV is
/// sqrt(exp(σ²) - 1): 5.003 % at σ = 5 %, 10.03 % at 10 %).
#include <cstdint>
#include <string>

namespace mpsim::variability {

/// The log-standard deviations σ of the per-step multipliers; zero: that resource does not vary.
struct SpeedSpread {
  double gpu = 0;   ///< of each GPU's pass times (--gpu-speed-spread)
  double link = 0;  ///< of each link's transfer times (--link-speed-spread)
  [[nodiscard]] bool any() const noexcept { return gpu > 0 || link > 0; }
};

/// A spread as written: a percentage ("5%", "0.5 %") or a fraction of 1 ("0.05"), from 0 to 100 %.
/// A bare number above 1 is refused (did "5" mean 5 % or 500 %?). Throws InputError naming `flag`.
[[nodiscard]] double parse_spread(const std::string& text, const std::string& flag);

}  // namespace mpsim::variability
