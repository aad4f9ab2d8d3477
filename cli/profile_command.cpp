// mpsim profile: measure this machine through an executor backend and write a calibrated topology; time
// the executor's layers of a model and write a profiled model.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "executor/backend/make_backend.h"
#include "executor/interpreter/mpi_runtime.h"
#include "executor/launch/mpirun_launch.h"
#include "executor/profile/calibrated_topology.h"
#include "executor/profile/layer_profiler.h"
#include "executor/profile/profiler.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/core/units.h"
#include "sim/model/model_loader.h"

namespace mpsim::cli {
namespace {

namespace prof = executor::profile;

struct ProfileArgs {
  std::string backend = "cpu";
  int ranks = 0;  ///< 0: run inside the current MPI job
  std::string model;
  int micro_batch = 1;
  std::string output;
  std::string model_output;  ///< --model-out: the profiled model
  int layer_repetitions = 20;
  std::string max_message = "64 MiB";
  std::string fit_from = "4 KiB";
  std::string time_per_measurement = "200 ms";
  std::string memory;
  std::string name;
  bool json = false;
};

Bytes parse_size_flag(const std::string& flag, const std::string& text) {
  const auto parsed = parse_bytes(text);
  if (!parsed.ok()) throw InputError({flag + " " + text, 0, 0}, "", parsed.error);
  if (parsed.value.count() <= 0) throw InputError({flag + " " + text, 0, 0}, "", "must be positive");
  return parsed.value;
}

/// The options of this command again, for the ranks mpirun starts (all but --ranks).
std::vector<std::string> forwarded_args(const ProfileArgs& a) {
  std::vector<std::string> out = {"profile", "--backend", a.backend, "--max-message", a.max_message,
                                  "--fit-from", a.fit_from,
                                  "--time-per-measurement", a.time_per_measurement,
                                  "--micro-batch", std::to_string(a.micro_batch)};
  if (!a.output.empty()) out.insert(out.end(), {"-o", a.output});
  if (!a.model.empty()) out.insert(out.end(), {"--model", a.model});
  if (!a.model_output.empty()) {
    out.insert(out.end(), {"--model-out", a.model_output, "--layer-repetitions", std::to_string(a.layer_repetitions)});
  }
  if (!a.memory.empty()) out.insert(out.end(), {"--memory", a.memory});
  if (!a.name.empty()) out.insert(out.end(), {"--name", a.name});
  if (a.json) out.emplace_back("--json");
  return out;
}

std::string command_line(const ProfileArgs& a) {
  std::string out = "mpsim";
  for (const auto& s : forwarded_args(a)) out += s.find(' ') == std::string::npos ? " " + s : " '" + s + "'";
  if (a.ranks > 0) out += fmt::format(" --ranks {}", a.ranks);
  return out;
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "unknown host";
  return buffer;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32] = {};
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

/// Memory capacity of one rank: --memory, else for CPU ranks the machine's memory shared by the ranks,
/// else for CUDA the first device's memory as nvidia-smi reports it.
std::int64_t memory_per_rank(const ProfileArgs& a, int ranks) {
  if (!a.memory.empty()) return parse_size_flag("--memory", a.memory).count();
  if (a.backend == "cuda") {
    constexpr const char* kQuery = "nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null";
    if (FILE* pipe = ::popen(kQuery, "r")) {
      long long mib = 0;
      const int got = std::fscanf(pipe, "%lld", &mib);
      ::pclose(pipe);
      if (got == 1 && mib > 0) return mib << 20;
    }
    throw InputError({"--memory", 0, 0}, "", "cannot read the device memory from nvidia-smi: give --memory SIZE");
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<std::int64_t>(pages) * page / std::max(1, ranks);
}

nlohmann::ordered_json result_json(const prof::ProfileResult& r, const std::string& output) {
  using nlohmann::ordered_json;
  ordered_json gemms = ordered_json::array();
  for (const auto& g : r.gemms) {
    gemms.push_back({{"use", g.shape.label},
                     {"m", g.shape.m},
                     {"n", g.shape.n},
                     {"k", g.shape.k},
                     {"transpose_a", g.shape.ta == executor::Transpose::Yes},
                     {"transpose_b", g.shape.tb == executor::Transpose::Yes},
                     {"weight", g.shape.weight},
                     {"flops_per_s", g.flops_per_s}});
  }
  ordered_json links = ordered_json::array();
  for (const auto& l : r.links) {
    ordered_json samples = ordered_json::array();
    for (const auto& s : l.samples) samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}});
    links.push_back({{"ranks", {l.rank_a, l.rank_b}},
                     {"fit_min_bytes", l.fit_min_bytes},
                     {"alpha_s", l.fit.alpha_s},
                     {"beta_bytes_per_s", l.fit.beta_bytes_per_s},
                     {"max_relative_residual", l.fit.max_relative_residual},
                     {"fit_on_fastest", l.fit_on_fastest},
                     {"samples", samples}});
  }
  ordered_json allreduce = ordered_json::array();
  for (const auto& c : r.allreduce) {
    allreduce.push_back({{"bytes", c.bytes},
                         {"seconds", c.seconds},
                         {"algorithm_bandwidth_bytes_per_s", c.algorithm_bandwidth},
                         {"bus_bandwidth_bytes_per_s", c.bus_bandwidth}});
  }
  return {{"backend", r.backend},
          {"ranks", r.ranks},
          {"gemm_flops_per_s", r.gemm_flops_per_s},
          {"memory_bandwidth_bytes_per_s", r.memory_bandwidth},
          {"alpha_s", r.link.alpha_s},
          {"beta_bytes_per_s", r.link.beta_bytes_per_s},
          {"gemms", gemms},
          {"links", links},
          {"allreduce", allreduce},
          {"topology", output}};
}

void print_result(const prof::ProfileResult& r, const std::string& output) {
  std::cout << fmt::format("profiled {} {} rank{} on {}\n\n", r.ranks, r.backend, r.ranks == 1 ? "" : "s", host_name());
  Table gemms;
  gemms.add_row({"GEMM", "m", "n", "k", "op", "GFLOP/s", "share of FLOPs"});
  double total = 0;
  for (const auto& g : r.gemms) total += g.shape.weight;
  for (const auto& g : r.gemms) {
    const std::string op = std::string(g.shape.ta == executor::Transpose::Yes ? "T" : "N") +
                           (g.shape.tb == executor::Transpose::Yes ? "T" : "N");
    gemms.add_row({g.shape.label, std::to_string(g.shape.m), std::to_string(g.shape.n), std::to_string(g.shape.k), op,
                   fmt::format("{:.2f}", g.flops_per_s / 1e9),
                   fmt::format("{:.1f}%", total > 0 ? 100 * g.shape.weight / total : 0)});
  }
  std::cout << gemms.render() << "\n";
  std::cout << fmt::format("  GEMM throughput   {:.2f} GFLOP/s (used as peak fp32: FLOP-weighted over {} shapes)\n",
                           r.gemm_flops_per_s / 1e9, r.gemms.size());
  std::cout << fmt::format("  memory bandwidth  {} per rank (axpy)\n",
                           to_string(BytesPerSec::bytes_per_sec(r.memory_bandwidth)));
  if (r.ranks > 1) {
    std::cout << fmt::format(
        "  point to point    alpha {}, beta {} (least-squares fit over {} and up, largest residual {:.0f}%)\n",
        to_string(TimeNs::seconds(r.link.alpha_s)), to_string(BytesPerSec::bytes_per_sec(r.link.beta_bytes_per_s)),
        to_string(Bytes::bytes(r.links.front().fit_min_bytes)), 100 * r.link.max_relative_residual);
    Table links;
    links.add_row({"ranks", "size", "one-way time", "bandwidth"});
    for (const auto& l : r.links) {
      for (const auto& s : l.samples) {
        links.add_row({fmt::format("{}-{}", l.rank_a, l.rank_b), to_string(Bytes::bytes(s.bytes)),
                       to_string(TimeNs::seconds(s.seconds)),
                       to_string(BytesPerSec::bytes_per_sec(static_cast<double>(s.bytes) / s.seconds))});
      }
    }
    if (!r.allreduce.empty()) {
      const auto& last = r.allreduce.back();
      std::cout << fmt::format("  all-reduce        bus bandwidth {} at {}\n",
                               to_string(BytesPerSec::bytes_per_sec(last.bus_bandwidth)),
                               to_string(Bytes::bytes(last.bytes)));
    }
    std::cout << "\n" << links.render();
  }
  std::cout << fmt::format("\nwrote {}\n", output);
}

nlohmann::ordered_json layers_json(const model::Model& m, const prof::LayerProfile& p, const std::string& output) {
  using nlohmann::ordered_json;
  ordered_json layers = ordered_json::array();
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    layers.push_back({{"name", m.layers[i].name},
                      {"kind", model::to_string(m.layers[i].kind)},
                      {"forward_s", p.layers[i].forward_s},
                      {"backward_input_s", p.layers[i].backward_input_s},
                      {"backward_weight_s", p.layers[i].backward_weight_s}});
  }
  return {{"micro_batch", p.micro_batch},
          {"repetitions", p.repetitions},
          {"rounds", p.rounds},
          {"ranks", p.ranks},
          {"statistic", "median of the repetitions"},
          {"spread", p.spread},
          {"adam_s_per_parameter", p.adam_s_per_parameter},
          {"rank_time_factors", p.rank_time_factors},
          {"layers", layers},
          {"model", output}};
}

void print_layers(const model::Model& m, const prof::LayerProfile& p, const std::string& output) {
  std::cout << fmt::format("\nlayers of {} (micro batch {}, the median of {} repetitions{}); their {} rounds "
                           "spread {}\n\n",
                           m.name, p.micro_batch, p.repetitions,
                           p.ranks > 1 ? fmt::format(", mean over {} ranks", p.ranks) : "", p.rounds, percent(p.spread));
  Table t;
  t.add_row({"layer", "kind", "forward", "backward-input", "backward-weight"});
  const auto time = [](double seconds) { return to_string(TimeNs::seconds(seconds)); };
  double f = 0, bi = 0, bw = 0;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const auto& l = p.layers[i];
    t.add_row({m.layers[i].name, std::string(model::to_string(m.layers[i].kind)), time(l.forward_s),
               time(l.backward_input_s), time(l.backward_weight_s)});
    f += l.forward_s;
    bi += l.backward_input_s;
    bw += l.backward_weight_s;
  }
  t.add_row({"total", "", time(f), time(bi), time(bw)});
  std::cout << t.render();
  if (p.rank_time_factors.size() > 1) {
    std::vector<std::string> factors;
    for (std::size_t r = 0; r < p.rank_time_factors.size(); ++r) {
      factors.push_back(fmt::format("rank {} {:.3f}", r, p.rank_time_factors[r]));
    }
    std::cout << fmt::format("\n  each rank's time over the mean: {}\n", fmt::join(factors, ", "));
  }
  if (p.adam_s_per_parameter > 0) {
    std::cout << fmt::format("\n  Adam step         {:.3g} ns per parameter ({} for the {} parameters)\n",
                             p.adam_s_per_parameter * 1e9,
                             time(p.adam_s_per_parameter * static_cast<double>(p.executor_parameters)),
                             p.executor_parameters);
  }
  std::cout << fmt::format("\nwrote {}\n", output);
}

void run_profile(const ProfileArgs& args) {
  executor::MpiSession mpi(nullptr, nullptr);
  try {
    // The executor's layers of the model: of the model a profiled model was profiled from, if given one.
    std::optional<model::Model> model;
    if (!args.model.empty()) model = model::executed_model(model::load_model_file(args.model));
    prof::ProfileOptions options;
    options.gemm_shapes = model ? prof::gemm_shapes_for_model(*model, args.micro_batch, args.backend)
                                : prof::default_gemm_shapes(args.backend);
    options.max_message_bytes = parse_size_flag("--max-message", args.max_message).count();
    options.fit_min_bytes = parse_size_flag("--fit-from", args.fit_from).count();
    const auto time = parse_time(args.time_per_measurement);
    if (!time.ok() || time.value.base() <= 0) {
      throw InputError({"--time-per-measurement " + args.time_per_measurement, 0, 0}, "",
                       time.ok() ? "must be positive" : time.error);
    }
    options.seconds_per_measurement = time.value.to_seconds();
    const std::int64_t memory = memory_per_rank(args, mpi.size());

    executor::BackendOptions backend_options;
    const std::unique_ptr<executor::Backend> backend = executor::make_backend(args.backend, backend_options);
    std::optional<prof::LayerProfile> layers;
    if (!args.model_output.empty()) {
      prof::LayerProfileOptions layer_options;
      layer_options.micro_batch = args.micro_batch;
      layer_options.repetitions = args.layer_repetitions;
      layers = prof::profile_layers_on_all_ranks(*backend, *model, layer_options);
      if (mpi.rank() == 0) {
        prof::ProfiledModelHeader model_header;
        model_header.command = command_line(args);
        model_header.host = host_name();
        model_header.utc_time = utc_now();
        model_header.profiled_from = model::executed_model_yaml(args.model);
        write_file_atomically(args.model_output, prof::profiled_model_yaml(*model, *layers, model_header));
      }
    }
    if (args.output.empty()) {
      if (mpi.rank() != 0) return;
      if (args.json) {
        std::cout << layers_json(*model, *layers, args.model_output).dump(2) << "\n";
      } else {
        print_layers(*model, *layers, args.model_output);
      }
      return;
    }
    const prof::ProfileResult result = prof::profile_machine(*backend, options);
    if (mpi.rank() != 0) return;
    prof::TopologyHeader header;
    header.host = host_name();
    header.name = args.name.empty() ? fmt::format("{} x{} on {} (profiled)", args.backend, result.ranks, header.host)
                                    : args.name;
    header.command = command_line(args);
    header.utc_time = utc_now();
    header.memory_bytes = memory;
    write_file_atomically(args.output, prof::calibrated_topology_yaml(result, header));
    if (args.json) {
      nlohmann::ordered_json j = result_json(result, args.output);
      if (layers) j["layer_profile"] = layers_json(*model, *layers, args.model_output);
      std::cout << j.dump(2) << "\n";
    } else {
      print_result(result, args.output);
      if (layers) print_layers(*model, *layers, args.model_output);
    }
  } catch (const InputError& e) {
    if (mpi.size() == 1) throw;
    if (mpi.rank() == 0) std::cerr << fmt::format("mpsim: error: {}\n", e.what()) << std::flush;
    executor::MpiSession::abort(kExitBadInput);
  } catch (const std::exception& e) {
    if (mpi.size() == 1) throw;
    // One failing rank ends the job, so the others do not wait for it until their timeout.
    std::cerr << fmt::format("mpsim: error: rank {}: {}\n", mpi.rank(), e.what()) << std::flush;
    executor::MpiSession::abort(kExitRunFailed);
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Measure this machine (a calibrated topology) and a model's layers (a profiled model)");
  cmd->add_option("--backend", args->backend, "cpu (Eigen + MPI) or cuda (cuBLAS + NCCL)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--ranks", args->ranks, "Launch N ranks with mpirun (without it: run inside the current mpirun)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--model", args->model, "Measure the GEMM shapes of this model (else a default set)");
  cmd->add_option("--micro-batch", args->micro_batch, "Samples per microbatch for the model's GEMM shapes and layer timings")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-o,--output", args->output, "Topology YAML to write");
  cmd->add_option("--model-out", args->model_output,
                  "Time every layer of --model (micro batch --micro-batch) and write it as a profiled model YAML");
  cmd->add_option("--layer-repetitions", args->layer_repetitions,
                  "Timed repetitions of each layer for --model-out (default 20: their median is kept; 5 rounds of them give the spread)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-message", args->max_message, "Largest ping-pong and all-reduce message (default 64 MiB)");
  cmd->add_option("--fit-from", args->fit_from,
                  "Smallest message the alpha-beta fit uses (default 4 KiB; smaller ones are only reported)");
  cmd->add_option("--time-per-measurement", args->time_per_measurement,
                  "Time a GEMM shape or the axpy is repeated for (default 200 ms)");
  cmd->add_option("--memory", args->memory, "Memory per rank for the topology (default: measured)");
  cmd->add_option("--name", args->name, "Cluster name in the topology");
  cmd->add_flag("--json", args->json, "Print the measurements as JSON");
  cmd->footer(
      "Example:\n"
      "  mpsim profile --ranks 2 --model configs/models/cpu-gpt-small.yaml -o profiled.yaml\n"
      "  mpsim simulate --topology profiled.yaml --model configs/models/cpu-gpt-small.yaml --plan P\n"
      "  mpsim profile --model configs/models/cpu-gpt-small.yaml --micro-batch 1 --model-out small-mb1.yaml\n"
      "  mpsim simulate --topology profiled.yaml --model small-mb1.yaml --plan P   (a plan with micro batch 1)");
  cmd->callback([args] {
    if (args->output.empty() && args->model_output.empty()) {
      throw InputError({"-o", 0, 0}, "", "give -o TOPOLOGY.yaml, --model-out MODEL.yaml, or both");
    }
    if (!args->model_output.empty() && args->model.empty()) {
      throw InputError({"--model-out", 0, 0}, "", "needs --model: the model whose layers are timed");
    }
    if (args->ranks > 0) {
      if (executor::started_by_mpi_launcher()) {
        throw InputError({"--ranks", 0, 0}, "", "already inside an MPI job: leave out --ranks, mpirun chose the ranks");
      }
      // Bad input is reported once, here, rather than by every rank.
      if (!args->model.empty()) static_cast<void>(model::load_model_file(args->model));
      static_cast<void>(parse_size_flag("--max-message", args->max_message));
      static_cast<void>(parse_size_flag("--fit-from", args->fit_from));
      if (!args->memory.empty()) static_cast<void>(parse_size_flag("--memory", args->memory));
      const int code = executor::launch_exit_status(executor::run_under_mpirun(args->ranks, forwarded_args(*args)));
      if (code != kExitOk) throw ExitWith{code};
      return;
    }
    run_profile(*args);
  });
}

}  // namespace mpsim::cli
