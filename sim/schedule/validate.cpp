#include "sim/schedule/validate.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/schedule/passes.h"
#include "sim/schedule/stash.h"
#include "sim/schedule/validate_detail.h"

namespace mpsim::schedule {

namespace detail {

std::string op_text(const Program& program, const Op& op) { return to_text(op, program.shape.chunks > 1); }

std::size_t Naming::index(int rank, std::size_t checked_index) const {
  if (origin.empty()) return checked_index;
  return origin[static_cast<std::size_t>(rank)][checked_index];
}

std::string Naming::where(int rank, std::size_t checked_index) const {
  const std::size_t i = index(rank, checked_index);
  return fmt::format("rank {} op {} ({})", rank, i, op_text(*shown, shown->streams[static_cast<std::size_t>(rank)][i]));
}

ProgramError Naming::error(int rank, std::size_t checked_index, const std::string& what) const {
  return {rank, index(rank, checked_index), fmt::format("{} {}", where(rank, checked_index), what)};
}

}  // namespace detail

namespace {

/// For a lowered copy of a program that had no Send/Recv: each op's compute op in the original
/// (a Recv belongs to the op after it, a Send to the op before it).
std::vector<std::vector<std::size_t>> origins(const Program& lowered) {
  std::vector<std::vector<std::size_t>> origin(lowered.streams.size());
  for (std::size_t r = 0; r < lowered.streams.size(); ++r) {
    const std::vector<Op>& stream = lowered.streams[r];
    std::size_t next = 0;  // original index of the next non-comm op
    for (const Op& op : stream) {
      if (is_send(op.kind)) {
        origin[r].push_back(next - 1);  // lower_comm puts a Send after the op it sends for
      } else {
        origin[r].push_back(next);
        if (!is_recv(op.kind)) ++next;
      }
    }
  }
  return origin;
}

bool has_comm(const Program& program) {
  return std::any_of(program.streams.begin(), program.streams.end(), [](const std::vector<Op>& s) {
    return std::any_of(s.begin(), s.end(), [](const Op& op) { return is_send(op.kind) || is_recv(op.kind); });
  });
}

std::optional<ProgramError> check_comm(const Program& checked, const detail::Naming& naming) {
  if (auto e = detail::check_pairing(checked, naming)) return e;
  if (auto e = detail::check_dependency_order(checked, naming)) return e;
  return detail::check_deadlock(checked, naming);
}

}  // namespace

std::optional<ProgramError> validate(const Program& program) {
  if (auto e = detail::check_structure(program)) return e;
  if (auto e = detail::check_completeness(program)) return e;
  if (has_comm(program)) return check_comm(program, detail::Naming{&program, {}});
  const Program lowered = lower_comm(program);
  return check_comm(lowered, detail::Naming{&program, origins(lowered)});
}

std::vector<int> peak_in_flight(const Program& program) {
  std::vector<int> peaks;
  peaks.reserve(program.streams.size());
  for (const std::vector<Op>& stream : program.streams) {
    int now = 0;
    int peak = 0;
    for (const Op& op : stream) {
      for (const Op& pass : memory_order(op, program.shape.kind)) {
        if (pass.kind == OpKind::Forward) peak = std::max(peak, ++now);
        if (pass.kind == OpKind::Backward || pass.kind == OpKind::BackwardInput) --now;
      }
    }
    peaks.push_back(peak);
  }
  return peaks;
}

}  // namespace mpsim::schedule
