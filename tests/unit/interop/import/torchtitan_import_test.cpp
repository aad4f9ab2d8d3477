// TorchTitan job TOMLs into plans: every setting the export writes comes back, a schedule run from a
// CSV comes back as the mpsim schedule that generates its order, and what mpsim cannot read is an
// error at the key's line.
#include <gtest/gtest.h>

#include <string>

#include "interop/formats/torch_csv.h"
#include "interop/import/torchtitan_import.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/core/yaml_field.h"
#include "sim/schedule/generators.h"
#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;
using testing::kDgxH100;
using testing::kLlama8b;
using testing::spec_from;

plan::PlanSpec titan_imported_spec(const ImportedLaunch& imported) {
  return plan::load_plan_spec(YamlDocument::parse(imported.plan_yaml, "imported.yaml").root());
}

/// A CSV reader over one file held in memory, as "job.csv".
ScheduleCsvReader csv_in_memory(std::string text) {
  return [text = std::move(text)](const std::string& written) {
    if (written != "job.csv") throw InputError({written, 0, 0}, "", "no such file");
    return ScheduleCsvFile{"job.csv", text};
  };
}

struct Exported {
  std::string toml;
  std::string csv;
};

Exported export_torchtitan(const ResolvedPlan& original) {
  const bool with_csv = torchtitan_runs_from_csv(original.plan);
  return {original.exported(Framework::TorchTitan, with_csv ? "job.csv" : ""),
          with_csv ? torchtitan_schedule_csv(original.plan) : ""};
}

ImportedLaunch import_exported(const ResolvedPlan& original, const Exported& exported) {
  return import_torchtitan(exported.toml, "job.toml", {std::nullopt, &original.model, csv_in_memory(exported.csv)});
}

/// The error import_torchtitan throws for `toml`: "field @ line: message", or "<no error>".
std::string titan_import_error(const std::string& toml, std::optional<int> gpus = std::nullopt,
                         const model::Model* model = nullptr, const std::string& csv = "") {
  try {
    (void)import_torchtitan(toml, "job.toml", {gpus, model, csv_in_memory(csv)});
  } catch (const InputError& e) {
    return e.field() + " @ " + e.where().file + ":" + std::to_string(e.where().line) + ": " + e.message();
  }
  return "<no error>";
}

// Every setting the TorchTitan export writes comes back: the same plan on the same cluster and model.
TEST(TorchTitanRoundTrip, EverySettingComesBack) {
  struct Case {
    const char* plan;
    const char* model = kLlama8b;
    const char* topology = kDgxH100;
  };
  const Case cases[] = {
      {"{}\n"},
      {"zero: 3\nshard_groups: 2\n"},
      {"zero: 2\n"},
      {"parallelism: { tensor: 2 }\nsequence_parallel: true\noverlap: { tensor_comm: true }\nrecompute: full\n"},
      {"precision: fp8\nfp8_param_gather: true\nzero: 3\n"},
      {"precision: fp8\nzero: 0\n"},
      {"precision: mxfp8\nzero: 2\n", kLlama8b, "topologies/dgx-b200.yaml"},
      {"parallelism: { context: 2 }\n"},
      {"parallelism: { context: 2 }\ncp_comm_type: all_gather\nzero: 3\n"},
      {"parallelism: { tensor: 2, expert: 4, expert_tensor: 1 }\nsequence_parallel: true\nzero: 3\n",
       "configs/models/mixtral-8x7b.yaml"},
      {"parallelism: { pipeline: 4 }\nschedule: 1f1b\nbatch: { global: 64, micro: 2 }\n"},
      {"parallelism: { pipeline: 2 }\nschedule: gpipe\nbatch: { global: 32 }\nzero: 1\n"},
      {"parallelism: { pipeline: 2, virtual_stages: 4 }\nbatch: { global: 64 }\n"},
      {"parallelism: { pipeline: 2 }\nschedule: zb-v\nbatch: { global: 64 }\nzero: 1\nshard_groups: 2\n"},
      {"parallelism: { pipeline: 2 }\nschedule: dualpipev\nbatch: { global: 64 }\n"},
      // Run from a schedule CSV: each comes back as the schedule that generates the CSV's order.
      {"parallelism: { pipeline: 4 }\nschedule: zb-h1\nbatch: { global: 32 }\n"},
      {"parallelism: { pipeline: 4 }\nschedule: zb-h2\nbatch: { global: 32 }\nzero: 1\n"},
      {"parallelism: { pipeline: 2 }\nschedule: v-half\nbatch: { global: 64 }\n"},
      {"parallelism: { pipeline: 4 }\nschedule: v-min\nbatch: { global: 32 }\n"},
      {"parallelism: { pipeline: 4 }\nschedule: sagemaker-interleaved\nbatch: { global: 32 }\n"},
  };
  for (const Case& c : cases) {
    // TorchTitan runs PyTorch's loss, which the import says.
    const std::string written = std::string(c.plan) == "{}\n" ? "" : c.plan;
    const ResolvedPlan original(c.topology, c.model, spec_from(written + "cross_entropy: pytorch\n"));
    const Exported exported = export_torchtitan(original);
    const ImportedLaunch imported = import_exported(original, exported);
    EXPECT_EQ(plan::resolve_plan(titan_imported_spec(imported), original.cluster, original.model), original.plan)
        << c.plan << "\n" << exported.toml << "\n" << imported.plan_yaml;
    ASSERT_TRUE(imported.gpus) << c.plan;
    EXPECT_EQ(*imported.gpus, original.plan.gpus()) << c.plan;
    EXPECT_TRUE(imported.ignored.empty()) << c.plan << ::testing::PrintToString(imported.ignored);
    EXPECT_TRUE(imported.notes.empty()) << c.plan << ::testing::PrintToString(imported.notes);
  }
}

// zb-auto and sagemaker-interleaved take a parameter; the CSV gives the order, and the import finds the
// schedule and parameter that generate it: the first in schedule_match.h's order where several do (zb-auto
// at its default limit, the pipeline size, is ZB-H1's order and comes back as zb-h1).
TEST(TorchTitanRoundTrip, AParameterisedScheduleComesBackWithTheSameOrder) {
  struct Case {
    const char* plan;
    plan::ScheduleKind back;
  };
  const Case cases[] = {
      {"parallelism: { pipeline: 4 }\nschedule: zb-auto\nzb_memory_limit: 6\nbatch: { global: 32 }\n",
       plan::ScheduleKind::ZbAuto},
      {"parallelism: { pipeline: 4 }\nschedule: zb-auto\nbatch: { global: 32 }\n", plan::ScheduleKind::ZbH1},
      {"parallelism: { pipeline: 4 }\nschedule: sagemaker-interleaved\nactive_microbatches: 2\nbatch: { global: 32 }\n",
       plan::ScheduleKind::SageMakerInterleaved},
  };
  for (const Case& c : cases) {
    const ResolvedPlan original(kDgxH100, kLlama8b, spec_from(c.plan));
    const Exported exported = export_torchtitan(original);
    const ImportedLaunch imported = import_exported(original, exported);
    const plan::Plan back = plan::resolve_plan(titan_imported_spec(imported), original.cluster, original.model);
    EXPECT_EQ(back.schedule, c.back) << c.plan << imported.plan_yaml;
    EXPECT_EQ(interop::to_torch_csv(schedule::make_program(schedule::shape_of(back))), exported.csv)
        << c.plan << imported.plan_yaml;
  }
}

// The TOML names the CSV, the class that places its stages, and the layers per stage; without a
// file name for the CSV (printing to stdout) the export is an error at `schedule`.
TEST(TorchTitanExport, AScheduleWithoutAClassRunsFromACsv) {
  const ResolvedPlan zb(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 4 }\nschedule: zb-h1\nbatch: { global: 32 }\n"));
  ASSERT_TRUE(torchtitan_runs_from_csv(zb.plan));
  const std::string toml = zb.exported(Framework::TorchTitan, "job.csv");
  EXPECT_NE(toml.find("pipeline_parallel_schedule = \"PipelineScheduleSingle\"\n"
                      "pipeline_parallel_schedule_csv = \"job.csv\"\n"),
            std::string::npos)
      << toml;
  EXPECT_NE(toml.find("pipeline_parallel_layers_per_stage = 8\n"), std::string::npos) << toml;
  const std::string csv = torchtitan_schedule_csv(zb.plan);
  EXPECT_EQ(csv.rfind("0F0,0F1,0F2,0F3,0I0,0W0,", 0), 0u) << csv;
  try {
    (void)zb.exported(Framework::TorchTitan);
    FAIL() << "a CSV schedule needs a file";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "schedule");
    EXPECT_NE(e.message().find("-o FILE.toml"), std::string::npos) << e.message();
  }
  const ResolvedPlan v(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 2 }\nschedule: v-min\nbatch: { global: 64 }\n"));
  const std::string v_toml = v.exported(Framework::TorchTitan, "v.csv");
  EXPECT_NE(v_toml.find("pipeline_parallel_schedule = \"ZBVZeroBubble\"\npipeline_parallel_schedule_csv = \"v.csv\"\n"),
            std::string::npos)
      << v_toml;
  // DualPipe runs every stage on two ranks; TorchTitan builds each once, CSV or not.
  const ResolvedPlan dualpipe(kDgxH100, kLlama8b,
                              spec_from("parallelism: { pipeline: 2 }\nschedule: dualpipe\nbatch: { global: 64 }\n"));
  EXPECT_FALSE(torchtitan_runs_from_csv(dualpipe.plan));
  try {
    (void)dualpipe.exported(Framework::TorchTitan, "job.csv");
    FAIL() << "TorchTitan cannot run dualpipe";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "schedule");
    EXPECT_NE(e.message().find("no dualpipe schedule"), std::string::npos) << e.message();
  }
  // Schedules TorchTitan names need no CSV.
  EXPECT_FALSE(torchtitan_runs_from_csv(ResolvedPlan(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 2 }\n")).plan));
}

// A job TOML as people write it: keys left at TorchTitan's defaults, FSDP over the ranks left over.
TEST(TorchTitanImport, ReadsAJobAsPeopleWriteIt) {
  const std::string file = testing::repo_path("tests/data/launch/torchtitan_llama3_8b.toml");
  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const ImportedLaunch imported = import_torchtitan(read_text_file(file), file, {8, &llama, csv_beside(file)});
  ASSERT_TRUE(imported.gpus);
  EXPECT_EQ(*imported.gpus, 8);
  const plan::PlanSpec spec = titan_imported_spec(imported);
  EXPECT_EQ(spec.zero, 3);  // FSDP resharding after the forward: TorchTitan's "default" without a pipeline
  // data_parallel_shard_degree -1: TorchTitan derives the degree from the world size, and the plan leaves it
  // to the cluster; global_batch_size's default (local x data-parallel degree) grows with it, so the plan
  // gives the per-rank part.
  EXPECT_FALSE(spec.written(plan::Axis::Data));
  EXPECT_NE(imported.plan_yaml.find("# data 8 on the job's 8 GPUs"), std::string::npos) << imported.plan_yaml;
  EXPECT_EQ(spec.micro_batch, 1);
  EXPECT_FALSE(spec.global_batch);
  EXPECT_EQ(spec.microbatches, 1);
  EXPECT_EQ(spec.recompute, plan::Recompute::Full);
  EXPECT_EQ(spec.precision, plan::Precision::Bf16);
  // Each value names the line it came from.
  EXPECT_NE(imported.plan_yaml.find("recompute: full   # torchtitan_llama3_8b.toml:43"), std::string::npos)
      << imported.plan_yaml;
  // What sets neither the plan nor the model is listed, in file order.
  ASSERT_FALSE(imported.ignored.empty());
  EXPECT_EQ(imported.ignored.front(), "job.dump_folder");
  EXPECT_NE(std::find(imported.ignored.begin(), imported.ignored.end(), "optimizer.lr"), imported.ignored.end());
  // Without --gpus the shard degree's "-1" leaves the data-parallel size to the cluster.
  const ImportedLaunch unsized = import_torchtitan(read_text_file(file), file, {std::nullopt, nullptr, nullptr});
  EXPECT_FALSE(unsized.gpus);
  EXPECT_FALSE(titan_imported_spec(unsized).written(plan::Axis::Data));
}

// TorchTitan's default split counts the embedding and the output as a layer each: with the model, the
// plan gets that split; without it, the plan keeps mpsim's balanced split and a note says so.
TEST(TorchTitanImport, TheEndStagesGiveUpALayerEachByDefault) {
  const std::string toml =
      "[parallelism]\npipeline_parallel_degree = 2\ndata_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 4\n"
      "[training]\nlocal_batch_size = 4\n[activation_checkpoint]\nmode = \"none\"\n";
  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const ImportedLaunch with_model = import_torchtitan(toml, "job.toml", {std::nullopt, &llama, nullptr});
  EXPECT_EQ(titan_imported_spec(with_model).partition, (std::vector<int>{0, 16, 32})) << with_model.plan_yaml;
  const std::string three =
      "[parallelism]\npipeline_parallel_degree = 3\ndata_parallel_shard_degree = 1\n[training]\nlocal_batch_size = 3\n"
      "[activation_checkpoint]\nmode = \"none\"\n";
  // 32 blocks + 2 over 3 stages: 12, 11, 11 layers, the end stages one block fewer.
  EXPECT_EQ(titan_imported_spec(import_torchtitan(three, "job.toml", {std::nullopt, &llama, nullptr})).partition,
            (std::vector<int>{0, 11, 22, 32}));
  const ImportedLaunch without = import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, nullptr});
  EXPECT_TRUE(titan_imported_spec(without).partition.empty());
  ASSERT_EQ(without.notes.size(), 1u);
  EXPECT_NE(without.notes.front().find("--model"), std::string::npos) << without.notes.front();
}

// An order no mpsim schedule generates still reads (the plan runs the schedule placing its stages
// alike), with a note that points at `schedule import`.
TEST(TorchTitanImport, AHandMadeOrderIsANote) {
  const std::string toml =
      "[parallelism]\npipeline_parallel_degree = 2\ndata_parallel_shard_degree = 1\n"
      "pipeline_parallel_schedule = \"PipelineScheduleSingle\"\npipeline_parallel_schedule_csv = \"job.csv\"\n"
      "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n"
      "[training]\nlocal_batch_size = 2\n[activation_checkpoint]\nmode = \"none\"\n";
  // Both ranks run the backwards last microbatch first: valid, and no generator's order.
  const ImportedLaunch imported =
      import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, csv_in_memory("0F0,0F1,0B1,0B0\r\n1F0,1F1,1B1,1B0\r\n")});
  EXPECT_EQ(titan_imported_spec(imported).schedule, plan::ScheduleKind::OneFOneB);
  ASSERT_EQ(imported.notes.size(), 1u);
  EXPECT_NE(imported.notes.front().find("mpsim schedule import job.csv"), std::string::npos) << imported.notes.front();
  // 1F1B's and GPipe's orders come back by name, with no note.
  const ImportedLaunch one_f_one_b =
      import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, csv_in_memory("0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1B1\r\n")});
  EXPECT_EQ(titan_imported_spec(one_f_one_b).schedule, plan::ScheduleKind::OneFOneB);
  EXPECT_TRUE(one_f_one_b.notes.empty());
  const ImportedLaunch gpipe =
      import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, csv_in_memory("0F0,0F1,0B0,0B1\r\n1F0,1F1,1B0,1B1\r\n")});
  EXPECT_EQ(titan_imported_spec(gpipe).schedule, plan::ScheduleKind::GPipe);
  EXPECT_TRUE(gpipe.notes.empty());
}

// Each error names the key, with the line its value is on.
TEST(TorchTitanImport, ErrorsNameTheKeyAndItsLine) {
  const auto starts = [](const std::string& error, const std::string& prefix) {
    return error.rfind(prefix, 0) == 0 ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << error;
  };
  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const std::string pp2 = "[parallelism]\npipeline_parallel_degree = 2\ndata_parallel_shard_degree = 1\n";
  EXPECT_TRUE(starts(titan_import_error("[parallelism\n"), " @ job.toml:1: not TOML"));
  EXPECT_TRUE(starts(titan_import_error("[parallelism]\ntensor_parallel_degree = \"2\"\n"),
                     "parallelism.tensor_parallel_degree @ job.toml:2: parallelism.tensor_parallel_degree is an integer"));
  EXPECT_TRUE(starts(titan_import_error("[parallelism]\ndata_parallel_shard_degree = 0\n"),
                     "parallelism.data_parallel_shard_degree @ job.toml:2:"));
  EXPECT_TRUE(starts(titan_import_error("[parallelism]\n\ndata_parallel_shard_degree = 4\n", 8),
                     "parallelism.data_parallel_shard_degree @ job.toml:3: the degrees multiply to 4 GPUs"));
  EXPECT_TRUE(starts(titan_import_error("[parallelism]\nfsdp_reshard_after_forward = \"sometimes\"\n"),
                     "parallelism.fsdp_reshard_after_forward @ job.toml:2:"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule = \"LoopedBFS\"\n"),
                     "parallelism.pipeline_parallel_schedule @ job.toml:4: mpsim has no counterpart"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule = \"Fancy\"\n"),
                     "parallelism.pipeline_parallel_schedule @ job.toml:4: 'Fancy' is not a schedule"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule = \"PipelineScheduleSingle\"\n"),
                     "parallelism.pipeline_parallel_schedule @ job.toml:4: PipelineScheduleSingle runs the order of a "
                     "schedule CSV"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_microbatch_size = 3\n[training]\nlocal_batch_size = 8\n"),
                     "training.local_batch_size @ job.toml:6: local_batch_size 8 is not a multiple"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                        "pipeline_parallel_layers_per_stage = 4\n"),
                     "parallelism.pipeline_parallel_layers_per_stage @ job.toml:5: the stages per rank"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_layers_per_stage = 4\n", std::nullopt, &llama),
                     "parallelism.pipeline_parallel_layers_per_stage @ job.toml:4: 32 blocks at 4 per stage make 9"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule_csv = \"other.csv\"\n"),
                     "parallelism.pipeline_parallel_schedule_csv @ job.toml:4: the schedule CSV 'other.csv' cannot be "
                     "read: no such file"));
  // A CSV that is not a schedule of the job's shape: at the CSV's cell.
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule_csv = \"job.csv\"\n[training]\nlocal_batch_size = 2\n",
                                  std::nullopt, nullptr, "0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1X1\r\n"),
                     " @ job.csv:2: '1X1' is not an action"));
  EXPECT_TRUE(starts(titan_import_error(pp2 + "pipeline_parallel_schedule_csv = \"job.csv\"\n[training]\nlocal_batch_size = 1000\n",
                                  std::nullopt, nullptr, "0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1B1\r\n"),
                     " @ job.csv:1: 9 cells cannot hold 1000 microbatches through 2 stages"));
  EXPECT_TRUE(starts(titan_import_error("[parallelism]\ndata_parallel_shard_degree = 2\n[training]\nlocal_batch_size = 4\n"
                                  "global_batch_size = 10\n"),
                     "training.global_batch_size @ job.toml:5: global_batch_size 10 is not a multiple"));
  EXPECT_TRUE(starts(titan_import_error("[training]\nseq_len = 2048\n", std::nullopt, &llama),
                     "training.seq_len @ job.toml:2: TorchTitan trains on sequences of 2048 tokens, but the model file's "
                     "seq_len is 8192"));
  EXPECT_TRUE(starts(titan_import_error("[training]\nmixed_precision_reduce = \"bfloat16\"\n"),
                     "training.mixed_precision_reduce @ job.toml:2:"));
  EXPECT_TRUE(starts(titan_import_error("[model]\nconverters = [\"quantize.linear.int4\"]\n"),
                     "model.converters @ job.toml:2: mpsim models no 'quantize.linear.int4' converter"));
  EXPECT_TRUE(starts(titan_import_error("[model]\nconverters = [\"quantize.linear.float8\"]\n[quantize.linear.float8]\n"
                                  "recipe_name = \"rowwise\"\n"),
                     "quantize.linear.float8.recipe_name @ job.toml:4: mpsim's fp8 is tensorwise"));
  EXPECT_TRUE(starts(titan_import_error("[activation_checkpoint]\nmode = \"memory_budget\"\n"),
                     "activation_checkpoint.mode @ job.toml:2: TorchTitan's \"memory_budget\" checkpointing has no "
                     "mpsim"));
  EXPECT_TRUE(
      starts(titan_import_error("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"-2\"\n"),
             "activation_checkpoint.selective_ac_option @ job.toml:3: selective_ac_option is \"op\" or a whole"));
  EXPECT_TRUE(starts(titan_import_error("[model]\nconverters = \"float8,mx\"\n"),
                     "model.converters @ job.toml:2: float8 and MX converters both"));
  EXPECT_TRUE(starts(titan_import_error("[model]\nconverters = 8\n"),
                     "model.converters @ job.toml:2: model.converters is a list of strings or a comma-separated"));
  EXPECT_TRUE(starts(titan_import_error("[activation_checkpoint]\nmode = \"none\"\n[training]\nenable_cpu_offload = true\n"),
                     "training.enable_cpu_offload @ job.toml:4:"));
  EXPECT_EQ(titan_import_error("[activation_checkpoint]\nmode = \"none\"\n"), "<no error>");
}

/// The plan a job with `ac` as its [activation_checkpoint] section imports to, with its notes.
ImportedLaunch with_checkpointing(const std::string& ac, const model::Model* model = nullptr) {
  return import_torchtitan("[activation_checkpoint]\n" + ac, "job.toml", {std::nullopt, model, nullptr});
}

// TorchTitan's selective checkpointing is read exactly (torchtitan/distributed/activation_checkpoint.py):
// every block checkpointed (option 0 or 1) is full recomputation; one block in N (its default, "2") is full
// recomputation of every Nth block (recompute_method every); per op ("op") is recompute: op.
TEST(TorchTitanImport, SelectiveCheckpointingIsReadAsItsOwnPolicy) {
  for (const char* every_block : {"0", "1"}) {
    const ImportedLaunch full = with_checkpointing("mode = \"selective\"\nselective_ac_option = \"" +
                                                   std::string(every_block) + "\"\n");
    const plan::PlanSpec spec = titan_imported_spec(full);
    EXPECT_EQ(spec.recompute, plan::Recompute::Full) << every_block;
    EXPECT_EQ(spec.recompute_method, model::RecomputeMethod::Uniform) << every_block;
    EXPECT_EQ(spec.recompute_num_layers, 1) << every_block;
    EXPECT_TRUE(full.notes.empty()) << every_block;
  }
  const ImportedLaunch every_4th = with_checkpointing("mode = \"selective\"\nselective_ac_option = \"4\"\n");
  const plan::PlanSpec every = titan_imported_spec(every_4th);
  EXPECT_EQ(every.recompute, plan::Recompute::Full);
  EXPECT_EQ(every.recompute_method, model::RecomputeMethod::Every);
  EXPECT_EQ(every.recompute_num_layers, 4);
  EXPECT_TRUE(every_4th.notes.empty());
  // Absent, the mode is TorchTitan's default, selective, every 2nd block.
  const ImportedLaunch absent =
      import_torchtitan("[training]\nlocal_batch_size = 2\n", "job.toml", {std::nullopt, nullptr, nullptr});
  const plan::PlanSpec by_default = titan_imported_spec(absent);
  EXPECT_EQ(by_default.recompute_method, model::RecomputeMethod::Every);
  EXPECT_EQ(by_default.recompute_num_layers, 2);
  EXPECT_TRUE(absent.notes.empty());

  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const ImportedLaunch per_op = with_checkpointing("mode = \"selective\"\nselective_ac_option = \"op\"\n", &llama);
  const plan::PlanSpec spec = titan_imported_spec(per_op);
  EXPECT_EQ(spec.recompute, plan::Recompute::Op);
  EXPECT_TRUE(per_op.notes.empty());
  const ResolvedPlan on_h100(kDgxH100, kLlama8b, spec);
  EXPECT_EQ(on_h100.plan.recompute, plan::Recompute::Op);
  // What TorchTitan refuses is refused at the option.
  EXPECT_THROW((void)with_checkpointing("mode = \"selective\"\nselective_ac_option = \"often\"\n"), InputError);
}

// converters takes TorchTitan's list or the comma-separated string its older presets and command line write.
TEST(TorchTitanImport, ConvertersAsAString) {
  for (const char* converters : {"\"float8\"", "[\"float8\"]", "\"quantize.linear.float8\"", "\" float8, \""}) {
    const ImportedLaunch imported = import_torchtitan(
        "[model]\nconverters = " + std::string(converters) + "\n[activation_checkpoint]\nmode = \"none\"\n", "job.toml",
        {std::nullopt, nullptr, nullptr});
    EXPECT_EQ(titan_imported_spec(imported).precision, plan::Precision::Fp8) << converters;
  }
  const ImportedLaunch empty = import_torchtitan("[model]\nconverters = \"\"\n[activation_checkpoint]\nmode = \"none\"\n",
                                                 "job.toml", {std::nullopt, nullptr, nullptr});
  EXPECT_EQ(titan_imported_spec(empty).precision, plan::Precision::Bf16);
}

// An explicit shard degree fixes the data-parallel size; -1 leaves it to the cluster, so the plan resolves
// with other degrees (`simulate --sweep plan.tensor=2,4,8`).
TEST(TorchTitanImport, OnlyAnExplicitShardDegreeFixesTheDataSize) {
  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const topology::Cluster one_node = topology::load_topology_file(testing::repo_path(kDgxH100));
  const ImportedLaunch derived = import_torchtitan(
      "[parallelism]\ndata_parallel_shard_degree = -1\n[activation_checkpoint]\nmode = \"full\"\n", "job.toml",
      {8, &llama, nullptr});
  EXPECT_EQ(derived.gpus, 8);
  for (const int tensor : {2, 4, 8}) {
    plan::PlanSpec spec = titan_imported_spec(derived);
    spec.write(plan::Axis::Tensor, tensor);
    EXPECT_EQ(plan::resolve_plan(spec, one_node, llama).degrees[plan::Axis::Data], 8 / tensor) << tensor;
  }
  const ImportedLaunch fixed = import_torchtitan(
      "[parallelism]\ndata_parallel_shard_degree = 8\n[activation_checkpoint]\nmode = \"full\"\n", "job.toml",
      {8, &llama, nullptr});
  EXPECT_EQ(titan_imported_spec(fixed).written(plan::Axis::Data), 8);
}

// tests/data/launch/torchtitan_llama3_8b_preset.toml: TorchTitan's Llama 3 8B preset's settings, with float8
// converters as a string. It imports, its per-op checkpointing exactly, and resolves on a DGX H100.
TEST(TorchTitanImport, TheLlama3PresetImports) {
  const std::string file = testing::repo_path("tests/data/launch/torchtitan_llama3_8b_preset.toml");
  const model::Model llama = model::load_model_file(testing::repo_path(kLlama8b));
  const ImportedLaunch imported = import_torchtitan(read_text_file(file), file, {8, &llama, csv_beside(file)});
  const plan::PlanSpec spec = titan_imported_spec(imported);
  EXPECT_EQ(spec.precision, plan::Precision::Fp8);
  EXPECT_EQ(spec.recompute, plan::Recompute::Op);
  EXPECT_EQ(spec.zero, 3);
  EXPECT_FALSE(spec.written(plan::Axis::Data));
  EXPECT_TRUE(imported.notes.empty());
  EXPECT_NE(std::find(imported.ignored.begin(), imported.ignored.end(), "quantize.linear.float8.filter_fqns"),
            imported.ignored.end());
  const ResolvedPlan resolved(kDgxH100, kLlama8b, spec);
  EXPECT_EQ(resolved.plan.degrees[plan::Axis::Data], 8);
  EXPECT_EQ(resolved.plan.precision, plan::Precision::Fp8);
}

}  // namespace
}  // namespace mpsim::interop
