#include "sim/core/did_you_mean.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

namespace mpsim {
namespace {

/// Letters changed, added or removed to turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string_view> closest_word(std::string_view word, std::span<const std::string_view> known) {
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (const std::string_view candidate : known) {
    if (candidate == word) continue;
    const std::size_t distance = edit_distance(word, candidate);
    const bool typo = distance <= allowed || (word.size() >= 3 && candidate.starts_with(word));
    if (typo && (!best || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> known) {
  const auto closest = closest_word(word, known);
  return closest ? fmt::format("; did you mean '{}'?", *closest) : std::string();
}

}  // namespace mpsim
