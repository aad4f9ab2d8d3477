#pragma once
/// The checks validate() runs, one per file (not part of the public interface).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/schedule/validate.h"

namespace mpsim::schedule::detail {

/// Names ops in messages. Checks 3-5 may run on a lowered copy of the program the caller gave;
/// messages must still point at the caller's ops, so `origin[rank][i]` maps op i of the checked
/// program to the index, in `shown`, of the compute op it belongs to (empty: the identity).
struct Naming {
  const Program* shown = nullptr;
  std::vector<std::vector<std::size_t>> origin;

  [[nodiscard]] std::size_t index(int rank, std::size_t checked_index) const;
  /// "rank 2 op 7 (rA3)"
  [[nodiscard]] std::string where(int rank, std::size_t checked_index) const;
  [[nodiscard]] ProgramError error(int rank, std::size_t checked_index, const std::string& what) const;
};

/// Text of `op` as the program's messages write it (with the chunk when chunks > 1).
[[nodiscard]] std::string op_text(const Program& program, const Op& op);

[[nodiscard]] std::optional<ProgramError> check_structure(const Program& program);
[[nodiscard]] std::optional<ProgramError> check_completeness(const Program& program);
[[nodiscard]] std::optional<ProgramError> check_pairing(const Program& program, const Naming& naming);
[[nodiscard]] std::optional<ProgramError> check_dependency_order(const Program& program, const Naming& naming);
/// Requires check_pairing() to have passed.
[[nodiscard]] std::optional<ProgramError> check_deadlock(const Program& program, const Naming& naming);

}  // namespace mpsim::schedule::detail
