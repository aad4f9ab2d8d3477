#include "planner/memory_model.h"

#include <algorithm>
#include <set>

#include "sim/schedule/generators.h"

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
  using schedule::OpKind;
  const schedule::Program program = schedule::make_program(shape);
  const auto v = static_cast<std::size_t>(shape.chunks);
  std::vector<CountVectors> out;
  out.reserve(program.streams.size());
  for (const auto& stream : program.streams) {
    std::vector<int> counts(2 * v, 0);
    std::set<std::vector<int>> seen;
    for (const schedule::Op& op : stream) {
      const std::size_t c = op.chunk;
      switch (op.kind) {
        case OpKind::Forward:
          ++counts[c];
          seen.insert(counts);
          break;
        case OpKind::Backward: --counts[c]; break;
        case OpKind::BackwardInput:
          --counts[c];
          ++counts[v + c];
          break;
        case OpKind::BackwardWeight: --counts[v + c]; break;
        case OpKind::SendActivation:
        case OpKind::RecvActivation:
        case OpKind::SendGrad:
        case OpKind::RecvGrad:
        case OpKind::AllReduce:
        case OpKind::ReduceScatter:
        case OpKind::AllGather:
        case OpKind::OptimizerStep: break;
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
