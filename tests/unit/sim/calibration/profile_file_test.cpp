// Profile files: what write_profile_yaml writes, load_profile reads back (6 significant digits), the
// same bytes every time; every malformed profile is an InputError at its field.
#include "sim/calibration/profile_file.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "sim/core/input_error.h"
#include "sim/core/yaml_field.h"

namespace mpsim::calibration {
namespace {

constexpr const char* kProfileFileName = "inline-profile.yaml";

SoftwareProfile profile_from(const std::string& yaml) {
  return load_profile(YamlDocument::parse(yaml, kProfileFileName).root());
}

std::string profile_error(const std::string& yaml) {
  try {
    (void)profile_from(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

/// Values with more digits than the file keeps.
SoftwareProfile detailed_profile() {
  SoftwareProfile p;
  p.name = "megatron-core 0.9 tuned";
  p.factors = {{FactorKind::Gemm, 0.812345678},
               {FactorKind::NetworkTransfers, 1.1234567891},
               {FactorKind::Attention, 0.5},
               {FactorKind::ActivationMemory, 1.0876543}};
  p.gpu_kinds = {"a100-40gb", "h100-sxm"};
  p.residuals = {{"gpt3-13b-p4d", 12.3456789, 12.3401234, 10.9876543},
                 {"logs/run-7/step.log", 0.000123456789, 0.000123399, 0.0001}};
  p.peak_residuals = {{"llama-70b", PeakKind::Allocated, 54.7623456, 55.1234567, 50.9876543, 3},
                      {"llama-8b", PeakKind::Reserved, 83.9, 83.91234567, 78.8712345, std::nullopt}};
  return p;
}

/// Within the 6 significant digits the file keeps.
void expect_six_digits(double read, double written) { EXPECT_NEAR(read, written, 5e-6 * std::abs(written)); }

TEST(ProfileFile, WhatIsWrittenReadsBack) {
  const SoftwareProfile written = detailed_profile();
  const SoftwareProfile read = profile_from(write_profile_yaml(written));
  EXPECT_EQ(read.name, written.name);
  EXPECT_EQ(read.gpu_kinds, written.gpu_kinds);
  ASSERT_EQ(read.factors.size(), written.factors.size());
  for (std::size_t i = 0; i < written.factors.size(); ++i) {
    EXPECT_EQ(read.factors[i].kind, written.factors[i].kind);
    expect_six_digits(read.factors[i].value, written.factors[i].value);
  }
  ASSERT_EQ(read.residuals.size(), written.residuals.size());
  for (std::size_t i = 0; i < written.residuals.size(); ++i) {
    EXPECT_EQ(read.residuals[i].run, written.residuals[i].run);
    expect_six_digits(read.residuals[i].measured_step_s, written.residuals[i].measured_step_s);
    expect_six_digits(read.residuals[i].predicted_step_s, written.residuals[i].predicted_step_s);
    expect_six_digits(read.residuals[i].uncalibrated_step_s, written.residuals[i].uncalibrated_step_s);
  }
  ASSERT_EQ(read.peak_residuals.size(), written.peak_residuals.size());
  for (std::size_t i = 0; i < written.peak_residuals.size(); ++i) {
    EXPECT_EQ(read.peak_residuals[i].run, written.peak_residuals[i].run);
    EXPECT_EQ(read.peak_residuals[i].kind, written.peak_residuals[i].kind);
    EXPECT_EQ(read.peak_residuals[i].stage, written.peak_residuals[i].stage);
    expect_six_digits(read.peak_residuals[i].measured_gib, written.peak_residuals[i].measured_gib);
    expect_six_digits(read.peak_residuals[i].predicted_gib, written.peak_residuals[i].predicted_gib);
    expect_six_digits(read.peak_residuals[i].uncalibrated_gib, written.peak_residuals[i].uncalibrated_gib);
  }
}

TEST(ProfileFile, WritingIsDeterministicAndStableUnderARoundTrip) {
  const SoftwareProfile p = detailed_profile();
  const std::string once = write_profile_yaml(p);
  EXPECT_EQ(write_profile_yaml(p), once);
  // Read back, the values are already at 6 digits: writing them again gives the same bytes.
  EXPECT_EQ(write_profile_yaml(profile_from(once)), once);
}

TEST(ProfileFile, NamesThatNeedQuotingReadBack) {
  // Run ids are what the runs files say and, with --measured, the log's path; the name is --name's.
  SoftwareProfile p;
  p.name = "stack \"b\" \\ 2";
  p.factors = {{FactorKind::Gemm, 0.9}};
  p.gpu_kinds = {"custom gpu, rev [2]", "h100-sxm"};
  p.residuals = {{"C:\\logs\\run 7: \"bf16\".log", 10, 10.01, 9}, {"tab\there #not a comment", 1, 1, 1}};
  const SoftwareProfile read = profile_from(write_profile_yaml(p));
  EXPECT_EQ(read.name, p.name);
  EXPECT_EQ(read.gpu_kinds, p.gpu_kinds);
  ASSERT_EQ(read.residuals.size(), 2u);
  EXPECT_EQ(read.residuals[0].run, p.residuals[0].run);
  EXPECT_EQ(read.residuals[1].run, p.residuals[1].run);
}

TEST(ProfileFile, AnEmptyProfileReadsBack) {
  SoftwareProfile p;
  p.name = "nothing";
  const SoftwareProfile read = profile_from(write_profile_yaml(p));
  EXPECT_EQ(read.name, "nothing");
  EXPECT_TRUE(read.factors.empty());
  EXPECT_TRUE(read.gpu_kinds.empty());
  EXPECT_TRUE(read.residuals.empty());
}

/// `message` names the profile file and the field path.
void expect_profile_error_at(const std::string& message, const std::string& field) {
  EXPECT_NE(message.find(kProfileFileName), std::string::npos) << message;
  EXPECT_NE(message.find("(field '" + field + "')"), std::string::npos) << message;
}

TEST(ProfileFileErrors, AnUnknownFactorSuggestsTheNearestName) {
  const std::string e = profile_error("profile:\n  factors:\n    gem: 0.9\n");
  expect_profile_error_at(e, "profile.factors.gem");
  EXPECT_NE(e.find("did you mean 'gemm'"), std::string::npos) << e;
  EXPECT_NE(e.find("network_transfers"), std::string::npos) << e;  // the known names are listed
}

TEST(ProfileFileErrors, APeakRunOfAnUnknownKind) {
  const std::string error = profile_error(
      "profile:\n  factors: {activation_memory: 1.1}\n  peak_runs:\n"
      "    - {id: a, kind: cached, measured_gib: 50, predicted_gib: 50, uncalibrated_gib: 45}\n");
  EXPECT_NE(error.find("inline-profile.yaml:4"), std::string::npos) << error;
  EXPECT_NE(error.find("'cached' is not a kind of peak"), std::string::npos) << error;
}

TEST(ProfileFileErrors, AFactorOutOfRange) {
  for (const char* value : {"0", "20", "-0.5"}) {
    SCOPED_TRACE(value);
    expect_profile_error_at(profile_error(std::string("profile:\n  factors:\n    gemm: ") + value + "\n"),
                            "profile.factors.gemm");
  }
  EXPECT_EQ(profile_error("profile:\n  factors:\n    gemm: 9.5\n"), "<no error>");
}

TEST(ProfileFileErrors, AFactorGivenTwice) {
  // Applied, the second value would multiply the first: a profile holds one value per factor.
  const std::string e = profile_error("profile:\n  factors:\n    gemm: 0.9\n    gemm: 0.8\n");
  expect_profile_error_at(e, "profile.factors.gemm");
  EXPECT_NE(e.find("given twice"), std::string::npos) << e;
}

TEST(ProfileFileErrors, NoFactors) {
  expect_profile_error_at(profile_error("profile:\n  name: x\n"), "profile.factors");
  expect_profile_error_at(profile_error("profile:\n  factors: [gemm]\n"), "profile.factors");
}

TEST(ProfileFileErrors, AnUnknownTopLevelKey) {
  expect_profile_error_at(profile_error("profile:\n  factors: {gemm: 0.9}\nextra: 1\n"), "extra");
  expect_profile_error_at(profile_error("profile:\n  factors: {gemm: 0.9}\n  fitted: yes\n"), "profile.fitted");
}

/// Shared factors and two GPU kinds' own, with the runs that set the per-kind ones.
SoftwareProfile per_kind_profile() {
  SoftwareProfile p;
  p.name = "amp";
  p.gpu_kinds = {"t4-16gb", "v100-16gb"};
  p.factors = {{FactorKind::NetworkTransfers, 0.4123456789},
               {FactorKind::Gemm, 1.123456789, "t4-16gb"},
               {FactorKind::MemoryBound, 0.7, "t4-16gb"},
               {FactorKind::Gemm, 0.3987654321, "v100-16gb"}};
  p.set_by = {{FactorKind::Gemm, "t4-16gb", {"trial 1", "trial 2"}}, {FactorKind::Gemm, "v100-16gb", {"trial 2"}}};
  p.residuals = {{"trial 1", 1.28, 1.2801, 0.688}, {"trial 2", 1.52, 1.519, 1.025}};
  return p;
}

TEST(ProfileFilePerKind, WhatIsWrittenReadsBackInTheSameOrder) {
  const SoftwareProfile written = per_kind_profile();
  const std::string text = write_profile_yaml(written);
  EXPECT_NE(text.find("per_kind:"), std::string::npos) << text;
  const SoftwareProfile read = profile_from(text);
  ASSERT_EQ(read.factors.size(), written.factors.size());
  for (std::size_t i = 0; i < written.factors.size(); ++i) {
    EXPECT_EQ(read.factors[i].kind, written.factors[i].kind);
    EXPECT_EQ(read.factors[i].gpu_kind, written.factors[i].gpu_kind);
    expect_six_digits(read.factors[i].value, written.factors[i].value);
  }
  EXPECT_EQ(read.set_by, written.set_by);
  EXPECT_EQ(write_profile_yaml(read), text);
  EXPECT_DOUBLE_EQ(read.factor_on(FactorKind::Gemm, "t4-16gb"), 1.12346);
  EXPECT_DOUBLE_EQ(read.factor(FactorKind::Gemm), 1.0);
}

TEST(ProfileFilePerKind, AProfileWithoutPerKindFactorsIsWrittenAsBefore) {
  const std::string text = write_profile_yaml(detailed_profile());
  EXPECT_EQ(text.find("per_kind"), std::string::npos);
  EXPECT_EQ(text.find("set_by"), std::string::npos);
}

TEST(ProfileFilePerKind, PerKindAloneNeedsNoSharedFactorsAndAnAliasReadsAsItsId) {
  const SoftwareProfile p = profile_from("profile:\n  per_kind:\n    t4: {gemm: 1.2}\n");
  ASSERT_EQ(p.factors.size(), 1u);
  EXPECT_EQ(p.factors.front().gpu_kind, "t4-16gb");
  EXPECT_EQ(p.factors.front().kind, FactorKind::Gemm);
  EXPECT_DOUBLE_EQ(p.factors.front().value, 1.2);
  // Shared and per kind together; the kind's own is the one it runs at.
  const SoftwareProfile both = profile_from("profile:\n  factors: {gemm: 0.5}\n  per_kind:\n    v100-16gb:\n      gemm: 0.4\n");
  EXPECT_DOUBLE_EQ(both.factor_on(FactorKind::Gemm, "v100-16gb"), 0.4);
  EXPECT_DOUBLE_EQ(both.factor_on(FactorKind::Gemm, "t4-16gb"), 0.5);
}

TEST(ProfileFilePerKindErrors, AnUnknownGpuKindSuggestsTheNearest) {
  const std::string e = profile_error("profile:\n  factors: {}\n  per_kind:\n    t4-16g: {gemm: 1.2}\n");
  expect_profile_error_at(e, "profile.per_kind.t4-16g");
  EXPECT_NE(e.find("inline-profile.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown GPU kind 't4-16g'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 't4-16gb'"), std::string::npos) << e;
}

TEST(ProfileFilePerKindErrors, ALinkFactorIsShared) {
  const std::string e = profile_error("profile:\n  per_kind:\n    t4-16gb: {network_transfers: 0.5}\n");
  expect_profile_error_at(e, "profile.per_kind.t4-16gb.network_transfers");
  EXPECT_NE(e.find("shared by every GPU kind"), std::string::npos) << e;
  const std::string every_rate = profile_error("profile:\n  per_kind:\n    t4-16gb: {all_rates: 0.5}\n");
  expect_profile_error_at(every_rate, "profile.per_kind.t4-16gb.all_rates");
  EXPECT_NE(every_rate.find("scales the links too"), std::string::npos) << every_rate;
}

TEST(ProfileFilePerKindErrors, BadValuesAndShapes) {
  expect_profile_error_at(profile_error("profile:\n  per_kind:\n    t4-16gb: {gemm: 0}\n"), "profile.per_kind.t4-16gb.gemm");
  expect_profile_error_at(profile_error("profile:\n  per_kind:\n    t4-16gb: {gemm: fast}\n"),
                          "profile.per_kind.t4-16gb.gemm");
  const std::string unknown = profile_error("profile:\n  per_kind:\n    t4-16gb: {gem: 1}\n");
  expect_profile_error_at(unknown, "profile.per_kind.t4-16gb.gem");
  EXPECT_NE(unknown.find("did you mean 'gemm'"), std::string::npos) << unknown;
  expect_profile_error_at(profile_error("profile:\n  per_kind: [t4-16gb]\n"), "profile.per_kind");
  expect_profile_error_at(profile_error("profile:\n  per_kind:\n    t4-16gb: [gemm]\n"), "profile.per_kind.t4-16gb");
  // One kind under its id and an alias of it.
  const std::string twice = profile_error("profile:\n  per_kind:\n    t4-16gb: {gemm: 1}\n    t4: {gemm: 2}\n");
  expect_profile_error_at(twice, "profile.per_kind.t4");
  EXPECT_NE(twice.find("given twice"), std::string::npos) << twice;
}

TEST(ProfileFilePerKindErrors, SetByNamesAFactorOfTheProfile) {
  const std::string e = profile_error(
      "profile:\n  per_kind:\n    t4-16gb: {gemm: 1}\n  set_by:\n    - {factor: gemm, gpu_kind: v100-16gb, runs: [a]}\n");
  expect_profile_error_at(e, "profile.set_by[0].factor");
  EXPECT_NE(e.find("not among the profile's factors"), std::string::npos) << e;
}

}  // namespace
}  // namespace mpsim::calibration
