#pragma once
/// Where each rank of a plan runs: global rank <-> (tensor, data, pipeline) coordinates <-> GPU.
///
/// Megatron's convention: the placement lists the axes fastest-varying first, so with tp-dp-pp the
/// tensor-parallel ranks of one pipeline stage are consecutive global ranks (one NVSwitch node), and
/// global rank r runs on the cluster's r-th GPU (in declaration order).
#include <array>
#include <cstdint>
#include <vector>

#include "sim/plan/plan.h"

namespace mpsim::plan {

struct RankCoord {
  int tensor = 0;
  int data = 0;
  int pipeline = 0;
  friend bool operator==(const RankCoord&, const RankCoord&) = default;
};

class ParallelLayout {
 public:
  explicit ParallelLayout(const Plan& plan);

  [[nodiscard]] int ranks() const noexcept { return sizes_[0] * sizes_[1] * sizes_[2]; }
  [[nodiscard]] RankCoord coord(int rank) const noexcept;
  [[nodiscard]] int rank(RankCoord c) const noexcept;
  /// Global ranks of the tensor group of (data, pipeline), in tensor order.
  [[nodiscard]] std::vector<int> tensor_group(int data, int pipeline) const;
  /// Global ranks of the data-parallel group of (tensor, pipeline), in data order.
  [[nodiscard]] std::vector<int> data_group(int tensor, int pipeline) const;

 private:
  Placement order_;
  std::array<int, 3> sizes_{};  // in placement order
  [[nodiscard]] int size_of(Axis a) const noexcept;
};

}  // namespace mpsim::plan
