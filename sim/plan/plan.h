#pragma once
/// The plan: everything the planner decides, and the contract between planner, simulator and
/// executor. `PlanSpec` is a plan as written (some values may be left to be derived); `Plan` is
/// complete and checked against a cluster and a model (resolve_plan()).
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"
#include "sim/plan/axis.h"
#include "sim/model/recompute.h"

namespace mpsim::plan {

using model::Recompute;

enum class ScheduleKind : std::uint8_t {
  GPipe,                 ///< all forwards, then all backwards (= SageMaker `simple`)
  OneFOneB,              ///< PipeDream-Flush, Megatron non-interleaved
  Interleaved1F1B,       ///< Megatron virtual stages
  ZbH1,                  ///< Zero Bubble handcrafted, 1F1B memory
  ZbH2,                  ///< Zero Bubble handcrafted, 2x 1F1B memory
  SageMakerInterleaved,  ///< SageMaker `interleaved`: backward-first with a cap on active microbatches
};
[[nodiscard]] std::string_view to_string(ScheduleKind k) noexcept;
/// Whether the schedule runs several model chunks (virtual stages) per pipeline rank.
[[nodiscard]] bool has_virtual_stages(ScheduleKind k) noexcept;
/// Every schedule with its plan-file word, in a fixed order.
inline constexpr std::pair<std::string_view, ScheduleKind> kScheduleNames[] = {
    {"gpipe", ScheduleKind::GPipe},
    {"1f1b", ScheduleKind::OneFOneB},
    {"interleaved-1f1b", ScheduleKind::Interleaved1F1B},
    {"zb-h1", ScheduleKind::ZbH1},
    {"zb-h2", ScheduleKind::ZbH2},
    {"sagemaker-simple", ScheduleKind::GPipe},
    {"sagemaker-interleaved", ScheduleKind::SageMakerInterleaved},
    {"pipedream-flush", ScheduleKind::OneFOneB},
};

enum class Objective : std::uint8_t { Speed, Memory };
[[nodiscard]] std::string_view to_string(Objective o) noexcept;

/// A plan as written. Unset values are derived by resolve_plan(): `data` fills the cluster,
/// `microbatches` follows from the global batch, `global_batch` from the microbatches.
struct PlanSpec {
  int tensor = 1;
  int pipeline = 1;
  std::optional<int> data;
  int virtual_stages = 1;
  std::optional<int> global_batch;
  int micro_batch = 1;
  std::optional<int> microbatches;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::vector<int> partition;          ///< empty = balanced; else boundaries, pipeline*virtual_stages+1 of them
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;
  bool overlap_tensor_comm = false;    ///< in-layer tensor collectives beside the compute (--tp-comm-overlap)
  int zero = 0;
  Placement placement = kMegatronPlacement;
  std::optional<int> active_microbatches;         ///< SageMaker interleaved cap; default pipeline + 2
  std::optional<int> microbatch_group_size;       ///< Megatron microbatch_group_size_per_vp_stage; default pipeline
  Objective optimize = Objective::Speed;
  bool allow_tensor_across_nodes = false;
  /// Where each field was written (by its dotted name), so that checks against the cluster and the
  /// model still point at the file, line and field.
  std::map<std::string, SourceLocation> origins;
  std::string file;
};

/// A complete plan, consistent with its cluster and model.
struct Plan {
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int virtual_stages = 1;
  int global_batch = 1;
  int micro_batch = 1;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::vector<int> partition;  ///< boundaries over the model's layers, pipeline*virtual_stages+1 of them
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;
  bool overlap_tensor_comm = false;
  int zero = 0;
  Placement placement = kMegatronPlacement;
  int active_microbatches = 3;
  int microbatch_group_size = 1;
  Objective optimize = Objective::Speed;
  bool allow_tensor_across_nodes = false;

  [[nodiscard]] int gpus() const noexcept { return tensor * pipeline * data; }
  [[nodiscard]] int stages() const noexcept { return pipeline * virtual_stages; }
  friend bool operator==(const Plan&, const Plan&) = default;
};

}  // namespace mpsim::plan
