// Spreads as users write them: percentages and fractions, and the one-line errors for the rest.
#include "sim/variability/speed_spread.h"

#include <gtest/gtest.h>

#include "sim/core/input_error.h"

namespace mpsim::variability {
namespace {

TEST(SpeedSpread, PercentagesAndFractions) {
  EXPECT_DOUBLE_EQ(parse_spread("5%", "--gpu-speed-spread"), 0.05);
  EXPECT_DOUBLE_EQ(parse_spread("5 %", "--gpu-speed-spread"), 0.05);
  EXPECT_DOUBLE_EQ(parse_spread("0.5%", "--gpu-speed-spread"), 0.005);
  EXPECT_DOUBLE_EQ(parse_spread("0.05", "--gpu-speed-spread"), 0.05);
  EXPECT_DOUBLE_EQ(parse_spread("0", "--gpu-speed-spread"), 0.0);
  EXPECT_DOUBLE_EQ(parse_spread("0%", "--gpu-speed-spread"), 0.0);
  EXPECT_DOUBLE_EQ(parse_spread("1", "--gpu-speed-spread"), 1.0);
  EXPECT_DOUBLE_EQ(parse_spread("100%", "--gpu-speed-spread"), 1.0);
}

TEST(SpeedSpread, RefusesWhatIsNoSpreadNamingTheFlag) {
  for (const char* bad : {"-5%", "-0.1", "5", "150%", "abc", "", "%", "5%%", "nan", "inf", "5 percent"}) {
    try {
      (void)parse_spread(bad, "--link-speed-spread");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--link-speed-spread"), std::string::npos) << e.what();
    }
  }
  try {
    (void)parse_spread("5", "--gpu-speed-spread");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("write 5%"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpsim::variability
