#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/plan/plan_check.h"
#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"

namespace mpsim::schedule {

namespace {

/// Megatron's rules on N = microbatch_group_size_per_vp_stage keep its warm-up deadlock-free: with a
/// smaller group (or last group), rank 0's warm-up forwards of chunk c + 1 wait for forwards of chunk c
/// that the last rank runs only after a backward that waits for rank 0 (e.g. p = 4, m = 8, v = 2,
/// N = 2). The rule is sufficient, not necessary (p <= 2 never deadlocks); the validator is the exact test.
std::optional<std::string> interleaved_group_error(const PipelineShape& shape) {
  return plan::interleaved_group_error(shape.microbatches, shape.stages, shape.microbatch_group_size);
}

/// The V schedules' rules, as the plan check states them.
std::optional<std::string> v_shape_error(const PipelineShape& shape) {
  const auto error = plan::v_schedule_error(shape.kind, shape.stages, shape.chunks, shape.microbatches);
  return error ? std::optional<std::string>(error->message) : std::nullopt;
}

}  // namespace

std::optional<std::string> shape_error(const PipelineShape& shape) {
  if (shape.stages < 1) return fmt::format("a pipeline needs at least 1 stage, not {}", shape.stages);
  if (shape.microbatches < 1) return fmt::format("a step needs at least 1 microbatch, not {}", shape.microbatches);
  if (shape.chunks < 1) return fmt::format("a rank holds at least 1 chunk, not {}", shape.chunks);
  if (shape.chunks > std::numeric_limits<std::uint16_t>::max()) {
    return fmt::format("{} chunks do not fit an op's chunk field", shape.chunks);
  }
  switch (plan::traits(shape.kind).rule) {
    case plan::ShapeRule::MicrobatchGroup: return interleaved_group_error(shape);
    case plan::ShapeRule::ActiveCap:
      if (shape.active_microbatches < 1) {
        return fmt::format("{} needs at least 1 active microbatch, not {}", plan::to_string(shape.kind),
                           shape.active_microbatches);
      }
      break;
    case plan::ShapeRule::VShape: return v_shape_error(shape);
    case plan::ShapeRule::MemoryLimit:
      if (shape.memory_limit < 1) {
        return fmt::format("{} holds at least 1 microbatch's activations, not {}", plan::to_string(shape.kind),
                           shape.memory_limit);
      }
      break;
    case plan::ShapeRule::None: break;
  }
  if (shape.chunks > 1 && !plan::has_virtual_stages(shape.kind)) {
    return fmt::format("{} chunks per rank need schedule interleaved-1f1b or a V schedule, not {}", shape.chunks,
                       plan::to_string(shape.kind));
  }
  return std::nullopt;
}

namespace detail {

Program empty_program(const PipelineShape& shape, plan::ScheduleKind kind) {
  Program program;
  program.shape = shape;
  program.shape.kind = kind;
  if (const auto error = shape_error(program.shape)) throw std::invalid_argument(*error);
  program.streams.resize(static_cast<std::size_t>(shape.stages));
  return program;
}

}  // namespace detail
}  // namespace mpsim::schedule
