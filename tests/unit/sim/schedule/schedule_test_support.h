#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/schedule/generators.h"
#include "sim/schedule/program.h"

namespace mpsim::schedule::testing {

inline PipelineShape shape(plan::ScheduleKind kind, int stages, int microbatches, int chunks = 1, int group = 0,
                           int active = 0) {
  PipelineShape s;
  s.kind = kind;
  s.stages = stages;
  s.microbatches = microbatches;
  s.chunks = chunks;
  s.microbatch_group_size = group > 0 ? group : stages;      // Megatron's default N = p
  s.active_microbatches = active > 0 ? active : stages + 2;  // SageMaker's default
  return s;
}

/// Line `rank` of to_text(program, with_comm), without its newline.
inline std::string rank_text(const Program& program, int rank, bool with_comm = false) {
  std::istringstream lines(to_text(program, with_comm));
  std::string line;
  for (int r = 0; r <= rank; ++r) std::getline(lines, line);
  return line;
}

/// Index of the first op of streams[rank] whose text is `text`.
inline std::size_t index_of(const Program& program, int rank, const std::string& text) {
  const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < stream.size(); ++i) {
    if (to_text(stream[i], program.shape.chunks > 1) == text) return i;
  }
  throw std::out_of_range("no " + text + " on rank " + std::to_string(rank));
}

}  // namespace mpsim::schedule::testing
