#include "cli/verify_top.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "executor/launch/mpirun_launch.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/plan/plan_loader.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

namespace fs = std::filesystem;

/// A folder for the plans and traces of one verification, removed when done.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (fs::temp_directory_path() / "mpsim-verify-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a folder under " + fs::temp_directory_path().string());
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  [[nodiscard]] const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

/// Runs `mpirun -np ranks mpsim execute ...` with this process's standard output sent to /dev/null
/// (each rank's report would interleave with the planner's tables); errors still reach standard error.
executor::LaunchResult run_quietly(int ranks, const std::vector<std::string>& args) {
  std::cout << std::flush;
  const int saved = dup(STDOUT_FILENO);
  const int null_fd = open("/dev/null", O_WRONLY);
  if (saved < 0 || null_fd < 0) throw std::runtime_error("cannot redirect standard output");
  dup2(null_fd, STDOUT_FILENO);
  close(null_fd);
  executor::LaunchResult result;
  try {
    result = executor::run_under_mpirun(ranks, args);
  } catch (...) {
    dup2(saved, STDOUT_FILENO);
    close(saved);
    throw;
  }
  dup2(saved, STDOUT_FILENO);
  close(saved);
  return result;
}

}  // namespace

std::vector<VerifiedPlan> verify_top(const std::vector<planner::Evaluated>& ranked, const VerifyOptions& options) {
  const std::size_t count = std::min(ranked.size(), static_cast<std::size_t>(options.top));
  std::vector<VerifiedPlan> out;
  if (count == 0) return out;
  const int gpus = ranked.front().plan.gpus();
  if (options.ranks && *options.ranks != gpus) {
    throw InputError({"--ranks", 0, 0}, "",
                     fmt::format("the plans run on {} GPUs, so they run on {} ranks, not {}", gpus, gpus, *options.ranks));
  }
  const ScratchFolder scratch;
  for (std::size_t i = 0; i < count; ++i) {
    VerifiedPlan v{static_cast<int>(i) + 1, ranked[i], std::nullopt, {}};
    const fs::path plan_file = scratch.path() / fmt::format("plan-{}.yaml", i + 1);
    const fs::path trace_file = scratch.path() / fmt::format("measured-{}.json", i + 1);
    write_file_atomically(plan_file, plan::write_plan_yaml(ranked[i].plan));
    std::vector<std::string> args{"execute",   "--topology", options.files.topology, "--model", options.files.model,
                                  "--plan",    plan_file.string(), "--backend", options.backend,
                                  "--steps",   std::to_string(options.steps), "--warmup", std::to_string(options.warmup),
                                  "--trace",   trace_file.string()};
    for (const std::string& s : options.sets) {
      args.emplace_back("--set");
      args.push_back(s);
    }
    // The prediction prices the plan's optimizer step; execute runs SGD unless told. It has SGD and
    // Adam only: a Muon plan is measured with SGD's step (docs/closed-loop.md).
    if (ranked[i].plan.optimizer == model::Optimizer::Adam) {
      args.emplace_back("--optimizer");
      args.emplace_back("adam");
    }
    std::cerr << fmt::format("verifying #{} of {} on {} ranks ({} backend)\n", i + 1, count, gpus, options.backend);
    const executor::LaunchResult launched = run_quietly(gpus, args);
    if (launched.exit_code != 0 || !fs::exists(trace_file)) {
      v.failure = launched.first_other_line.empty() ? fmt::format("the run ended with status {}", launched.exit_code)
                                                     : launched.first_other_line;
    } else {
      const trace::TraceFile measured = trace::read_trace_file(trace_file.string());
      if (measured.report) {
        v.measured_step_s = measured.report->step_time_s;
      } else {
        v.failure = "the run wrote no report";
      }
    }
    out.push_back(std::move(v));
  }
  std::stable_sort(out.begin(), out.end(), [](const VerifiedPlan& a, const VerifiedPlan& b) {
    if (a.measured_step_s && b.measured_step_s) return *a.measured_step_s < *b.measured_step_s;
    return a.measured_step_s.has_value() && !b.measured_step_s.has_value();
  });
  return out;
}

}  // namespace mpsim::cli
