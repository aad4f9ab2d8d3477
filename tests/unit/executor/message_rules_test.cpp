// The CUDA backend's pure message rules: a receive's envelope checked against what it asked for (a
// channel's messages must be received in the order they were sent), where the mark after a send goes,
// and the process settings made before CUDA and NCCL start. They run on any machine.
#include "executor/backend/cuda/message_rules.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace mpsim::executor::cuda {
namespace {

TEST(MessageRules, TheEnvelopeAskedForMatches) {
  EXPECT_EQ(envelope_mismatch({2, 17, 4096}, 17, 4096), "");
  EXPECT_EQ(envelope_mismatch({2, 0, 0}, 0, 0), "");  // an empty message has an envelope too
}

TEST(MessageRules, AnotherTagOrCountIsAOneLineErrorNamingBoth) {
  const std::string wrong_tag = envelope_mismatch({3, 6, 8}, 5, 8);
  EXPECT_NE(wrong_tag.find("message from rank 3 out of order: the recv for tag 6 (8 floats) got tag 5 (8 floats)"),
            std::string::npos);
  EXPECT_EQ(wrong_tag.find('\n'), std::string::npos);
  EXPECT_NE(envelope_mismatch({3, 6, 8}, 6, 9).find("got tag 6 (9 floats)"), std::string::npos);
}

TEST(MessageRules, TheFirstMismatchInReceiveOrderIsReported) {
  const std::vector<ExpectedMessage> expected = {{1, 10, 4}, {1, 11, 4}, {1, 12, 4}};
  const std::array<std::int64_t, 6> in_order = {10, 4, 11, 4, 12, 4};
  EXPECT_EQ(first_envelope_mismatch(expected, in_order), "");
  const std::array<std::int64_t, 6> swapped = {10, 4, 12, 4, 11, 4};
  EXPECT_NE(first_envelope_mismatch(expected, swapped).find("the recv for tag 11 (4 floats) got tag 12"),
            std::string::npos);
  // Only as many as both sides hold are compared.
  EXPECT_EQ(first_envelope_mismatch(expected, std::span(in_order).first(2)), "");
  EXPECT_EQ(first_envelope_mismatch({}, swapped), "");
}

TEST(MessageRules, TheMarkAfterExactlyOneSendGoesOnItsStream) {
  SendsSinceMark sends;
  EXPECT_FALSE(sends.take().has_value());  // no send: the compute stream
  sends.on_send(4);
  EXPECT_EQ(sends.take(), 4);
  EXPECT_FALSE(sends.take().has_value());  // taken: counting starts again
  sends.on_send(4);
  sends.on_send(5);
  EXPECT_FALSE(sends.take().has_value());  // two sends: the compute stream
  // One send and a receive (a ring step inside a pass): the compute stream, and only for that span.
  sends.on_send(4);
  sends.on_receive();
  EXPECT_FALSE(sends.take().has_value());
  sends.on_send(4);
  EXPECT_EQ(sends.take(), 4);
}

TEST(MessageRules, StartupSettingsKeepWhatTheUserSet) {
  ::unsetenv("MPSIM_TEST_UNSET_SETTING");
  ::setenv("MPSIM_TEST_USER_SETTING", "LAZY", 1);
  const std::array<EnvironmentDefault, 2> defaults{{
      {"MPSIM_TEST_UNSET_SETTING", "EAGER"},
      {"MPSIM_TEST_USER_SETTING", "EAGER"},
  }};
  apply_environment_defaults(defaults);
  EXPECT_STREQ(std::getenv("MPSIM_TEST_UNSET_SETTING"), "EAGER");
  EXPECT_STREQ(std::getenv("MPSIM_TEST_USER_SETTING"), "LAZY");
  ::unsetenv("MPSIM_TEST_UNSET_SETTING");
  ::unsetenv("MPSIM_TEST_USER_SETTING");
}

TEST(MessageRules, TheBackendAsksForEagerLoadingAndConnection) {
  std::vector<std::string> names;
  for (const EnvironmentDefault& d : kStartupEnvironment) names.push_back(std::string(d.name) + "=" + d.value);
  EXPECT_EQ(names, (std::vector<std::string>{"CUDA_MODULE_LOADING=EAGER", "NCCL_RUNTIME_CONNECT=0"}));
}

}  // namespace
}  // namespace mpsim::executor::cuda
