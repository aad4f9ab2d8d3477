#pragma once
/// What every harness shares: the input as text, and the one rule of a reader under fuzzing — it
/// either returns or throws its documented error type. Anything else (another exception, a
/// crash, a sanitizer report, a leak, an input slower than the run's -timeout) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpsim::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `read`; the expected error type `Error` is the reader's answer to bad bytes.
template <class Error, class Read>
void expect_only(Read&& read) {
  try {
    read();
  } catch (const Error&) {
  }
}

/// Clusters are built in time linear in their size (about 0.2 ms per 8-GPU node in a release build,
/// ten times that here): past this many nodes a 1 s limit would find large clusters rather than
/// slow code, so the harnesses leave bigger ones unbuilt.
inline constexpr long long kMaxFuzzNodes = 512;

/// Where the shipped files are (the override harness loads them).
inline std::string source_path(std::string_view relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + std::string(relative); }

}  // namespace mpsim::fuzz
