#pragma once
/// Which of mpsim's schedules runs a given per-rank order: how an imported PyTorch pipelining CSV
/// (a TorchTitan job's pipeline_parallel_schedule_csv) becomes a plan's `schedule`, since a plan
/// names a schedule and its parameters rather than carrying an order.
#include <optional>

#include "sim/schedule/program.h"

namespace mpsim::interop {

/// The shape (schedule kind and its parameters: microbatch_group_size, active_microbatches,
/// memory_limit) whose generator gives exactly `order`'s compute ops on every rank, among the
/// schedules that place stages as `order.shape.kind` does (Megatron's loop, or the V) with its chunks.
/// Where two generate the same order, the first in plan::kScheduleTraits' order, each with the plan
/// loader's default parameter first. Nothing when none does (a hand-made order).
[[nodiscard]] std::optional<schedule::PipelineShape> matching_schedule(const schedule::Program& order);

}  // namespace mpsim::interop
