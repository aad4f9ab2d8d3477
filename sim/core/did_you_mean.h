#pragma once
/// The known word an unknown one was probably meant to be, for error messages ("did you mean ...?").
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mpsim {

/// The known word closest to `word` when `word` reads as a typo of it: at most a third of its letters
/// (at least one) changed, added or removed (Levenshtein distance), or `word`, three letters or more,
/// the start of it ('tensor' for 'tensor_comm'). The closest wins, then the first; nothing otherwise.
[[nodiscard]] std::optional<std::string_view> closest_word(std::string_view word,
                                                           std::span<const std::string_view> known);

/// "; did you mean 'bandwidth'?" for closest_word's answer, or "".
[[nodiscard]] std::string did_you_mean(std::string_view word, std::span<const std::string_view> known);

}  // namespace mpsim
