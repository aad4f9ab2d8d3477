#pragma once
/// The pipeline schedules as data: one row per schedule with its plan-file word, how it places chunks,
/// which passes it runs, the extra rule its shape obeys and the names each framework runs it by. Every
/// property of a schedule that code outside its generator asks is a column here (docs/adding-a-schedule.md);
/// the generator itself is the schedule library's row (sim/schedule/make_program.cpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "sim/core/traits_table.h"

namespace mpsim::plan {

enum class ScheduleKind : std::uint8_t {
  GPipe,                 ///< all forwards, then all backwards (= SageMaker `simple`)
  OneFOneB,              ///< PipeDream-Flush, Megatron non-interleaved
  Interleaved1F1B,       ///< Megatron virtual stages
  ZbH1,                  ///< Zero Bubble handcrafted, 1F1B memory
  ZbH2,                  ///< Zero Bubble handcrafted, 2x 1F1B memory
  SageMakerInterleaved,  ///< SageMaker `interleaved`: backward-first with a cap on active microbatches
  ZbV,                   ///< Zero Bubble V: two chunks per rank in a V, zero bubble at 1F1B's memory
  DualPipeV,             ///< DeepSeek's DualPipeV: the V with overlapped forward-backward pairs
  ZbAuto,                ///< Zero Bubble's automatic schedule under a memory limit (ZB-1p at p, ZB-2p at 2p)
  VHalf,                 ///< the V at about half of 1F1B's activations (Qi et al. 2024, controllable memory)
  VMin,                  ///< the V at about a third of 1F1B's activations
  DualPipe,              ///< DeepSeek's bidirectional DualPipe: half the microbatches enter at each end
};
inline constexpr std::size_t kScheduleKindCount = 12;

/// How a schedule lays model chunks (virtual stages) on a pipeline rank.
enum class ChunkLayout : std::uint8_t {
  One,     ///< one chunk per rank
  Looped,  ///< several chunks, Megatron's loop: rank r holds stages r, p + r, 2p + r, ...
  V,       ///< two chunks in a V: chunk 0 of rank r is stage r and chunk 1 is stage 2p - 1 - r
};

/// The rule a schedule's shape obeys beyond stages, microbatches and chunks (plan_check.h states each).
enum class ShapeRule : std::uint8_t {
  None,
  MicrobatchGroup,  ///< Megatron's microbatch_group_size_per_vp_stage (interleaved_group_error)
  ActiveCap,        ///< SageMaker's active_microbatches, at least 1
  MemoryLimit,      ///< zb-auto's zb_memory_limit, at least 1
  VShape,           ///< two chunks per rank and enough microbatches (v_schedule_error)
};

/// How TorchTitan (torch.distributed.pipelining) runs a schedule.
enum class TorchTitanRun : std::uint8_t {
  ByName,   ///< a schedule class of that name (`torchtitan` column)
  FromCsv,  ///< from the order written as a schedule CSV (_PipelineScheduleRuntime)
  Never,    ///< it builds each stage on one rank, so a schedule that holds a stage twice cannot run
};

struct ScheduleTraits {
  ScheduleKind kind;
  std::string_view name;   ///< the plan file's word (the first of its words, which writers use)
  std::string_view alias;  ///< another word plan files may use (SageMaker's, PipeDream's), or empty
  ChunkLayout chunks;
  /// Microbatches run both ways: the first half enters at pipeline rank 0 and runs chunk 0 of every rank
  /// down to the last; the second half enters at the last rank and runs chunk 1 back to rank 0. Virtual
  /// stages p + k and k hold the same layers, so every model stage lives on two ranks (r and p - 1 - r),
  /// whose gradients are summed (Axis::PipelineMirror).
  bool bidirectional;
  bool splits_backward;  ///< backward as BackwardInput and BackwardWeight (the zero-bubble family)
  /// The schedule pairs one microbatch's forward with another's backward as one op of its own (DeepSeek's
  /// F&B overlap): some backwards run fused, some split, and a pair keeps its forward's stash before its
  /// backward frees the other (the DualPipe README's PP + 1 stage activations).
  bool forward_backward_pairs;
  int microbatches_per_rank;  ///< the fewest microbatches per pipeline rank its steady phase needs (0: any)
  ShapeRule rule;
  bool searched_by_default;  ///< `mpsim plan` tries it without --schedules
  bool megatron;             ///< Megatron-LM and Megatron-Core (NeMo, Megatron-Bridge) run it
  bool deepspeed;            ///< DeepSpeed's PipelineEngine runs it (its TrainSchedule)
  std::string_view sagemaker;   ///< SMP v1's `pipeline` word, or empty
  std::string_view torchtitan;  ///< torch.distributed.pipelining's class (TorchTitanRun::ByName), or empty
  TorchTitanRun torchtitan_run;
};

/// One row per ScheduleKind, in the enum's order (plan files, the search and `--schedules` list them so).
inline constexpr std::array<ScheduleTraits, kScheduleKindCount> kScheduleTraits{{
    // kind, name, alias, chunks, bidirectional, splits_backward, pairs, per rank, rule, default,
    // megatron, deepspeed, sagemaker, torchtitan, torchtitan_run
    {ScheduleKind::GPipe, "gpipe", "sagemaker-simple", ChunkLayout::One, false, false, false, 0, ShapeRule::None, true,
     false, false, "simple", "GPipe", TorchTitanRun::ByName},
    {ScheduleKind::OneFOneB, "1f1b", "pipedream-flush", ChunkLayout::One, false, false, false, 0, ShapeRule::None, true,
     true, true, "", "1F1B", TorchTitanRun::ByName},
    {ScheduleKind::Interleaved1F1B, "interleaved-1f1b", "", ChunkLayout::Looped, false, false, false, 0,
     ShapeRule::MicrobatchGroup, true, true, false, "", "Interleaved1F1B", TorchTitanRun::ByName},
    {ScheduleKind::ZbH1, "zb-h1", "", ChunkLayout::One, false, true, false, 0, ShapeRule::None, true, false, false, "",
     "", TorchTitanRun::FromCsv},
    {ScheduleKind::ZbH2, "zb-h2", "", ChunkLayout::One, false, true, false, 0, ShapeRule::None, true, false, false, "",
     "", TorchTitanRun::FromCsv},
    {ScheduleKind::SageMakerInterleaved, "sagemaker-interleaved", "", ChunkLayout::One, false, false, false, 0,
     ShapeRule::ActiveCap, true, false, false, "interleaved", "", TorchTitanRun::FromCsv},
    {ScheduleKind::ZbV, "zb-v", "", ChunkLayout::V, false, true, false, 0, ShapeRule::VShape, true, false, false, "",
     "ZBVZeroBubble", TorchTitanRun::ByName},
    {ScheduleKind::DualPipeV, "dualpipev", "", ChunkLayout::V, false, true, true, 2, ShapeRule::VShape, true, false,
     false, "", "DualPipeV", TorchTitanRun::ByName},
    // Only when named: at the memory limit a plan leaves it (the pipeline size) it lays out ZB-H1's order.
    {ScheduleKind::ZbAuto, "zb-auto", "", ChunkLayout::One, false, true, false, 0, ShapeRule::MemoryLimit, false,
     false, false, "", "", TorchTitanRun::FromCsv},
    {ScheduleKind::VHalf, "v-half", "", ChunkLayout::V, false, true, false, 0, ShapeRule::VShape, true, false, false,
     "", "", TorchTitanRun::FromCsv},
    {ScheduleKind::VMin, "v-min", "", ChunkLayout::V, false, true, false, 0, ShapeRule::VShape, true, false, false, "",
     "", TorchTitanRun::FromCsv},
    // Only when named: its bound charges the F&B pairs their compute alone, which is loose where the pairs'
    // expert all-to-alls do not hide; searching it by default took the DeepSeek-V3 search on 2048 H100
    // from 41 s to 381 s (bench/planner_bench.cpp).
    {ScheduleKind::DualPipe, "dualpipe", "", ChunkLayout::V, true, true, true, 2, ShapeRule::VShape, false, false,
     false, "", "", TorchTitanRun::Never},
}};

[[nodiscard]] constexpr const ScheduleTraits& traits(ScheduleKind k) noexcept {
  return kScheduleTraits[static_cast<std::size_t>(k)];
}
static_assert(core::rows_in_enum_order(kScheduleTraits),
              "kScheduleTraits: one row per ScheduleKind, in the enum's order");

/// Every word plan files may use for a schedule, with its kind: each row's name, then its alias.
[[nodiscard]] consteval std::size_t schedule_word_count() {
  std::size_t n = 0;
  for (const ScheduleTraits& t : kScheduleTraits) n += t.alias.empty() ? 1 : 2;
  return n;
}
inline constexpr auto kScheduleNames = [] {
  std::array<std::pair<std::string_view, ScheduleKind>, schedule_word_count()> out{};
  std::size_t i = 0;
  for (const ScheduleTraits& t : kScheduleTraits) {
    out[i++] = {t.name, t.kind};
    if (!t.alias.empty()) out[i++] = {t.alias, t.kind};
  }
  return out;
}();

/// The plan file's word.
[[nodiscard]] constexpr std::string_view to_string(ScheduleKind k) noexcept { return traits(k).name; }
/// Whether the schedule runs several model chunks (virtual stages) per pipeline rank.
[[nodiscard]] constexpr bool has_virtual_stages(ScheduleKind k) noexcept { return traits(k).chunks != ChunkLayout::One; }
/// Whether the schedule places two chunks per rank as a V (ChunkLayout::V), so a microbatch turns round
/// on the last rank and both its forward and its backward end on rank 0 (a bidirectional schedule's
/// microbatches run one leg each).
[[nodiscard]] constexpr bool is_v_shaped(ScheduleKind k) noexcept { return traits(k).chunks == ChunkLayout::V; }
[[nodiscard]] constexpr bool is_bidirectional(ScheduleKind k) noexcept { return traits(k).bidirectional; }
/// The fewest microbatches a step of `kind` on `ranks` pipeline ranks runs.
[[nodiscard]] constexpr int minimum_microbatches(ScheduleKind kind, int ranks) noexcept {
  const int per_rank = traits(kind).microbatches_per_rank;
  return per_rank > 0 ? per_rank * ranks : 1;
}
/// The stages a plan's partition cuts the layers into: one per virtual stage, or for a bidirectional
/// schedule one per pipeline rank (each held twice).
[[nodiscard]] constexpr int partition_stage_count(ScheduleKind k, int ranks, int virtual_stages) noexcept {
  return is_bidirectional(k) ? ranks : ranks * virtual_stages;
}
/// The virtual stage that chunk `chunk` of pipeline rank `rank` holds, for `ranks` pipeline ranks:
/// `chunk * ranks + rank` (Megatron's loop: rank 0 holds stages 0, p, 2p, ...), or the V of is_v_shaped().
[[nodiscard]] constexpr int virtual_stage_of(ScheduleKind k, int ranks, int rank, int chunk) noexcept {
  if (is_v_shaped(k) && chunk == 1) return 2 * ranks - 1 - rank;
  return chunk * ranks + rank;
}
/// The stage of the partition that virtual stage `vs` holds (partition_stage_count): `vs`, or in a
/// bidirectional schedule vs mod p.
[[nodiscard]] constexpr int partition_stage_of(ScheduleKind k, int ranks, int vs) noexcept {
  return is_bidirectional(k) ? vs % ranks : vs;
}

}  // namespace mpsim::plan
