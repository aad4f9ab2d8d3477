// Runs files: a throughput figure is the step time it implies, and every malformed file is an
// InputError that names the file and the field.
#include "sim/calibration/measured_run.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration_test_support.h"
#include "sim/calibration/calibrate.h"

namespace mpsim::calibration {
namespace {

using testing::gpt3_13b_row;
using testing::kRunsFileName;
using testing::runs_file_error;
using testing::runs_from;

TEST(MeasuredRuns, ARowReadsItsClusterModelPlanAndFigure) {
  const auto runs = runs_from(gpt3_13b_row("p4d", "{step_time_s: 12.5, peak_memory_gib: 30}"));
  ASSERT_EQ(runs.size(), 1u);
  const MeasuredRun& run = runs.front();
  EXPECT_EQ(run.id, "p4d");
  EXPECT_EQ(run.file, kRunsFileName);
  EXPECT_EQ(run.cluster.gpus().size(), 32u);
  EXPECT_EQ(run.gpu_kind(), "a100-40gb");
  EXPECT_EQ(run.plan.gpus(), 32);
  EXPECT_EQ(run.figure, FigureKind::StepTime);
  EXPECT_DOUBLE_EQ(run.measured, 12.5);
  ASSERT_TRUE(run.measured_peak_gib.has_value());
  EXPECT_DOUBLE_EQ(*run.measured_peak_gib, 30);
  EXPECT_EQ(run.peak_kind, PeakKind::Reserved);  // unless the row names it
  EXPECT_EQ(runs_from(gpt3_13b_row("p4d", "{peak_memory_gib: 30, kind: allocated}")).front().peak_kind,
            PeakKind::Allocated);
}

TEST(MeasuredRuns, APeakNamesThePipelineStageItWasLoggedOn) {
  // The GPT-3 13B plan runs two pipeline stages.
  const auto stage_of = [](const std::string& stage) {
    return runs_from(gpt3_13b_row("p4d", "{peak_memory_gib: 30, stage: " + stage + "}")).front().peak_stage;
  };
  EXPECT_EQ(stage_of("first"), 0);
  EXPECT_EQ(stage_of("last"), 1);
  EXPECT_EQ(stage_of("1"), 1);
  EXPECT_FALSE(runs_from(gpt3_13b_row("p4d", "{peak_memory_gib: 30}")).front().peak_stage.has_value());
}

TEST(MeasuredRuns, RowsUnderRowsAndPublishedReadAsAList) {
  const auto runs = runs_from("rows:\n" + gpt3_13b_row("a", "{step_time_s: 10}") +
                              "- id: b\n  topology: 4x-p4d.yaml\n  gpus: 32\n  model: configs/models/gpt3-13b.yaml\n"
                              "  plan: configs/plans/gpt3-13b-4x-p4d.yaml\n  published: {step_time_s: 11}\n");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].id, "b");
  EXPECT_DOUBLE_EQ(runs[1].measured, 11);
}

TEST(MeasuredRuns, TokensPerSecondPerGpuIsTheStepItImplies) {
  // GPT-3 13B, the plan's global batch 256 of 2048 tokens on 32 GPUs, at a 10 s step:
  // 256 x 2048 / 10 / 32 = 1638.4 tokens/s per GPU.
  const double step_s = 10;
  const double tokens_per_s_per_gpu = 256.0 * 2048.0 / step_s / 32.0;
  const auto runs = runs_from(gpt3_13b_row("step", "{step_time_s: 10}") +
                              gpt3_13b_row("tokens", "{tokens_per_s_per_gpu: " + std::to_string(tokens_per_s_per_gpu) + "}"));
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(runs[1].plan.global_batch, 256);
  ASSERT_EQ(runs[1].figure, FigureKind::TokensPerSecPerGpu);
  const trace::Report prediction = predict(runs[1], {});
  ASSERT_GT(prediction.step_time_s, 0);
  ASSERT_GT(std::abs(prediction.step_time_s - step_s), 0.01);  // the conversion does not just echo the prediction
  EXPECT_NEAR(runs[1].measured_step_s(prediction), step_s, 1e-9 * step_s);
  EXPECT_DOUBLE_EQ(runs[0].measured_step_s(prediction), step_s);
  // And back: the prediction's own figure in tokens/s per GPU.
  EXPECT_NEAR(runs[1].predicted_figure(prediction), 256.0 * 2048.0 / prediction.step_time_s / 32.0, 1e-9);
}

TEST(MeasuredRuns, ModelTflopsPerGpuIsTheStepItImplies) {
  // A step's model FLOPs are fixed by the model and the batch: the figure x the step is the same at
  // any step. The prediction's figure at its own step says what 10 s would give.
  const MeasuredRun probe = runs_from(gpt3_13b_row("probe", "{step_time_s: 10}")).front();
  const trace::Report prediction = predict(probe, {});
  ASSERT_GT(prediction.tflops_per_gpu, 0);
  const double at_10_s = prediction.tflops_per_gpu * prediction.step_time_s / 10;
  const MeasuredRun run = runs_from(gpt3_13b_row("tflops", "{model_tflops_per_gpu: " + std::to_string(at_10_s) + "}")).front();
  ASSERT_EQ(run.figure, FigureKind::ModelTflopsPerGpu);
  EXPECT_NEAR(run.measured_step_s(prediction), 10, 1e-5);  // std::to_string keeps 6 decimals
  EXPECT_DOUBLE_EQ(run.predicted_figure(prediction), prediction.tflops_per_gpu);
}

/// `message` names the runs file and the field path (" (field 'PATH')").
void expect_names_file_and_field(const std::string& message, const std::string& field) {
  EXPECT_NE(message.find(kRunsFileName), std::string::npos) << message;
  EXPECT_NE(message.find("(field '" + field + "')"), std::string::npos) << message;
}

TEST(RunsFileErrors, AnUnknownKeyInARow) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10}") + "  measuredd: {step_time_s: 10}\n");
  expect_names_file_and_field(e, "[0].measuredd");
}

TEST(RunsFileErrors, BothMeasuredAndPublished) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10}") + "  published: {step_time_s: 10}\n");
  expect_names_file_and_field(e, "[0]");
  EXPECT_NE(e.find("both 'measured' and 'published'"), std::string::npos) << e;
}

TEST(RunsFileErrors, NoFigure) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{}"));
  expect_names_file_and_field(e, "[0].measured");
  EXPECT_NE(e.find("needs one of step_time_s"), std::string::npos) << e;
}

TEST(RunsFileErrors, AMisspeltFigure) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time: 10}"));
  expect_names_file_and_field(e, "[0].measured.step_time");
  EXPECT_NE(e.find("did you mean 'step_time_s'"), std::string::npos) << e;
}

TEST(RunsFileErrors, TwoFigures) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10, tokens_per_s_per_gpu: 1000}"));
  expect_names_file_and_field(e, "[0].measured");
  EXPECT_NE(e.find("more than one"), std::string::npos) << e;
}

TEST(RunsFileErrors, APeakOfAnUnknownKind) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{peak_memory_gib: 30, kind: cached}"));
  expect_names_file_and_field(e, "[0].measured.kind");
  EXPECT_NE(e.find("'cached' is not a kind of peak (allocated or reserved)"), std::string::npos) << e;
}

TEST(RunsFileErrors, AStageThePipelineDoesNotHave) {
  std::string e = runs_file_error(gpt3_13b_row("a", "{peak_memory_gib: 30, stage: 2}"));
  expect_names_file_and_field(e, "[0].measured.stage");
  e = runs_file_error(gpt3_13b_row("a", "{peak_memory_gib: 30, stage: middle}"));
  expect_names_file_and_field(e, "[0].measured.stage");
  EXPECT_NE(e.find("'middle' is not a pipeline stage (first, last or an index from 0)"), std::string::npos) << e;
  e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10, stage: last}"));
  expect_names_file_and_field(e, "[0].measured.stage");
  EXPECT_NE(e.find("peak_memory_gib, which is not given"), std::string::npos) << e;
}

TEST(RunsFileErrors, AKindWithoutAPeak) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10, kind: allocated}"));
  expect_names_file_and_field(e, "[0].measured.kind");
  EXPECT_NE(e.find("peak_memory_gib, which is not given"), std::string::npos) << e;
}

/// A row on AMP's cluster of V100 and T4 nodes (two node groups), with `gpus` GPUs.
std::string mixed_row(int gpus) {
  return "- id: amp\n  topology: amp-p3-g4-mixed.yaml\n  gpus: " + std::to_string(gpus) +
         "\n  model: configs/models/gpt2-medium-amp.yaml\n  plan: configs/plans/amp-gpt2-het-best.yaml\n"
         "  measured: {step_time_s: 1.28}\n";
}

TEST(MeasuredRuns, ATopologyOfSeveralNodeGroupsIsTakenWhole) {
  const MeasuredRun run = runs_from(mixed_row(16)).front();
  EXPECT_EQ(run.cluster.gpus().size(), 16u);
  EXPECT_EQ(run.gpu_kinds(), (std::vector<std::string>{"t4-16gb", "v100-16gb"}));
  EXPECT_EQ(run.gpu_kind(), "v100-16gb");  // the first GPU's: the T4 node is last
  const std::string e = runs_file_error(mixed_row(8));
  expect_names_file_and_field(e, "[0].gpus");
  EXPECT_NE(e.find("node groups are taken whole: gpus must be its 16 GPUs"), std::string::npos) << e;
}

TEST(MeasuredRuns, ATopologySetOfTheGpuOfAnIncludedNodeSetsItsKind) {
  // 4x-p4d.yaml takes its node from p4d.24xlarge.yaml (node_from), whose GPUs name a built-in kind by
  // id: the override reaches that kind's copy in the included file, as simulate's --set does.
  const auto capacity_gib = [](const MeasuredRun& run) {
    return static_cast<double>(run.cluster.gpu_kind_of(run.cluster.gpus().front()).memory.count()) / (1 << 30);
  };
  EXPECT_DOUBLE_EQ(capacity_gib(runs_from(gpt3_13b_row("p4d", "{step_time_s: 1}")).front()), 40);
  const MeasuredRun wider = runs_from(gpt3_13b_row("p4de", "{step_time_s: 1}", "4x-p4d.yaml",
                                                   "  topology_set: {node.gpu.memory: \"80 GiB\"}\n"))
                                .front();
  EXPECT_DOUBLE_EQ(capacity_gib(wider), 80);
  EXPECT_EQ(wider.cluster.gpu_kinds().size(), 1u);  // every GPU of the four nodes
  const std::string e = runs_file_error(gpt3_13b_row("p4d", "{step_time_s: 1}", "4x-p4d.yaml",
                                                     "  topology_set: {node.gpu.memory: \"lots\"}\n"));
  expect_names_file_and_field(e, "[0].topology_set.node.gpu.memory");
  EXPECT_NE(e.find("'lots' is not a size"), std::string::npos) << e;
}

TEST(RunsFileErrors, AMissingTopologyFile) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10}", "no-such-cluster.yaml"));
  expect_names_file_and_field(e, "[0].topology");
  EXPECT_NE(e.find("no-such-cluster.yaml"), std::string::npos) << e;
}

TEST(RunsFileErrors, AMissingModelOrPlanFile) {
  const std::string model = runs_file_error(
      "- id: a\n  topology: 4x-p4d.yaml\n  gpus: 32\n  model: configs/models/no-such-model.yaml\n"
      "  plan: configs/plans/gpt3-13b-4x-p4d.yaml\n  measured: {step_time_s: 10}\n");
  expect_names_file_and_field(model, "[0].model");
  EXPECT_NE(model.find("no-such-model.yaml"), std::string::npos) << model;
  const std::string plan = runs_file_error(
      "- id: a\n  topology: 4x-p4d.yaml\n  gpus: 32\n  model: configs/models/gpt3-13b.yaml\n"
      "  plan: configs/plans/no-such-plan.yaml\n  measured: {step_time_s: 10}\n");
  expect_names_file_and_field(plan, "[0].plan");
}

TEST(RunsFileErrors, AnErrorInASharedPlanFileNamesTheRun) {
  // Both rows use the shipped 32-GPU plan; the second runs on 16 GPUs. The error is in the plan file,
  // and it says which run (and which line of the runs file) it was read for.
  const std::string second = gpt3_13b_row("on-16-gpus", "{step_time_s: 10}");
  const std::string e = runs_file_error(gpt3_13b_row("on-32-gpus", "{step_time_s: 10}") +
                                        std::string(second).replace(second.find("gpus: 32"), 8, "gpus: 16"));
  EXPECT_NE(e.find("gpt3-13b-4x-p4d.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("run 'on-16-gpus', " + std::string(kRunsFileName) + ":7)"), std::string::npos) << e;
}

TEST(RunsFileErrors, TokensPerSecondOfAModelWithoutTokens) {
  // A hand-listed model (the MNIST network) has no sequence length: tokens per second say nothing
  // about its step.
  const std::string mnist =
      "- id: mnist\n  topology: dgx-a100.yaml\n  gpus: 1\n  model: configs/models/mnist-cnn.yaml\n"
      "  plan: {parallelism: {tensor: 1, pipeline: 1, data: 1}, batch: {global: 64, micro: 64}, schedule: 1f1b}\n";
  const std::string e = runs_file_error(mnist + "  measured: {tokens_per_s_per_gpu: 1000}\n");
  expect_names_file_and_field(e, "[0].measured.tokens_per_s_per_gpu");
  EXPECT_NE(e.find("seq_len"), std::string::npos) << e;
  EXPECT_EQ(runs_file_error(mnist + "  measured: {step_time_s: 0.01}\n"), "<no error>");
}

TEST(RunsFileErrors, ANegativeStepTime) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: -3}"));
  expect_names_file_and_field(e, "[0].measured.step_time_s");
}

TEST(RunsFileErrors, TheSecondRowIsNamedByItsIndex) {
  const std::string e = runs_file_error(gpt3_13b_row("a", "{step_time_s: 10}") + gpt3_13b_row("b", "{step_time_s: 0}"));
  expect_names_file_and_field(e, "[1].measured.step_time_s");
}

TEST(RunsFileErrors, AnEmptyList) {
  const std::string e = runs_file_error("[]\n");
  EXPECT_NE(e.find(kRunsFileName), std::string::npos) << e;
  EXPECT_NE(e.find("holds no runs"), std::string::npos) << e;
  const std::string under_rows = runs_file_error("rows: []\n");
  expect_names_file_and_field(under_rows, "rows");
}

TEST(RunsFileErrors, AScalarTopLevel) {
  const std::string e = runs_file_error("just a sentence\n");
  EXPECT_NE(e.find(kRunsFileName), std::string::npos) << e;
  EXPECT_NE(e.find("a runs file is a list"), std::string::npos) << e;
  EXPECT_NE(runs_file_error("").find("empty"), std::string::npos);
}

TEST(RunsFileErrors, AnUnknownTopLevelKey) {
  const std::string e = runs_file_error("runs:\n" + gpt3_13b_row("a", "{step_time_s: 10}"));
  expect_names_file_and_field(e, "runs");
}

}  // namespace
}  // namespace mpsim::calibration
