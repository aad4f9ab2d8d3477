#pragma once
/// What the traits tables share (schedules in sim/plan/schedule_traits.h, recomputation in
/// sim/model/recompute.h, op kinds in sim/schedule/op_kind.h, span kinds in sim/trace/span_traits.h,
/// collectives in sim/engine/collectives.h): each is a constexpr std::array with one row per enumerator
/// of an enum, in the enum's order, and each row names its enumerator in a member called `kind`.
#include <array>
#include <cstddef>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <utility>

namespace mpsim::core {

/// Whether row i of `table` is about enumerator i, so that a lookup is an index:
/// `static_assert(core::rows_in_enum_order(kTable), "...")`.
template <class Table>
[[nodiscard]] consteval bool rows_in_enum_order(const Table& table) {
  std::size_t i = 0;
  for (const auto& row : table) {
    if (static_cast<std::size_t>(row.kind) != i++) return false;
  }
  return true;
}

/// The (word, kind) pairs of one string column of `Table`, in the table's order, leaving out the rows
/// where it is empty: what Field::as_enum and the command line's lists parse.
/// `core::column_words<kScheduleTraits, &ScheduleTraits::torchtitan>()`.
template <const auto& Table, auto Column>
[[nodiscard]] consteval auto column_words() {
  using Row = std::remove_cvref_t<decltype(*std::begin(Table))>;
  using Kind = decltype(Row::kind);
  constexpr std::size_t count = [] {
    std::size_t n = 0;
    for (const Row& row : Table) n += std::string_view(row.*Column).empty() ? 0 : 1;
    return n;
  }();
  std::array<std::pair<std::string_view, Kind>, count> out{};
  std::size_t i = 0;
  for (const Row& row : Table) {
    if (!std::string_view(row.*Column).empty()) out[i++] = {row.*Column, row.kind};
  }
  return out;
}

}  // namespace mpsim::core
