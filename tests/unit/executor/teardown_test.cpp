// The teardown policy both backends follow (executor/backend/teardown.h): a failed run only aborts
// its channels, never drains, frees or destroys (each of which can wait on a peer that is gone); a
// clean run drains, frees and closes, in that order. A recording double stands in for a backend's
// communication layer; the CPU backend's fault tests run the same policy for real.
#include "executor/backend/teardown.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mpsim::executor {
namespace {

class RecordingSteps final : public TeardownSteps {
 public:
  std::vector<std::string> calls;
  void abort_channels() noexcept override { calls.push_back("abort"); }
  void drain() noexcept override { calls.push_back("drain"); }
  void release_memory() noexcept override { calls.push_back("release"); }
  void close_channels() noexcept override { calls.push_back("close"); }
};

TEST(Teardown, AFailedRunOnlyAborts) {
  RecordingSteps steps;
  tear_down(steps, true);
  EXPECT_EQ(steps.calls, std::vector<std::string>{"abort"});
}

TEST(Teardown, ACleanRunDrainsFreesThenCloses) {
  RecordingSteps steps;
  tear_down(steps, false);
  EXPECT_EQ(steps.calls, (std::vector<std::string>{"drain", "release", "close"}));
}

/// Tears down in its destructor as the backends do.
class Owner {
 public:
  explicit Owner(RecordingSteps& steps) : steps_(steps) {}
  ~Owner() { tear_down(steps_, failing(false)); }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;

 private:
  RecordingSteps& steps_;
};

TEST(Teardown, DestroyedWhileAnErrorUnwindsCountsAsFailed) {
  RecordingSteps unwound;
  try {
    Owner owner(unwound);
    throw std::runtime_error("a peer stopped");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(unwound.calls, std::vector<std::string>{"abort"});
  RecordingSteps clean;
  { Owner owner(clean); }
  EXPECT_EQ(clean.calls, (std::vector<std::string>{"drain", "release", "close"}));
}

}  // namespace
}  // namespace mpsim::executor
