#pragma once
/// All the errors of a file in one run, where reading can go on past them.
///
/// While a collector lives on a thread, the errors a loader can step over (an unknown field, which it
/// then ignores; a field given twice) are kept rather than thrown, up to kMaxCollectedErrors. The first
/// error that stops reading, or the end of reading, throws them as one InputError that lists each on its
/// own line; a single error is thrown as it is. Without a collector every error throws at once.
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "sim/core/input_error.h"

namespace mpsim {

inline constexpr std::size_t kMaxCollectedErrors = 20;

class InputErrorCollector {
 public:
  InputErrorCollector() noexcept;  ///< collects on this thread until destroyed (an inner one takes over)
  ~InputErrorCollector();
  InputErrorCollector(const InputErrorCollector&) = delete;
  InputErrorCollector& operator=(const InputErrorCollector&) = delete;

  /// Keeps `e` when a collector lives on this thread and has room; otherwise throws it (with what the
  /// collector kept).
  static void keep_or_throw(InputError e);
  /// Throws what was kept followed by `last`: `last` itself when nothing was kept.
  [[noreturn]] void throw_with(const InputError& last);
  /// Throws what was kept, if anything.
  void throw_if_any();

 private:
  std::vector<InputError> kept_;
  InputErrorCollector* outer_;
};

/// `read()`'s value, read under a collector: every error it could step over and the one that stopped
/// it (if any) come as one InputError.
template <typename Read>
auto read_collecting_errors(Read&& read) {
  InputErrorCollector collector;
  std::optional<decltype(read())> value;
  try {
    value.emplace(read());
  } catch (const InputError& e) {
    collector.throw_with(e);
  }
  collector.throw_if_any();
  return std::move(*value);
}

}  // namespace mpsim
