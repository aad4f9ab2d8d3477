// The options several commands share (--gpus, --trace-links, --tokens and the like), registered here
// so that the files that use their values need not compile CLI11.
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/training_report.h"
#include "sim/trace/link_lanes.h"

namespace mpsim::cli {

void add_profile_option(CLI::App& command, std::string& profile) {
  command.add_option("--profile", profile,
                     "A software profile (mpsim calibrate): its factors scale the GPU kinds' and links' rates");
}

void add_gpu_selection_options(CLI::App& command, GpuSelection& selection) {
  command.add_option_function<int>(
      "--gpus", [&selection](const int& n) { selection.gpus = n; },
      "Use the first N GPUs of the topology in node order: whole nodes, part of one node, or equal NVLink "
      "domains (256 GPUs of 72-GPU racks: 4 racks of 64)");
  command.add_option_function<int>(
      "--gpus-per-node", [&selection](const int& n) { selection.gpus_per_node = n; },
      "With --gpus: use the first K GPUs of each node");
}

void add_trace_links_option(CLI::App& command, std::string& value) {
  command
      .add_option("--trace-links", value,
                  fmt::format("Link lanes in the trace: none, busiest (the {} with the most busy time; default) or all",
                              trace::kBusiestLinks))
      ->check(CLI::IsMember({"none", "busiest", "all"}));
}

void add_training_options(CLI::App& command, training::TrainingRequest& flags) {
  command.add_option("--tokens", flags.tokens,
                     "Training time, GPU-hours, cost, energy and goodput for this many tokens: 15T, 300B, 2.5e12");
  command.add_option("--gpu-hour-price", flags.gpu_hour_price, "Price of one GPU-hour, for --tokens' cost")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--restart-time", flags.restart,
                     "Relaunch after an interruption, for --tokens (default \"600 s\")");
  command.add_option("--checkpoint-bandwidth", flags.checkpoint_bandwidth,
                     "Storage write bandwidth per GPU, for --tokens (default \"122 MB/s\": Llama 3's 2 TB/s for 16,384 GPUs)");
  command.add_option("--gpu-hours-per-interruption", flags.gpu_hours_per_interruption,
                     "GPU-hours between unexpected interruptions, per GPU, for --tokens (default 50677: Llama 3)")
      ->check(CLI::PositiveNumber);
}

}  // namespace mpsim::cli
