// The constraints SageMaker model parallelism v1 (smdistributed.modelparallel) documents for the
// estimator's `distribution`, as a table of rules the export must pass. The library is closed, so each
// rule cites the public page that states it:
//  - the SDK's parameter reference, aws/sagemaker-python-sdk doc/api/training/smd_model_parallel_general.rst
//    (sagemaker.readthedocs.io/en/v2.199.0/api/training/smd_model_parallel_general.html), "Parameters for
//    modelparallel" and "mpi Parameters";
//  - the developer guide, docs.aws.amazon.com/sagemaker/latest/dg/: model-parallel-extended-features-pytorch-
//    optimizer-state-sharding.html and model-parallel-extended-features-pytorch-sharded-data-parallelism.html.
// The exports checked are export_rule_cases.h's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/interop/export/export_rule_cases.h"

namespace mpsim::interop {
namespace {

using testing::ExportCase;
using testing::ResolvedPlan;
using Json = nlohmann::json;

/// The estimator's distribution with what the estimator and the training script add: the ranks
/// (instance_count x processes_per_host), the GPUs of one instance, and the batch the script steps with.
struct SageMakerJob {
  Json distribution;
  std::int64_t world_size = 0;
  std::int64_t gpus_per_instance = 0;
  std::int64_t global_batch = 0;

  [[nodiscard]] Json model_parallel() const {
    return distribution.value("smdistributed", Json::object()).value("modelparallel", Json::object());
  }
  [[nodiscard]] Json parameters() const { return model_parallel().value("parameters", Json::object()); }
  [[nodiscard]] Json mpi() const { return distribution.value("mpi", Json::object()); }
  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t fallback) const {
    return parameters().value(key, fallback);
  }
  /// pipeline_parallel_degree, or partitions (its older name and TensorFlow's); 0 when neither is given.
  [[nodiscard]] std::int64_t pipeline() const { return integer("pipeline_parallel_degree", integer("partitions", 0)); }
  [[nodiscard]] std::int64_t tensor() const { return integer("tensor_parallel_degree", 1); }
  /// The reduced-data-parallel degree: the ranks over the model-parallel group (smp.rdp_size()).
  [[nodiscard]] std::int64_t data() const {
    const std::int64_t model = std::max<std::int64_t>(pipeline(), 1) * tensor();
    return model > 0 ? world_size / model : 0;
  }
  [[nodiscard]] bool ddp() const { return parameters().value("ddp", false); }
};

struct SageMakerRule {
  std::string_view source;
  std::string_view rule;
  bool (*holds)(const SageMakerJob&);
};

constexpr std::string_view kParameterTable = "smd_model_parallel_general.rst, Parameters for modelparallel";
constexpr std::string_view kMpiParameters = "smd_model_parallel_general.rst, mpi Parameters";

const SageMakerRule kSageMakerRules[] = {
    {"smd_model_parallel_general.rst, How to use (\"both smdistributed and MPI must be enabled\")",
     "smdistributed.modelparallel.enabled and mpi.enabled are true",
     [](const SageMakerJob& j) {
       return j.model_parallel().value("enabled", false) && j.mpi().value("enabled", false);
     }},
    {kParameterTable, "pipeline_parallel_degree (PyTorch; partitions in older versions) is given, and at least 1",
     [](const SageMakerJob& j) { return j.pipeline() >= 1; }},
    {kParameterTable,
     "microbatches is at least 1 and divides the batch (each data-parallel replica's: the global "
     "batch over the reduced-data-parallel degree)",
     [](const SageMakerJob& j) {
       const std::int64_t microbatches = j.integer("microbatches", 1);
       return microbatches >= 1 && j.data() > 0 && j.global_batch % j.data() == 0 &&
              (j.global_batch / j.data()) % microbatches == 0;
     }},
    {kParameterTable, "pipeline is \"interleaved\" or \"simple\"",
     [](const SageMakerJob& j) {
       const std::string pipeline = j.parameters().value("pipeline", std::string("interleaved"));
       return pipeline == "interleaved" || pipeline == "simple";
     }},
    {kParameterTable, "optimize is \"memory\" or \"speed\"",
     [](const SageMakerJob& j) {
       const std::string optimize = j.parameters().value("optimize", std::string("memory"));
       return optimize == "memory" || optimize == "speed";
     }},
    {kParameterTable, "placement_strategy is \"cluster\", \"spread\" or a permutation of D, P and T",
     [](const SageMakerJob& j) {
       std::string strategy = j.parameters().value("placement_strategy", std::string("cluster"));
       if (strategy == "cluster" || strategy == "spread") return true;
       std::sort(strategy.begin(), strategy.end());
       return strategy == "DPT";
     }},
    {kParameterTable, "tensor_parallel_degree above 1 needs ddp true",
     [](const SageMakerJob& j) { return j.tensor() == 1 || j.ddp(); }},
    {kParameterTable,
     "hybrid model and data parallelism with PyTorch DDP (a data-parallel degree above 1) needs ddp "
     "true",
     [](const SageMakerJob& j) { return j.data() == 1 || j.ddp(); }},
    {kMpiParameters, "processes_per_host is at most the GPUs of one instance",
     [](const SageMakerJob& j) {
       const std::int64_t per_host = j.mpi().value("processes_per_host", std::int64_t{0});
       return per_host >= 1 && per_host <= j.gpus_per_instance;
     }},
    {"model-parallel-extended-features-pytorch-optimizer-state-sharding.html (the data-parallel degree is "
     "processes_per_host x instance_count / pipeline_parallel_degree), and the SDK's ranking basics with tensor "
     "parallelism",
     "the ranks are a multiple of pipeline_parallel_degree x tensor_parallel_degree",
     [](const SageMakerJob& j) {
       return j.pipeline() >= 1 && j.tensor() >= 1 && j.world_size % (j.pipeline() * j.tensor()) == 0;
     }},
    {"model-parallel-extended-features-pytorch-sharded-data-parallelism.html (the sharding degree is at most the "
     "data-parallel degree; its sharding groups split the data-parallel ranks)",
     "sharded_data_parallel_degree divides the data-parallel degree",
     [](const SageMakerJob& j) {
       const std::int64_t sharded = j.integer("sharded_data_parallel_degree", 1);
       return sharded >= 1 && j.data() >= 1 && j.data() % sharded == 0;
     }},
};

std::vector<std::string_view> sagemaker_failed_rules(const SageMakerJob& job) {
  return testing::failed_rules(kSageMakerRules, job);
}

class SageMakerRules : public ::testing::TestWithParam<ExportCase> {};

TEST_P(SageMakerRules, SageMakerAcceptsTheDistribution) {
  const ResolvedPlan r = testing::resolve(GetParam());
  const std::optional<std::string> json =
      testing::export_or_refusal(r, Framework::SageMaker, GetParam().sagemaker_refuses);
  if (!json) return;
  const auto instance_gpus =
      static_cast<std::int64_t>(ResolvedPlan::job_cluster(GetParam().topology, 0).gpus_of_node(0).size());
  const SageMakerJob job{Json::parse(*json), r.plan.gpus(), instance_gpus, r.plan.global_batch};
  testing::expect_every_rule_holds(kSageMakerRules, job, *json);
}

INSTANTIATE_TEST_SUITE_P(Exports, SageMakerRules, ::testing::ValuesIn(testing::kExportCases),
                         [](const ::testing::TestParamInfo<ExportCase>& info) { return info.param.name; });

// The rules can fail: distributions with the mistakes they describe fail the rules they break.
TEST(SageMakerRuleTable, CatchesBrokenDistributions) {
  // Tensor and data parallelism without ddp, a batch of 30 per replica over 4 microbatches, 16 processes
  // on an 8-GPU instance.
  const SageMakerJob no_ddp{Json::parse(R"({"smdistributed": {"modelparallel": {"enabled": true, "parameters": {
      "pipeline_parallel_degree": 2, "tensor_parallel_degree": 2, "microbatches": 4}}},
      "mpi": {"enabled": true, "processes_per_host": 16}})"),
                            16, 8, 120};
  EXPECT_EQ(sagemaker_failed_rules(no_ddp),
            (std::vector<std::string_view>{kSageMakerRules[2].rule, kSageMakerRules[6].rule, kSageMakerRules[7].rule,
                                           kSageMakerRules[8].rule}));
  // No pipeline degree, Megatron's schedule name, a placement that is no permutation, and a sharding
  // degree that does not divide the 8 data-parallel ranks.
  const SageMakerJob unknown{Json::parse(R"({"smdistributed": {"modelparallel": {"enabled": true, "parameters": {
      "pipeline": "1f1b", "placement_strategy": "DDT", "ddp": true, "sharded_data_parallel_degree": 3}}},
      "mpi": {"enabled": true, "processes_per_host": 8}})"),
                             8, 8, 64};
  EXPECT_EQ(sagemaker_failed_rules(unknown),
            (std::vector<std::string_view>{kSageMakerRules[1].rule, kSageMakerRules[3].rule, kSageMakerRules[5].rule,
                                           kSageMakerRules[9].rule, kSageMakerRules[10].rule}));
}

}  // namespace
}  // namespace mpsim::interop
