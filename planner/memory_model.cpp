#include "planner/memory_model.h"

#include <algorithm>
#include <array>
#include <optional>
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

/// The passes that hold working memory, in the order of their entries after the counts.
constexpr std::array kWorkingPasses{schedule::OpKind::Forward, schedule::OpKind::Backward,
                                    schedule::OpKind::BackwardInput};

/// The working-memory entry of a pass of chunk `c` (kWorkingPasses), or nothing for a pass without one.
std::optional<std::size_t> working_entry(schedule::OpKind kind, std::size_t c, std::size_t v) {
  for (std::size_t k = 0; k < kWorkingPasses.size(); ++k) {
    if (kWorkingPasses[k] == kind) return (2 + k) * v + c;
  }
  return std::nullopt;
}

}  // namespace

std::vector<CountVectors> in_flight_vectors(const schedule::PipelineShape& shape) {
  const schedule::Program program = schedule::make_program(shape);
  const auto v = static_cast<std::size_t>(shape.chunks);
  std::vector<CountVectors> out;
  out.reserve(program.streams.size());
  for (const auto& stream : program.streams) {
    std::vector<int> counts((2 + kWorkingPasses.size()) * v, 0);
    std::set<std::vector<int>> seen;
    for (const schedule::Op& op : stream) {
      // The simulator's own rule for what a pass stashes and frees, and what it holds while it runs.
      for (const schedule::Op& pass : schedule::memory_order(op, shape.kind)) {
        const schedule::StashChange change = schedule::stash_change(pass.kind);
        counts[pass.chunk] += change.full;
        counts[v + pass.chunk] += change.after_input;
        if (const auto entry = working_entry(pass.kind, pass.chunk, v)) {
          counts[*entry] = 1;
          seen.insert(counts);
          counts[*entry] = 0;
        }
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
      const ChunkActivations& a = chunks[c];
      held += counts[c] * a.stashed.count() + counts[v + c] * a.after_input.count();
      for (std::size_t k = 0; k < kWorkingPasses.size(); ++k) {
        held += counts[(2 + k) * v + c] * schedule::working_bytes(kWorkingPasses[k], a.forward_working.count(),
                                                                  a.backward_working.count(), a.after_input.count());
      }
    }
    peak = std::max(peak, held);
  }
  return Bytes::bytes(peak);
}

}  // namespace mpsim::planner
