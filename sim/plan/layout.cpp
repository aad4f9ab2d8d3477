#include "sim/plan/layout.h"

namespace mpsim::plan {
namespace {
int coordinate(const RankCoord& c, Axis a) {
  switch (a) {
    case Axis::Tensor: return c.tensor;
    case Axis::Data: return c.data;
    case Axis::Pipeline: return c.pipeline;
  }
  return 0;
}
}  // namespace

ParallelLayout::ParallelLayout(const Plan& plan) : order_(plan.placement) {
  for (std::size_t i = 0; i < 3; ++i) {
    switch (order_[i]) {
      case Axis::Tensor: sizes_[i] = plan.tensor; break;
      case Axis::Data: sizes_[i] = plan.data; break;
      case Axis::Pipeline: sizes_[i] = plan.pipeline; break;
    }
  }
}

int ParallelLayout::size_of(Axis a) const noexcept {
  for (std::size_t i = 0; i < 3; ++i) {
    if (order_[i] == a) return sizes_[i];
  }
  return 1;
}

RankCoord ParallelLayout::coord(int rank) const noexcept {
  RankCoord c;
  int rest = rank;
  for (std::size_t i = 0; i < 3; ++i) {
    const int v = rest % sizes_[i];
    rest /= sizes_[i];
    switch (order_[i]) {
      case Axis::Tensor: c.tensor = v; break;
      case Axis::Data: c.data = v; break;
      case Axis::Pipeline: c.pipeline = v; break;
    }
  }
  return c;
}

int ParallelLayout::rank(RankCoord c) const noexcept {
  int r = 0;
  for (int i = 2; i >= 0; --i) r = r * sizes_[static_cast<std::size_t>(i)] + coordinate(c, order_[static_cast<std::size_t>(i)]);
  return r;
}

std::vector<int> ParallelLayout::tensor_group(int data, int pipeline) const {
  std::vector<int> out;
  for (int t = 0; t < size_of(Axis::Tensor); ++t) out.push_back(rank({t, data, pipeline}));
  return out;
}

std::vector<int> ParallelLayout::data_group(int tensor, int pipeline) const {
  std::vector<int> out;
  for (int d = 0; d < size_of(Axis::Data); ++d) out.push_back(rank({tensor, d, pipeline}));
  return out;
}

}  // namespace mpsim::plan
