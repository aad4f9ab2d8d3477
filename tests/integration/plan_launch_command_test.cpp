// mpsim plan export --to torchtitan and plan import --from torchtitan end to end: the schedule CSV written
// beside the TOML and read back from there, and the errors a user sees.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/run_mpsim.h"

namespace {

namespace fs = std::filesystem;
using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using mpsim::testing::run_mpsim;

const std::string kZbH1 = "plan export " + repo("configs/plans/cpu-tiny-zb-h1-pp2.yaml") + " --to torchtitan --topology " +
                          repo("topologies/dgx-a100.yaml") + " --model " + repo("configs/models/cpu-gpt-tiny.yaml") +
                          " --gpus 2";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PlanLaunchCommand, TorchTitanExportWritesTheScheduleCsvBesideTheToml) {
  const fs::path dir = mpsim::testing::scratch("titan-export");
  const CommandResult run = run_mpsim(kZbH1 + " -o " + (dir / "job.toml").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(read(dir / "job.toml").find("pipeline_parallel_schedule_csv = \"job.csv\"\n"), std::string::npos);
  EXPECT_EQ(read(dir / "job.csv"), read(repo("tests/golden/export/torchtitan-cpu-tiny-zb-h1-pp2.csv")));
  // No file is left behind but the two.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2);

  // Read back from another folder: the CSV is found beside the TOML.
  const CommandResult back = run_mpsim("plan import --from torchtitan " + (dir / "job.toml").string() + " --model " +
                                       repo("configs/models/cpu-gpt-tiny.yaml") + " -o " + (dir / "plan.yaml").string());
  ASSERT_EQ(back.exit_code, 0) << back.err;
  const std::string plan = read(dir / "plan.yaml");
  EXPECT_NE(plan.find("schedule: zb-h1   # job.toml:"), std::string::npos) << plan;
  EXPECT_EQ(back.err, "") << back.err;
  // The plan simulates on the job's two GPUs.
  const CommandResult simulate = run_mpsim("simulate --plan " + (dir / "plan.yaml").string() + " --topology " +
                                           repo("topologies/dgx-a100.yaml") + " --model " +
                                           repo("configs/models/cpu-gpt-tiny.yaml") + " --gpus 2 --json");
  EXPECT_EQ(simulate.exit_code, 0) << simulate.err;
  EXPECT_NE(simulate.out.find("\"schedule\": \"zb-h1\""), std::string::npos) << simulate.out;
  fs::remove_all(dir);
}

TEST(PlanLaunchCommand, ACsvScheduleOnStdoutIsAnErrorThatAsksForAFile) {
  const CommandResult run = run_mpsim(kZbH1);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("cpu-tiny-zb-h1-pp2.yaml:5:11: TorchTitan cannot express this: TorchTitan runs zb-h1 from a "
                         "schedule CSV"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("(-o FILE.toml) (field 'schedule')"), std::string::npos) << run.err;
}

TEST(PlanLaunchCommand, ABadJobIsOneLineAtTheKey) {
  const fs::path dir = mpsim::testing::scratch("titan-import");
  std::ofstream(dir / "job.toml") << "[parallelism]\ntensor_parallel_degree = 2\n\n[activation_checkpoint]\n"
                                     "mode = \"memory_budget\"\n";
  const CommandResult run = run_mpsim("plan import --from torchtitan " + (dir / "job.toml").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err.rfind("mpsim: error: " + (dir / "job.toml").string() + ":5:8: TorchTitan's \"memory_budget\"", 0),
            0u)
      << run.err;
  EXPECT_NE(run.err.find("(field 'activation_checkpoint.mode')\n"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  const CommandResult model_out =
      run_mpsim("plan import --from torchtitan " + (dir / "job.toml").string() + " --model-out m.yaml");
  EXPECT_EQ(model_out.exit_code, 2);
  EXPECT_NE(model_out.err.find("--model-out is for --from megatron"), std::string::npos) << model_out.err;
  fs::remove_all(dir);
}

// A Megatron-LM script imported and simulated as a user runs it: the plan leaves the data-parallel size to
// the cluster, so a sweep of the tensor size runs on one node though the script ran on two; a tokenizer the
// import does not know is an error that asks for --vocab-size, and --vocab-size gives it.
TEST(PlanLaunchCommand, AMegatronScriptImportsAndSweeps) {
  const fs::path dir = mpsim::testing::scratch("megatron-import");
  const CommandResult imported =
      run_mpsim("plan import --from megatron " + repo("tests/data/launch/train_gpt_1.3b_bpe.sh") + " -o " +
                (dir / "plan.yaml").string() + " --model-out " + (dir / "model.yaml").string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.err.find("mpsim: note: --use-flash-attn"), std::string::npos) << imported.err;
  const CommandResult sweep = run_mpsim("simulate --plan " + (dir / "plan.yaml").string() + " --topology " +
                                        repo("topologies/dgx-h100.yaml") + " --model " + (dir / "model.yaml").string() +
                                        " --sweep plan.tensor=2,4,8");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.err;

  std::ofstream(dir / "qwen.sh") << "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
                                    "--num-attention-heads 4 --seq-length 128 --tokenizer-type HuggingFaceTokenizer "
                                    "--tokenizer-model Qwen/Qwen2.5-7B\n";
  const std::string qwen = "plan import --from megatron " + (dir / "qwen.sh").string() + " --model-out " +
                           (dir / "qwen.yaml").string();
  const CommandResult unknown = run_mpsim(qwen);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("plan import --vocab-size N"), std::string::npos) << unknown.err;
  const CommandResult given = run_mpsim(qwen + " --vocab-size 151665");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(read(dir / "qwen.yaml").find("vocab: 151680\n"), std::string::npos) << read(dir / "qwen.yaml");
  fs::remove_all(dir);
}

}  // namespace
