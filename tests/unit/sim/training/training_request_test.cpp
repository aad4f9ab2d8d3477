// The run asked for by the flags: token counts with their suffixes, the estimate of the step's numbers
// with the flags' assumptions (the same as estimate_training given them by hand), the errors naming
// the flag, and the report's `training` object carrying every figure.
#include "sim/training/training_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.h"
#include "sim/training/training_json.h"

namespace mpsim::training {
namespace {

TrainingStep step() {
  TrainingStep s;
  s.model_name = "m";
  s.seq_len = 4096;
  s.global_batch = 1024;
  s.step_time = TimeNs::seconds(6.5);
  s.gpus = 1024;
  s.busy_fraction = 0.8;
  s.gpu_tdp = Watts::watts(700.0 * 1024);
  s.checkpoint_bytes = Bytes::gb(980);
  return s;
}

/// The flag an InputError names ("--tokens 15X"), or "no error".
template <class F>
std::string flag_of_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.where().file;
  }
  return "no error";
}

TEST(TrainingRequest, TokenCountSuffixesScaleByPowersOfTen) {
  EXPECT_DOUBLE_EQ(parse_token_count("2.5e12"), 2.5e12);
  EXPECT_DOUBLE_EQ(parse_token_count("15T"), 15e12);
  EXPECT_DOUBLE_EQ(parse_token_count("300B"), 300e9);
  EXPECT_DOUBLE_EQ(parse_token_count("300g"), parse_token_count("300B"));
  EXPECT_DOUBLE_EQ(parse_token_count("7m"), 7e6);
  EXPECT_DOUBLE_EQ(parse_token_count("12K"), 12e3);
  for (const char* bad : {"", "T", "15X", "-3B", "0", "1e400", "15 T", "abc"}) {
    EXPECT_EQ(flag_of_error([&] { (void)parse_token_count(bad); }), std::string("--tokens ") + bad) << bad;
  }
}

TEST(TrainingRequest, NoTokensNoEstimateAndAPriceNeedsThem) {
  EXPECT_FALSE(estimate_request({}, step()).has_value());
  TrainingRequest priced;
  priced.gpu_hour_price = 2;
  EXPECT_EQ(flag_of_error([&] { (void)estimate_request(priced, step()); }), "--gpu-hour-price");
}

TEST(TrainingRequest, EstimateIsTheStepsWithTheFlagsAssumptions) {
  TrainingRequest r;
  r.tokens = "1T";
  r.gpu_hour_price = 2.5;
  r.restart = "1200 s";
  r.checkpoint_bandwidth = "1 GB/s";
  r.gpu_hours_per_interruption = 10000;
  const std::optional<TrainingEstimate> e = estimate_request(r, step());
  ASSERT_TRUE(e.has_value());

  const TrainingStep s = step();
  const TrainingJob job{1e12,      s.global_batch * s.seq_len, s.step_time, s.gpus, s.busy_fraction,
                        s.gpu_tdp, s.checkpoint_bytes};
  TrainingAssumptions a;
  a.gpu_hour_price = 2.5;
  a.restart = TimeNs::seconds(1200);
  a.checkpoint_bandwidth_per_gpu = BytesPerSec::bytes_per_sec(1e9);
  a.gpu_hours_per_interruption = 10000;
  const TrainingEstimate by_hand = estimate_training(job, a);
  EXPECT_EQ(e->steps, by_hand.steps);
  EXPECT_EQ(e->wall_time, by_hand.wall_time);
  EXPECT_EQ(e->checkpoint_write, by_hand.checkpoint_write);
  EXPECT_EQ(e->mtbf, by_hand.mtbf);
  EXPECT_DOUBLE_EQ(e->gpu_hours, by_hand.gpu_hours);
  EXPECT_EQ(e->cost, by_hand.cost);
  EXPECT_EQ(e->energy_joules, by_hand.energy_joules);
}

TEST(TrainingRequest, BadValuesNameTheirFlag) {
  TrainingRequest r;
  r.tokens = "1T";
  r.restart = "soon";
  EXPECT_EQ(flag_of_error([&] { (void)estimate_request(r, step()); }), "--restart-time soon");
  r.restart.clear();
  r.checkpoint_bandwidth = "0 GB/s";
  EXPECT_EQ(flag_of_error([&] { (void)estimate_request(r, step()); }), "--checkpoint-bandwidth 0 GB/s");
  r.checkpoint_bandwidth.clear();
  TrainingStep no_sequence = step();
  no_sequence.seq_len = 0;
  EXPECT_EQ(flag_of_error([&] { (void)estimate_request(r, no_sequence); }), "--tokens 1T");
}

TEST(TrainingJson, CarriesEveryFigureInSeconds) {
  TrainingRequest r;
  r.tokens = "300B";
  const TrainingEstimate e = *estimate_request(r, step());
  const nlohmann::ordered_json j = training_json(e);
  EXPECT_EQ(j.at("tokens").get<double>(), e.tokens);
  EXPECT_EQ(j.at("steps").get<std::int64_t>(), e.steps);
  EXPECT_DOUBLE_EQ(j.at("wall_time_s").get<double>(), e.wall_time.to_seconds());
  EXPECT_DOUBLE_EQ(j.at("compute_s").get<double>(), e.compute.to_seconds());
  EXPECT_DOUBLE_EQ(j.at("mtbf_s").get<double>(), e.mtbf.to_seconds());
  EXPECT_DOUBLE_EQ(j.at("checkpoint_write_s").get<double>(), e.checkpoint_write.to_seconds());
  EXPECT_DOUBLE_EQ(j.at("checkpoint_interval_s").get<double>(), e.checkpoint_interval.to_seconds());
  EXPECT_DOUBLE_EQ(j.at("gpu_hours").get<double>(), e.gpu_hours);
  EXPECT_DOUBLE_EQ(j.at("effective_time_fraction").get<double>(), e.effective_time_fraction);
  EXPECT_DOUBLE_EQ(j.at("expected_interruptions").get<double>(), e.expected_interruptions);
  EXPECT_TRUE(j.at("cost").is_null());  // no price
  ASSERT_TRUE(e.energy_joules.has_value());
  EXPECT_DOUBLE_EQ(j.at("energy_joules").get<double>(), *e.energy_joules);
}

}  // namespace
}  // namespace mpsim::training
