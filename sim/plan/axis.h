#pragma once
/// The parallel axes as data: names, sets of axes (a communication group spans one or several), and
/// the placement order string.
///
/// Megatron-Core's vocabulary: attention layers lay ranks out over tensor, context, data and pipeline;
/// expert layers regroup the same ranks over expert_tensor, expert, expert_data and pipeline
/// (parallel folding). docs/adding-a-parallel-axis.md lists what else a new axis touches.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpsim::plan {

/// DataShard and DataReplica split the data axis for hybrid sharding (HSDP): the shards of the model
/// states within a group of data / shard_groups ranks (the inner part of the data coordinate) and the
/// groups that each hold a whole copy (the outer part). PipelineMirror pairs pipeline rank r with
/// rank p - 1 - r, which hold the same two stages in a bidirectional schedule (ScheduleTraits::bidirectional); a group over
/// it and other axes is the two ranks' groups over those axes. None of these is a word of an order string.
enum class Axis : std::uint8_t {
  Tensor, Context, Expert, ExpertTensor, ExpertData, Data, Pipeline, DataShard, DataReplica, PipelineMirror
};
inline constexpr int kAxisCount = 10;
inline constexpr std::array<Axis, kAxisCount> kAllAxes{Axis::Tensor,     Axis::Context,    Axis::Expert,
                                                       Axis::ExpertTensor, Axis::ExpertData, Axis::Data,
                                                       Axis::DataShard,  Axis::DataReplica, Axis::Pipeline,
                                                       Axis::PipelineMirror};

/// Megatron's short words: tp, cp, ep, etp, edp, dp, pp; TorchTitan's dp_shard and dp_replicate.
[[nodiscard]] std::string_view short_name(Axis a) noexcept;
/// The word of a placement string or an axis set, or nothing.
[[nodiscard]] std::optional<Axis> axis_from_short_name(std::string_view word) noexcept;

/// A set of axes: the group of a rank over them holds the ranks that differ from it only there.
class AxisSet {
 public:
  constexpr AxisSet() noexcept = default;
  constexpr AxisSet(Axis a) noexcept : bits_(bit(a)) {}  // NOLINT: an axis is the set of itself
  [[nodiscard]] constexpr bool contains(Axis a) const noexcept { return (bits_ & bit(a)) != 0; }
  [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
  [[nodiscard]] constexpr std::uint16_t bits() const noexcept { return bits_; }
  /// The set without `a`.
  [[nodiscard]] constexpr AxisSet without(Axis a) const noexcept {
    AxisSet out = *this;
    out.bits_ = static_cast<std::uint16_t>(bits_ & ~bit(a));
    return out;
  }
  constexpr AxisSet& operator|=(AxisSet o) noexcept {
    bits_ = static_cast<std::uint16_t>(bits_ | o.bits_);
    return *this;
  }
  friend constexpr AxisSet operator|(AxisSet a, AxisSet b) noexcept { return a |= b; }
  friend constexpr bool operator==(AxisSet, AxisSet) = default;
  friend constexpr auto operator<=>(AxisSet a, AxisSet b) noexcept { return a.bits_ <=> b.bits_; }

 private:
  static constexpr std::uint16_t bit(Axis a) noexcept { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(a)); }
  std::uint16_t bits_ = 0;
};
[[nodiscard]] constexpr AxisSet operator|(Axis a, Axis b) noexcept { return AxisSet(a) | AxisSet(b); }

/// "dp-cp" style, in kAllAxes order.
[[nodiscard]] std::string to_string(AxisSet axes);

/// A placement: the order string's axes, fastest-varying first (Megatron's `order`, e.g. tp-cp-ep-dp-pp).
/// It names the axes of the attention layout (tp, cp, dp, pp) and where the expert axis goes; the
/// expert layout reads tp as expert_tensor and dp as expert_data. Axes left out of a written string
/// are placed as Megatron's default order places them: cp right after tp, ep right after cp.
using Placement = std::vector<Axis>;
/// Megatron's default order as plan files write it ("tp-dp-pp"; with cp and ep implied after tp).
inline const Placement kMegatronPlacement{Axis::Tensor, Axis::Data, Axis::Pipeline};
/// "tp-dp-pp" style: the axes as written.
[[nodiscard]] std::string to_string(const Placement& p);
/// The full order over tp, cp, ep, dp, pp that `p` implies (see Placement).
[[nodiscard]] Placement complete_order(const Placement& p);
/// Why `p` is not a placement (an axis other than tp, cp, ep, dp, pp, one repeated, or tp, dp or pp
/// missing), or nothing.
[[nodiscard]] std::optional<std::string> placement_error(const Placement& p);

}  // namespace mpsim::plan
