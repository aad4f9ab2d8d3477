#pragma once
/// Each command group registers its subcommands on the `mpsim` app. The callbacks load inputs
/// (throwing InputError on bad input), call the libraries and print; main() maps errors to exit codes.
#include <string>

namespace CLI {
class App;  // <CLI/CLI.hpp>, which only the files that register commands include
}  // namespace CLI

namespace mpsim::cli {

void add_topo_commands(CLI::App& app);
void add_model_commands(CLI::App& app);
void add_plan_commands(CLI::App& app);
/// `plan export` and `plan import`, on the `plan` command.
void add_plan_launch_commands(CLI::App& plan_cmd);
void add_simulate_command(CLI::App& app);
void add_schedule_commands(CLI::App& app);
void add_execute_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);

struct GpuSelection;
/// `--gpus N` and `--gpus-per-node K` of plan and simulate, filling `selection` (kept alive by the caller).
void add_gpu_selection_options(CLI::App& command, GpuSelection& selection);

/// `--profile FILE` of simulate and plan: a software profile (mpsim calibrate) for the inputs' cluster.
void add_profile_option(CLI::App& command, std::string& profile);

/// `--trace-links none|busiest|all` of simulate and plan (sim/trace/link_lanes.h), filling `value`.
void add_trace_links_option(CLI::App& command, std::string& value);

/// Exit codes (README.md, "The `mpsim` command").
inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 1;
inline constexpr int kExitBadInput = 2;

/// Thrown by a command that has already reported its problem, to end with `code` and print nothing more.
struct ExitWith {
  int code;
};

}  // namespace mpsim::cli
