// The numbers a simulated step gives the training estimate: read off the report, the cluster's GPUs,
// the plan's batch and the model's sequence length.
#include "sim/engine/training_step.h"

#include <gtest/gtest.h>

#include "sim/engine/cost_model.h"
#include "sim/engine/simulator.h"
#include "sim/model/model_loader.h"
#include "tests/unit/sim/engine/engine_test_support.h"

namespace mpsim::engine {
namespace {

using testing::h100_node;
using testing::pipeline_plan;
using testing::repo_path;
using testing::timed_layers;

TEST(TrainingStep, ReadsTheStepTheGpusTheBatchAndTheCheckpoint) {
  const topology::Cluster c = h100_node(4);
  const model::Model m = model::load_model_file(repo_path("configs/models/gpt3-1.3b.yaml"));
  const plan::Plan p = pipeline_plan(2, 4, "1f1b", c, m);
  const trace::Report r = simulate(c, m, p).report;
  const training::TrainingStep s = training_step(c, m, p, r);
  EXPECT_EQ(s.model_name, m.name);
  ASSERT_TRUE(m.shape.has_value());
  EXPECT_EQ(s.seq_len, m.shape->seq_len);
  EXPECT_EQ(s.global_batch, p.global_batch);
  EXPECT_EQ(s.step_time, TimeNs::seconds(r.step_time_s));
  EXPECT_EQ(s.gpus, 4);
  EXPECT_DOUBLE_EQ(s.busy_fraction, 1 - r.bubble_fraction);
  const Watts tdp = c.gpu_kind_of(c.gpus().front()).tdp;
  ASSERT_GT(tdp.in_watts(), 0);
  EXPECT_DOUBLE_EQ(s.gpu_tdp.in_watts(), 4 * tdp.in_watts());
  EXPECT_EQ(s.checkpoint_bytes, checkpoint_bytes(m, p));
}

TEST(TrainingStep, ModelWithoutShapeHasNoSequenceLength) {
  const topology::Cluster c = h100_node(2);
  const model::Model m = timed_layers(4, "1 ms", "1 ms", "1 ms");
  const plan::Plan p = pipeline_plan(2, 4, "1f1b", c, m);
  EXPECT_EQ(training_step(c, m, p, simulate(c, m, p).report).seq_len, 0);
}

}  // namespace
}  // namespace mpsim::engine
