#pragma once
/// The degree of every parallel axis, as one value: what a plan, a layout and the search's shapes
/// carry. The axes a plan sets are stored; the others follow from them: expert_data = tensor x context
/// x data / (expert_tensor x expert) (Megatron's parallel folding), data_shard = data / data_replica
/// (HSDP: data_replica is the plan's shard_groups), and pipeline_mirror pairs rank r with p - 1 - r
/// once the pipeline has two ranks.
#include <array>
#include <cstddef>

#include "sim/plan/axis.h"

namespace mpsim::plan {

class Degrees {
 public:
  constexpr Degrees() noexcept { stored_.fill(1); }

  /// Whether a plan sets `a`; the others follow from those (operator[] says how).
  [[nodiscard]] static constexpr bool is_set_by_plan(Axis a) noexcept {
    return a != Axis::ExpertData && a != Axis::DataShard && a != Axis::PipelineMirror;
  }

  /// The degree of `a` (0 where a derived degree has no whole value: degrees_error says why).
  [[nodiscard]] constexpr int operator[](Axis a) const noexcept {
    switch (a) {
      case Axis::ExpertData: {
        const int expert_ranks = at(Axis::ExpertTensor) * at(Axis::Expert);
        return expert_ranks > 0 ? at(Axis::Tensor) * at(Axis::Context) * at(Axis::Data) / expert_ranks : 0;
      }
      case Axis::DataShard:
        return at(Axis::DataReplica) > 0 ? at(Axis::Data) / at(Axis::DataReplica) : 0;
      case Axis::PipelineMirror:
        return at(Axis::Pipeline) > 1 ? 2 : 1;
      case Axis::Tensor:
      case Axis::Context:
      case Axis::Expert:
      case Axis::ExpertTensor:
      case Axis::Data:
      case Axis::Pipeline:
      case Axis::DataReplica:
        return at(a);
    }
    return 1;
  }
  /// Sets an axis a plan sets (is_set_by_plan); a derived axis is left to follow.
  constexpr Degrees& set(Axis a, int degree) noexcept {
    if (is_set_by_plan(a)) stored_[static_cast<std::size_t>(a)] = degree;
    return *this;
  }
  /// The product of the degrees of `axes`: the size of a group over them.
  [[nodiscard]] constexpr int product(AxisSet axes) const noexcept {
    int out = 1;
    for (const Axis a : kAllAxes) {
      if (axes.contains(a)) out *= (*this)[a];
    }
    return out;
  }
  /// The GPUs: tensor x context x data x pipeline (the expert layout regroups the same ranks).
  [[nodiscard]] constexpr int ranks() const noexcept {
    return product(Axis::Tensor | Axis::Context | Axis::Data | Axis::Pipeline);
  }

  friend constexpr bool operator==(const Degrees&, const Degrees&) = default;
  friend constexpr auto operator<=>(const Degrees&, const Degrees&) = default;

 private:
  [[nodiscard]] constexpr int at(Axis a) const noexcept { return stored_[static_cast<std::size_t>(a)]; }
  std::array<int, kAxisCount> stored_{};
};

}  // namespace mpsim::plan
