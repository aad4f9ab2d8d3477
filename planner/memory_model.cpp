#include "planner/memory_model.h"

#include <algorithm>
#include <set>

#include "sim/schedule/generators.h"
#include "sim/schedule/stash.h"

namespace mpsim::planner {
namespace {

/// `a` <= `b` in every entry.
bool dominated_by(const std::vector<int>& a, const std::vector<int>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
  }
  return true;
}

CountVectors maximal(const std::set<std::vector<int>>& seen) {
  CountVectors out;
  for (const auto& v : seen) {
    bool dominated = false;
    for (const auto& w : seen) {
      if (&v != &w && dominated_by(v, w)) {
        dominated = true;
        break;
      }
    }
    if (!dominated) out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<CountVectors> in_flight_vectors(const schedule::PipelineShape& shape) {
  const schedule::Program program = schedule::make_program(shape);
  const auto v = static_cast<std::size_t>(shape.chunks);
  std::vector<CountVectors> out;
  out.reserve(program.streams.size());
  for (const auto& stream : program.streams) {
    std::vector<int> counts(2 * v, 0);
    std::set<std::vector<int>> seen;
    for (const schedule::Op& op : stream) {
      // The simulator's own rule for what a pass stashes and frees.
      for (const schedule::Op& pass : schedule::memory_order(op, shape.kind)) {
        const schedule::StashChange change = schedule::stash_change(pass.kind);
        counts[pass.chunk] += change.full;
        counts[v + pass.chunk] += change.after_input;
        if (change.full > 0) seen.insert(counts);
      }
    }
    out.push_back(maximal(seen));
  }
  return out;
}

Bytes peak_activations(const CountVectors& vectors, const std::vector<ChunkActivations>& chunks) {
  const std::size_t v = chunks.size();
  std::int64_t peak = 0;
  for (const auto& counts : vectors) {
    std::int64_t held = 0;
    for (std::size_t c = 0; c < v; ++c) {
      held += counts[c] * chunks[c].stashed.count() + counts[v + c] * chunks[c].after_input.count();
    }
    peak = std::max(peak, held);
  }
  return Bytes::bytes(peak);
}

}  // namespace mpsim::planner
