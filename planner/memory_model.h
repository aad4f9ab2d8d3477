#pragma once
/// Peak memory of a pipeline rank without simulating: the static part (engine::static_memory)
/// plus the activations in flight at the schedule's worst moment, or, if larger, plus what the
/// optimizer step holds (StaticMemory::during_optimizer_step; candidate.cpp takes the larger).
///
/// The simulator counts a chunk's stashed activations from the start of its F until its backward
/// (all at B; at I all but the part a split backward keeps until W, the rest at W). Those moments
/// are fixed by the order of each rank's stream, not by timing, so walking the schedule generator's
/// program gives the simulator's peak exactly: at every F, B and I, the rank holds x_c activations of
/// chunk c (forwarded, not yet through B or I) and y_c (through I, not yet through W), and the running
/// pass's working memory (sim/engine/working_memory.h). For 1F1B and ZB-H1 rank
/// i holds min(p - i, m) forwarded microbatches, GPipe m, ZB-H2 min(2(p - i) - 1, m), SageMaker's
/// interleaved at most its active cap, interleaved-1f1b Megatron's warm-up count (generators.h); the
/// walk also counts what ZB keeps from I to W.
#include <cstdint>
#include <vector>

#include "sim/core/units.h"
#include "sim/schedule/program.h"

namespace mpsim::planner {

/// The activation counts a rank may hold at its peak: the count vectors seen at its F, B and I passes,
/// without duplicates and without vectors another one dominates. Each vector has 5 v entries:
/// x_0..x_{v-1}, then y_0..y_{v-1}, then which pass runs (and holds its working memory,
/// schedule::working_bytes): 1 at F of chunk c in the third v entries, B in the fourth, I in the fifth.
using CountVectors = std::vector<std::vector<int>>;

/// Per rank, walking the generator's program for `shape`. O(ops x kept vectors). Preconditions:
/// schedule::shape_error(shape) is empty.
[[nodiscard]] std::vector<CountVectors> in_flight_vectors(const schedule::PipelineShape& shape);

/// Activation bytes of one chunk at a moment: x forwarded and y between I and W.
struct ChunkActivations {
  Bytes stashed;           ///< per microbatch, from F to B (or I)
  Bytes after_input;       ///< of those, kept from I to W
  Bytes forward_working;   ///< held while F runs (engine::ChunkCost::forward_working)
  Bytes backward_working;  ///< held while B runs (engine::ChunkCost::backward_working)
};

/// The largest activation footprint of one rank over its vectors: max over vectors of
/// sum_c x_c stashed_c + y_c after_input_c plus the running pass's working memory. `chunks` has v
/// entries.
[[nodiscard]] Bytes peak_activations(const CountVectors& vectors,
                                     const std::vector<ChunkActivations>& chunks);

}  // namespace mpsim::planner
