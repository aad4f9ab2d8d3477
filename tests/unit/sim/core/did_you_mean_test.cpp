// Suggestions for unknown names: a typo of a known word gets it, an unrelated word gets nothing.
#include <array>
#include <string_view>

#include <gtest/gtest.h>

#include "sim/core/did_you_mean.h"

namespace mpsim {
namespace {

constexpr std::array<std::string_view, 4> kOverlap{"grad_reduce", "param_gather", "tensor_comm", "moe_expert_comm"};
constexpr std::array<std::string_view, 3> kLink{"kind", "bandwidth", "latency"};

TEST(DidYouMean, ATypoGetsTheWordItMisspells) {
  EXPECT_EQ(closest_word("bandwith", kLink), "bandwidth");    // a letter left out
  EXPECT_EQ(closest_word("latnecy", kLink), "latency");       // two letters swapped: two edits of seven
  EXPECT_EQ(closest_word("kinds", kLink), "kind");            // one added
  EXPECT_EQ(closest_word("tensor", kOverlap), "tensor_comm");  // the start of a known word
  EXPECT_EQ(did_you_mean("bandwith", kLink), "; did you mean 'bandwidth'?");
}

TEST(DidYouMean, AnUnrelatedWordGetsNothing) {
  EXPECT_FALSE(closest_word("weights", kLink));
  EXPECT_FALSE(closest_word("nosuch", kOverlap));
  EXPECT_FALSE(closest_word("te", kOverlap));  // too short to be a start
  EXPECT_EQ(did_you_mean("nosuch", kOverlap), "");
}

}  // namespace
}  // namespace mpsim
