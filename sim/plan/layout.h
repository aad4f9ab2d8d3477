#pragma once
/// Where each rank of a plan runs: global rank <-> coordinates on named axes <-> groups, as
/// Megatron-Core's RankGenerator lays them out, including its parallel folding.
///
/// Two generators share the ranks. The attention (dense) generator orders tensor, context, data and
/// pipeline by the placement (fastest first; its ep has size 1); the expert generator orders
/// expert_tensor, expert, expert_data and pipeline by the same string, reading tp as expert_tensor,
/// ep as expert and dp as expert_data (its cp has size 1). Rank r = sum of coordinate x stride, the
/// stride of an axis being the product of the sizes of the axes before it. Global rank r runs on the
/// cluster's r-th GPU (declaration order), so with tp first the tensor ranks of a stage are
/// consecutive (one NVSwitch node).
///
/// group(rank, axes): the ranks that share every coordinate of `rank` except those on `axes`, in the
/// order Megatron lists them (the first of `axes` in the order string varies fastest). All axes of a
/// set belong to one generator (Pipeline belongs to both).
#include <array>
#include <utility>
#include <vector>

#include "sim/plan/axis.h"
#include "sim/plan/degrees.h"
#include "sim/plan/plan.h"

namespace mpsim::plan {

/// A spec's degrees with `data` data-parallel ranks (a spec may leave data to the GPU count).
[[nodiscard]] Degrees degrees_of(const PlanSpec& spec, int data) noexcept;
/// Why `d` cannot be laid out (expert_tensor x expert must divide tensor x context x data, shard_groups
/// must divide data), or nothing.
[[nodiscard]] std::optional<std::string> degrees_error(const Degrees& d);

class Layout {
 public:
  /// Preconditions: placement_error(placement) and degrees_error(degrees) are empty.
  Layout(const Degrees& degrees, const Placement& placement);
  explicit Layout(const Plan& plan);

  [[nodiscard]] int ranks() const noexcept { return ranks_; }
  [[nodiscard]] int size(Axis a) const noexcept { return degrees_[a]; }
  [[nodiscard]] int coordinate(int rank, Axis a) const noexcept;
  /// The rank with `rank`'s coordinates but `value` on `a`.
  [[nodiscard]] int with(int rank, Axis a, int value) const noexcept;
  /// The group of `rank` over `axes` (see above); {rank} for an empty set or size-1 axes.
  [[nodiscard]] std::vector<int> group(int rank, AxisSet axes) const;
  /// Every group over `axes`, in Megatron's order (the group holding rank 0 first; the remaining
  /// axes enumerate groups, first in the order string fastest).
  [[nodiscard]] std::vector<std::vector<int>> groups(AxisSet axes) const;

 private:
  struct Dim {
    Axis axis;
    int size;
    int stride;
  };
  using Generator = std::vector<Dim>;  // fastest first
  [[nodiscard]] const Generator& generator_of(AxisSet axes) const;
  [[nodiscard]] static const Dim* find(const Generator& g, Axis a) noexcept;

  Degrees degrees_;
  int ranks_ = 1;
  Generator dense_;
  Generator expert_;
};

}  // namespace mpsim::plan
