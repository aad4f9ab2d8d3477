#include "sim/variability/speed_spread.h"

#include <charconv>
#include <cmath>

#include "sim/core/input_error.h"

namespace mpsim::variability {

double parse_spread(const std::string& text, const std::string& flag) {
  const auto bad = [&](const std::string& message) { throw InputError({flag + " " + text, 0, 0}, "", message); };
  std::string number = text;
  while (!number.empty() && number.back() == ' ') number.pop_back();
  const bool percent = !number.empty() && number.back() == '%';
  if (percent) {
    number.pop_back();
    while (!number.empty() && number.back() == ' ') number.pop_back();
  }
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    bad("expected a spread as a percentage or a fraction of 1, such as 5% or 0.05");
  }
  if (value < 0) bad("a spread cannot be negative");
  if (!percent && value > 1) {
    bad("a bare number is a fraction of 1: write " + number + "% for a percentage (at most 100%)");
  }
  const double spread = percent ? value / 100 : value;
  if (spread > 1) bad("a spread is at most 100% (a log-standard deviation of 1)");
  return spread;
}

}  // namespace mpsim::variability
