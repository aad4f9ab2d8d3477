#include "cli/plan_shards.h"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "planner/shard_parts.h"

namespace mpsim::cli {
namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI ") + what + " failed while gathering the search");
}

}  // namespace

planner::PlannerResult gather_shards(const planner::PlannerResult& mine, const planner::PlannerOptions& options,
                                     const topology::Cluster& cluster, const model::Model& model, int rank, int ranks) {
  const std::string text = planner::shard_part_text(mine);
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(ranks), 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "gather");
  std::vector<int> offsets(static_cast<std::size_t>(ranks), 0);
  std::size_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]);
  }
  std::string all(rank == 0 ? total : 0, '\0');
  check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                    MPI_COMM_WORLD),
        "gatherv");
  if (rank != 0) return {};

  std::vector<std::string_view> parts;
  for (int r = 0; r < ranks; ++r) {
    parts.push_back(std::string_view(all).substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                                 static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  }
  return planner::merge_shard_parts(parts, mine, options, cluster, model);
}

}  // namespace mpsim::cli
