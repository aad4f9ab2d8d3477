// mpsim topo check|show|route|import
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/table.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/topology/import/import.h"
#include "sim/topology/route_table.h"
#include "sim/topology/topology_loader.h"
#include "sim/topology/topology_writer.h"

namespace mpsim::cli {
namespace {

using nlohmann::ordered_json;
using topology::Cluster;
using topology::DeviceId;
using topology::Route;

DeviceId require_device(const Cluster& cluster, const std::string& file, const std::string& name) {
  if (auto id = cluster.find(name)) return *id;
  throw InputError({file, 0, 0}, "", fmt::format("no device named '{}' (devices are named like node0/gpu0)", name));
}

ordered_json route_json(const Cluster& cluster, const Route& r) {
  ordered_json hops = ordered_json::array();
  for (const DeviceId h : r.hops) hops.push_back(cluster.device(h).name);
  ordered_json links = ordered_json::array();
  for (const auto l : r.links) links.push_back(cluster.link(l).name);
  return ordered_json{{"src", cluster.device(r.src).name},
                      {"dst", cluster.device(r.dst).name},
                      {"bandwidth_bytes_per_s", r.bandwidth.in_bytes_per_sec()},
                      {"latency_s", r.latency.to_seconds()},
                      {"path_class", std::string(to_string(r.path_class))},
                      {"hops", hops},
                      {"links", links}};
}

std::string gpu_summary(const Cluster& cluster) {
  std::map<std::string, int> kinds;
  for (const DeviceId g : cluster.gpus()) ++kinds[cluster.gpu_kind_of(g).id];
  std::string out;
  for (const auto& [kind, n] : kinds) out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", n, kind);
  return out;
}

/// GPUs whose pairwise routes `show` prints: the first node's, plus the first GPU of the second node.
std::vector<DeviceId> matrix_gpus(const Cluster& cluster) {
  std::vector<DeviceId> gpus = cluster.gpus_of_node(0);
  if (cluster.node_count > 1) {
    const auto second = cluster.gpus_of_node(1);
    if (!second.empty()) gpus.push_back(second.front());
  }
  return gpus;
}

void run_topo_check(const std::vector<std::string>& files) {
  int failed = 0;
  for (const auto& file : files) {
    try {
      const Cluster cluster = topology::load_topology_file(file);
      std::cout << fmt::format("{}: ok: {} node{}, {} GPUs ({}), {} devices, {} links\n", file, cluster.node_count,
                               cluster.node_count == 1 ? "" : "s", cluster.gpus().size(), gpu_summary(cluster),
                               cluster.devices().size(), cluster.links().size());
    } catch (const InputError& e) {
      std::cerr << fmt::format("mpsim: error: {}\n", e.what());
      ++failed;
    }
  }
  if (failed > 0) {
    // Each error has had its line; a summary only helps when several files were checked.
    if (files.size() > 1) std::cerr << fmt::format("mpsim: error: {} of {} topology files are invalid\n", failed, files.size());
    throw ExitWith{kExitBadInput};
  }
}

/// The topology of `file` with `--set topology.KEY=VALUE` overrides applied (as simulate applies them).
Cluster load_with_sets(const std::string& file, const std::vector<std::string>& sets) {
  std::vector<Override> overrides;
  for (const auto& s : sets) {
    overrides.push_back(parse_override(s, "--set"));
    if (overrides.back().target != "topology") {
      throw InputError({overrides.back().origin, 0, 0}, "", "topo commands override topology fields only (topology.KEY=VALUE)");
    }
  }
  return load_cluster(file, overrides);
}

void run_topo_show(const std::string& file, const std::vector<std::string>& sets, bool json) {
  const Cluster cluster = load_with_sets(file, sets);
  const std::vector<DeviceId> gpus = matrix_gpus(cluster);
  const topology::RouteTable routes(cluster, gpus);
  if (json) {
    ordered_json out;
    out["name"] = cluster.name;
    out["nodes"] = cluster.node_count;
    out["gpus"] = cluster.gpus().size();
    ordered_json kinds = ordered_json::array();
    for (const auto& k : cluster.gpu_kinds()) {
      ordered_json peak;
      for (const auto& [dtype, rate] : k.peak) peak[std::string(to_string(dtype))] = rate.in_flop_per_sec();
      kinds.push_back({{"id", k.id}, {"name", k.name}, {"peak_flop_per_s", peak},
                       {"memory_bytes", k.memory.count()},
                       {"memory_bandwidth_bytes_per_s", k.memory_bandwidth.in_bytes_per_sec()},
                       {"matmul_efficiency", k.matmul_efficiency}, {"sms", k.sm_count}});
    }
    out["gpu_kinds"] = kinds;
    ordered_json devices = ordered_json::array();
    for (const auto& d : cluster.devices()) {
      devices.push_back({{"id", d.name}, {"kind", to_string(d.kind)}});
      if (d.slowdown != 1.0) devices.back()["slowdown"] = d.slowdown;  // a what-if
    }
    out["devices"] = devices;
    ordered_json links = ordered_json::array();
    for (const auto& l : cluster.links()) {
      links.push_back({{"id", l.name}, {"kind", to_string(l.kind)}, {"a", cluster.device(l.a).name},
                       {"b", cluster.device(l.b).name}, {"bandwidth_bytes_per_s", l.bandwidth.in_bytes_per_sec()},
                       {"latency_s", l.latency.to_seconds()},
                       {"duplex", l.duplex == topology::Duplex::Full ? "full" : "half"}});
      if (l.down) links.back()["down"] = true;  // a what-if
    }
    out["links"] = links;
    ordered_json names = ordered_json::array();
    ordered_json bandwidth = ordered_json::array();
    ordered_json classes = ordered_json::array();
    for (const DeviceId a : gpus) {
      names.push_back(cluster.device(a).name);
      ordered_json bw_row = ordered_json::array();
      ordered_json class_row = ordered_json::array();
      for (const DeviceId b : gpus) {
        const auto r = routes.route(a, b);
        bw_row.push_back(a == b || !r ? 0.0 : r->bandwidth.in_bytes_per_sec());
        class_row.push_back(r ? std::string(to_string(r->path_class)) : "none");
      }
      bandwidth.push_back(bw_row);
      classes.push_back(class_row);
    }
    out["gpu_matrix"] = {{"gpus", names}, {"bandwidth_bytes_per_s", bandwidth}, {"path_class", classes}};
    std::cout << out.dump(2) << "\n";
    return;
  }

  std::cout << fmt::format("{}\n", cluster.name.empty() ? file : cluster.name);
  std::cout << fmt::format("  {} node{}, {} GPUs: {}\n", cluster.node_count, cluster.node_count == 1 ? "" : "s",
                           cluster.gpus().size(), gpu_summary(cluster));
  for (const auto& k : cluster.gpu_kinds()) {
    std::string peaks;
    for (const auto& [dtype, rate] : k.peak) peaks += fmt::format("{}{} {}", peaks.empty() ? "" : ", ", to_string(dtype), to_string(rate));
    std::cout << fmt::format("  {}: {}; {} HBM at {}; {}\n", k.id, k.name, to_string(k.memory),
                             to_string(k.memory_bandwidth), peaks);
  }
  std::map<std::string, int> device_counts;
  for (const auto& d : cluster.devices()) ++device_counts[std::string(to_string(d.kind))];
  std::string counts;
  for (const auto& [kind, n] : device_counts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, kind);
  std::cout << fmt::format("  devices: {}\n", counts);
  std::map<std::pair<std::string, double>, int> link_counts;
  for (const auto& l : cluster.links()) ++link_counts[{std::string(to_string(l.kind)), l.bandwidth.in_bytes_per_sec()}];
  std::cout << "  links:\n";
  for (const auto& [key, n] : link_counts) {
    std::cout << fmt::format("    {:>6} x {:<6} {}\n", n, key.first, to_string(BytesPerSec::bytes_per_sec(key.second)));
  }
  // What-ifs on single devices and links (instance_override.h).
  for (const auto& d : cluster.devices()) {
    if (d.slowdown != 1.0) std::cout << fmt::format("  {} is {:g}x slow\n", d.name, d.slowdown);
  }
  for (const auto& l : cluster.links()) {
    if (l.down) std::cout << fmt::format("  {} is down\n", l.name);
  }
  std::cout << "\nBandwidth between GPUs (one direction) and path class:\n";
  Table table;
  std::vector<std::string> header{""};
  for (const DeviceId g : gpus) header.push_back(cluster.device(g).name);
  table.add_row(header);
  for (const DeviceId a : gpus) {
    std::vector<std::string> row{cluster.device(a).name};
    for (const DeviceId b : gpus) {
      const auto r = routes.route(a, b);
      if (a == b) row.emplace_back("X");
      else if (!r) row.emplace_back("none");
      else row.push_back(fmt::format("{} {}", to_string(r->path_class), to_string(r->bandwidth)));
    }
    table.add_row(row);
  }
  std::cout << table.render();
}

void run_route(const std::string& file, const std::vector<std::string>& sets, const std::string& src,
               const std::string& dst, bool json) {
  const Cluster cluster = load_with_sets(file, sets);
  const DeviceId a = require_device(cluster, file, src);
  const DeviceId b = require_device(cluster, file, dst);
  const auto r = topology::find_route(cluster, a, b);
  if (!r) throw std::runtime_error(fmt::format("no route from {} to {}", src, dst));
  if (json) {
    std::cout << route_json(cluster, *r).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} -> {}: {}, {} one way, latency {}, {} hops\n", src, dst, to_string(r->path_class),
                           to_string(r->bandwidth), to_string(r->latency), r->links.size());
  for (std::size_t i = 0; i < r->links.size(); ++i) {
    const auto& link = cluster.link(r->links[i]);
    std::cout << fmt::format("  {:<28} -> {:<28} {:<7} {}\n", cluster.device(r->hops[i]).name,
                             cluster.device(r->hops[i + 1]).name, to_string(link.kind), to_string(link.bandwidth));
  }
}

struct TopoImportArgs {
  std::string file, gpu, nic_bandwidth, output;
  std::vector<std::string> exclude_nics;
  bool all_nics = false;
};

void run_topo_import(const TopoImportArgs& args) {
  const std::string& output = args.output;
  topology::import::ImportOptions options;
  options.gpu_kind = args.gpu;
  if (!args.nic_bandwidth.empty()) {
    const auto parsed = parse_bandwidth(args.nic_bandwidth);
    if (!parsed.ok()) throw InputError({"--nic-bandwidth", 0, 0}, "", parsed.error);
    options.nic_bandwidth = parsed.value;
  }
  options.exclude_nics = args.exclude_nics;
  options.all_nics = args.all_nics;
  const std::string& file = args.file;
  const topology::TopologySpec spec = topology::import::import_topology_file(file, options);
  (void)topology::build_cluster(spec);  // refuse to write a topology that would not load
  const std::string yaml = topology::write_topology_yaml(spec);
  if (output == "-") {
    std::cout << yaml;
  } else {
    write_file_atomically(output, yaml);
    std::cerr << fmt::format("wrote {}\n", output);
  }
}

}  // namespace

void add_topo_commands(CLI::App& app) {
  CLI::App* topo = app.add_subcommand("topo", "Cluster topologies: check, show, route, import");
  topo->require_subcommand(1);

  auto* check = topo->add_subcommand("check", "Validate topology files");
  auto files = std::make_shared<std::vector<std::string>>();
  check->add_option("files", *files, "Topology YAML files")->required();
  check->callback([files] { run_topo_check(*files); });

  struct ShowArgs {
    std::string file;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto show_args = std::make_shared<ShowArgs>();
  auto* show = topo->add_subcommand("show", "Devices, links and the bandwidth matrix between GPUs");
  show->add_option("file", show_args->file, "Topology YAML file")->required();
  show->add_option("--set", show_args->sets, "Override a topology field first: topology.nodes=4");
  show->add_flag("--json", show_args->json, "Print JSON");
  show->callback([show_args] { run_topo_show(show_args->file, show_args->sets, show_args->json); });

  struct RouteArgs {
    std::string file, src, dst;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto route_args = std::make_shared<RouteArgs>();
  auto* route = topo->add_subcommand("route", "Path, bottleneck bandwidth and latency between two devices");
  route->add_option("file", route_args->file, "Topology YAML file")->required();
  route->add_option("src", route_args->src, "Source device, e.g. node0/gpu0")->required();
  route->add_option("dst", route_args->dst, "Destination device, e.g. node1/gpu0")->required();
  route->add_option("--set", route_args->sets, "Override a topology field first: topology.nodes=4");
  route->add_flag("--json", route_args->json, "Print JSON");
  route->callback([route_args] {
    run_route(route_args->file, route_args->sets, route_args->src, route_args->dst, route_args->json);
  });

  auto import_args = std::make_shared<TopoImportArgs>();
  auto* import = topo->add_subcommand("import", "Write a topology YAML from `nvidia-smi topo -m` text or NCCL's topology XML");
  import->add_option("file", import_args->file, "nvidia-smi topo -m output, or NCCL_TOPO_DUMP_FILE XML")->required();
  import->add_option("--gpu", import_args->gpu, "GPU kind (nvidia-smi does not print the model), e.g. a100-80gb");
  import->add_option("--nic-bandwidth", import_args->nic_bandwidth, "NIC port speed, e.g. \"200 Gb/s\"");
  import->add_option("--exclude-nic", import_args->exclude_nics,
                     "Leave out this NIC (its name in the input, NIC8, or its device, mlx5_8); repeatable");
  import->add_flag("--all-nics", import_args->all_nics,
                   "Keep NICs that share no PCIe switch with a GPU (by default: storage or front-end, left out)");
  import->add_option("-o,--output", import_args->output, "Output YAML file ('-' for standard output)")->required();
  import->callback([import_args] { run_topo_import(*import_args); });
}

}  // namespace mpsim::cli
