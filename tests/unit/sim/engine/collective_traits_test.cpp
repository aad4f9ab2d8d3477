// The collectives' tables (engine::kCollectiveTraits, kCollectiveAlgorithmTraits): every collective op
// runs its own collective, and every algorithm's word names it alone.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/engine/collectives.h"

namespace mpsim::engine {
namespace {

TEST(CollectiveTraits, EveryCollectiveOpRunsItsOwnCollective) {
  std::set<CollectiveKind> run;
  for (const schedule::OpTraits& op : schedule::kOpTraits) {
    if (!schedule::is_collective(op.kind)) continue;
    SCOPED_TRACE(std::string(op.name));
    const CollectiveKind kind = collective_kind(op.kind);
    EXPECT_TRUE(run.insert(kind).second);
    EXPECT_EQ(kCollectiveTraits[static_cast<std::size_t>(kind)].op, op.kind);
  }
  EXPECT_EQ(run.size(), kCollectiveTraits.size());
}

TEST(CollectiveAlgorithmTraits, EveryWordNamesItsAlgorithm) {
  std::set<std::string_view> words;
  for (const CollectiveAlgorithmTraits& t : kCollectiveAlgorithmTraits) {
    EXPECT_TRUE(words.insert(t.name).second) << t.name;
    EXPECT_EQ(to_string(t.kind), t.name);
  }
  ASSERT_EQ(kCollectiveAlgorithmNames.size(), kCollectiveAlgorithmTraits.size());
  for (const auto& [word, algorithm] : kCollectiveAlgorithmNames) EXPECT_EQ(to_string(algorithm), word);
}

}  // namespace
}  // namespace mpsim::engine
