// mpsim: the command-line composition root. Parses flags, calls the libraries, prints.
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "sim/core/input_error.h"

int main(int argc, char** argv) {
  using namespace mpsim::cli;
  CLI::App app{"mpsim: simulate, plan and run model-parallel training steps", "mpsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mpsim " MPSIM_VERSION, "Print the version and exit");
  app.footer(
      "Examples:\n"
      "  mpsim topo show topologies/dgx-a100.yaml\n"
      "  mpsim topo route topologies/4x-p4d.yaml node0/gpu0 node1/gpu0 --json\n"
      "  mpsim model show configs/models/gpt3-13b.yaml\n"
      "  mpsim plan check configs/plans/gpt3-13b-4x-p4d.yaml --topology topologies/4x-p4d.yaml "
      "--model configs/models/gpt3-13b.yaml\n"
      "  mpsim simulate --topology topologies/4x-p4d.yaml --model configs/models/gpt3-13b.yaml \\\n"
      "      --plan configs/plans/gpt3-13b-4x-p4d.yaml --sweep plan.microbatches=16,32,64");
  add_topo_commands(app);
  add_model_commands(app);
  add_plan_commands(app);
  add_simulate_command(app);
  add_schedule_commands(app);
  add_execute_command(app);
  add_compare_command(app);
  add_profile_command(app);
  add_calibrate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const ExitWith& e) {
    return e.code;
  } catch (const CLI::ParseError& e) {
    std::cerr << fmt::format("mpsim: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const mpsim::InputError& e) {
    std::cerr << fmt::format("mpsim: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "mpsim: error: out of memory\n";
    return kExitRunFailed;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("mpsim: error: {}\n", e.what());
    return kExitRunFailed;
  }
  return kExitOk;
}
