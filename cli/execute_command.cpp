// mpsim execute: run a plan's training step on real processes and report what happened.
#include <csignal>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/report_text.h"
#include "cli/table.h"
#include "executor/backend/make_backend.h"
#include "executor/interpreter/peers.h"
#include "executor/interpreter/interpreter.h"
#include "executor/interpreter/mpi_runtime.h"
#include "executor/interpreter/program_for_plan.h"
#include "executor/launch/mpirun_launch.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/plan/degrees_text.h"
#include "sim/trace/trace_json.h"

namespace mpsim::cli {
namespace {

struct ExecuteArgs {
  InputFiles files;
  std::vector<std::string> sets;
  std::string backend = "cpu";
  int ranks = 0;
  int steps = 3;
  int warmup = 1;
  double timeout_s = 60;
  std::string trace;
  bool json = false;
  // Hidden: tests and experiments.
  int fail_rank = -1;
  std::int64_t fail_at_op = -1;
  std::string fail_signal = "kill";
  std::string dump_parameters;
  std::int64_t grad_bucket = 0;
  std::string optimizer = "sgd";
  double learning_rate = 0;
  std::uint64_t seed = 1;
};


void check_world(const plan::Plan& plan, int world, const char* where) {
  if (const auto mismatch = executor::world_size_mismatch(plan, world)) throw InputError({where, 0, 0}, "", *mismatch);
}

/// Re-runs this command under `mpirun -np N` (without --ranks) and waits.
int launch_ranks(const ExecuteArgs& args, const std::vector<Override>& overrides) {
  const Inputs in = load_inputs(args.files, overrides);
  check_world(*in.plan, args.ranks, "--ranks");
  return executor::launch_exit_status(
      executor::run_under_mpirun(args.ranks, executor::own_arguments_without_ranks()));
}

void print_execute_report(const Inputs& in, const executor::ExecuteResult& result, const std::string& backend) {
  const plan::Plan& p = *in.plan;
  const trace::Report& r = result.report;
  std::cout << fmt::format("\n{} on {} ranks ({} backend): {}{}, {}, {} microbatches of {}\n", in.model.name,
                           p.gpus(), backend, plan::summary(p.degrees), p.virtual_stages > 1 ? fmt::format(" (x{} virtual)", p.virtual_stages) : "",
                           plan::to_string(p.schedule), plan::microbatches_text(p), p.micro_batch);
  std::cout << fmt::format("  step time     {} (median of {} measured steps, step {})\n",
                           to_string(TimeNs::seconds(r.step_time_s)), result.step_times_s.size(), result.median_step + 1);
  std::cout << fmt::format("  idle          {} of all rank time; pipeline bubble rate {}\n", percent(r.bubble_fraction),
                           percent(r.bubble_rate));
  std::cout << fmt::format("  peak memory   {} allocated by the executor on the busiest rank\n",
                           to_string(Bytes::bytes(r.peak_memory_bytes)));
  if (!result.losses.empty()) std::cout << fmt::format("  final loss    {:.6f}\n", result.losses.back());
}

int run_rank(const ExecuteArgs& args, const std::vector<Override>& overrides, int* argc, char*** argv) {
  executor::MpiSession mpi(argc, argv);
  std::optional<Inputs> in;
  try {
    in = load_inputs(args.files, overrides);
    check_world(*in->plan, mpi.size(), "mpirun");
  } catch (const InputError& e) {
    // A launcher rank other than 0 in a world of one: this mpsim's MPI is not the launcher's.
    const std::string launched = executor::launcher_rank();
    const std::string hint = mpi.size() == 1 && !launched.empty() && launched != "0"
                                 ? fmt::format(" (the launcher calls this process rank {}: is mpsim built against "
                                               "the launcher's MPI?)",
                                               launched)
                                 : std::string();
    if (mpi.rank() == 0) std::cerr << fmt::format("mpsim: error: {}{}\n", e.what(), hint);
    return kExitBadInput;
  }
  executor::ExecuteOptions options;
  options.warmup = args.warmup;
  options.steps = args.steps;
  options.net.seed = args.seed;
  options.net.optimizer = args.optimizer == "adam" ? executor::Optimizer::Adam : executor::Optimizer::Sgd;
  options.net.learning_rate =
      static_cast<float>(args.learning_rate > 0 ? args.learning_rate : (args.optimizer == "adam" ? 1e-3 : 0.1));
  options.grad_bucket = Bytes::bytes(args.grad_bucket);
  options.dump_parameters = !args.dump_parameters.empty();
  options.print_losses = !args.json;
  if (args.fail_rank == mpi.rank()) {
    options.fail_at_op = args.fail_at_op;
    options.fail_signal = args.fail_signal == "stop" ? SIGSTOP : SIGKILL;
  }
  executor::ExecuteResult result;
  try {
    executor::BackendOptions backend_options;
    backend_options.peer_timeout_s = args.timeout_s;
    backend_options.seed = args.seed;
    backend_options.peers = executor::point_to_point_peers(*in->plan, mpi.rank());
    const auto backend = executor::make_backend(args.backend, backend_options);
    // A profiled model trains the model it was profiled from; the plan, resolved on the profiled model
    // as simulate resolves it, cuts the same layers (model::executed_model).
    result = executor::execute(*backend, in->cluster, model::executed_model(in->model), *in->plan, options);
    if (result.root) {
      // Written only now, after every step completed: a failed run leaves no trace behind.
      if (!args.trace.empty()) {
        write_trace_file(args.trace, result.timeline, result.report,
                         [](const trace::Report& r) { return trace::report_json(r); });
      }
      if (options.dump_parameters) write_file_atomically(args.dump_parameters, result.parameters);
      if (args.json) {
        std::cout << trace::report_json(result.report).dump(2) << "\n";
      } else {
        print_execute_report(*in, result, backend->name());
      }
      std::cout << std::flush;
    }
  } catch (const std::exception& e) {
    std::cerr << fmt::format("mpsim: error: {}\n", e.what()) << std::flush;
    executor::MpiSession::abort(kExitRunFailed);
  }
  return kExitOk;
}

}  // namespace

void add_execute_command(CLI::App& app) {
  auto args = std::make_shared<ExecuteArgs>();
  CLI::App* cmd = app.add_subcommand("execute", "Run the plan's training steps on real processes (MPI) and measure them");
  cmd->add_option("--topology", args->files.topology, "Topology YAML (names the ranks' devices)")->required();
  cmd->add_option("--model", args->files.model, "Model YAML")->required();
  cmd->add_option("--plan", args->files.plan, "Plan YAML")->required();
  cmd->add_option("--backend", args->backend, "cpu (Eigen + MPI) or cuda (cuBLAS + NCCL)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--ranks", args->ranks, "Launch N ranks with mpirun (default: be one rank of the running job)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--steps", args->steps, "Measured steps (the report is the median one)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->warmup, "Steps run first and not measured")->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout", args->timeout_s, "Seconds a rank waits for a peer before the job ends")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trace", args->trace,
                  "Write the measured step as a Chrome/Perfetto trace JSON (gzip when it ends in .gz)");
  cmd->add_flag("--json", args->json, "Print the report as JSON");
  cmd->add_option("--set", args->sets, "Override an input field: PATH=VALUE (repeatable)");
  cmd->add_option("--optimizer", args->optimizer, "sgd (default) or adam")->check(CLI::IsMember({"sgd", "adam"}));
  cmd->add_option("--lr", args->learning_rate, "Learning rate (default 0.1 for sgd, 1e-3 for adam)");
  cmd->add_option("--seed", args->seed, "Seed of the initial parameters and the synthetic data");
  cmd->add_option("--dump-parameters", args->dump_parameters,
                  "After the last step, write every parameter (gathered, in layer order) to this file")
      ->group("");
  cmd->add_option("--grad-bucket", args->grad_bucket, "Gradient bucket in bytes (default: Megatron's)")->group("");
  cmd->add_option("--fail-rank", args->fail_rank, "Fault test: this rank kills itself ...")->group("");
  cmd->add_option("--fail-at-op", args->fail_at_op, "... before its K-th op (0-based, counted over all steps)")
      ->group("");
  cmd->add_option("--fail-signal", args->fail_signal, "kill (the rank dies) or stop (it hangs)")
      ->check(CLI::IsMember({"kill", "stop"}))
      ->group("");
  cmd->callback([args] {
    std::vector<Override> overrides;
    for (const std::string& s : args->sets) overrides.push_back(parse_override(s, "--set"));
    int code = kExitOk;
    if (args->ranks > 0) {
      code = launch_ranks(*args, overrides);
    } else {
      int argc = 0;
      char** argv = nullptr;
      code = run_rank(*args, overrides, &argc, &argv);
    }
    if (code != kExitOk) throw ExitWith{code};
  });
}

}  // namespace mpsim::cli
