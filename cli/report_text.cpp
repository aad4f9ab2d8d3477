#include "cli/report_text.h"

#include <algorithm>
#include <iostream>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "planner/memory_margin.h"
#include "sim/core/text_file.h"
#include "sim/core/units.h"
#include "sim/plan/degrees_text.h"
#include "sim/plan/plan_check.h"
#include "sim/trace/trace_json.h"

namespace mpsim::cli {

namespace {

/// What each stage's peak holds (the GPUs the stage table shows): the static parts, held all step, the
/// activations at their largest, and the optimizer step's gradient copies where the plan has them (the
/// peak is the static parts plus the larger). Nothing when the report does not know it (a measured step).
/// `replicas`: with replica classes, each row's replicas (replica_text), which the table then shows.
void print_peak_breakdown(const std::vector<const trace::DeviceReport*>& devices,
                          const std::vector<std::string>& replicas = {}) {
  if (std::none_of(devices.begin(), devices.end(), [](const auto* d) { return d->memory.known(); })) return;
  std::cout << "\nPeak memory by stage:\n";
  Table table;
  std::vector<std::string> header{"stage", "weights", "gradients", "optimizer", "activations", "reserved"};
  // The optimizer step's fp32 gradient copies, where a plan has them: the peak is the static parts plus
  // the larger of the activations and these.
  const bool optimizer_step =
      std::any_of(devices.begin(), devices.end(), [](const auto* d) { return d->memory.optimizer_step > 0; });
  if (optimizer_step) header.push_back("optimizer step");
  if (!replicas.empty()) header.insert(header.begin() + 1, "replicas");
  table.add_row(header);
  const auto bytes = [](std::int64_t n) { return to_string(Bytes::bytes(n)); };
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const trace::MemoryBreakdown& m = devices[i]->memory;
    std::vector<std::string> row{std::to_string(devices[i]->stage), bytes(m.weights),     bytes(m.gradients),
                                 bytes(m.optimizer),                bytes(m.activations), bytes(m.reserved)};
    if (optimizer_step) row.push_back(bytes(m.optimizer_step));
    if (!replicas.empty()) row.insert(row.begin() + 1, replicas[i]);
    table.add_row(row);
  }
  std::cout << table.render();
}

/// Whether a slowdown what-if slows any GPU of the report: the stage tables then show each stage's
/// slowest GPU rather than its first.
bool any_slowed(const trace::Report& r, const std::function<double(const std::string&)>& slowdown_of) {
  return std::any_of(r.devices.begin(), r.devices.end(), [&](const auto& d) { return slowdown_of(d.id) != 1.0; });
}

/// A stage table's GPU: "node0/gpu1 (2.5x slow)" under a slowdown, else its name.
std::string shown_gpu(const std::string& id, double slowdown) {
  return slowdown != 1.0 ? fmt::format("{} ({:g}x slow)", id, slowdown) : id;
}

/// Data-parallel ranks as runs: "0", "1-3", "0,2-3".
std::string replica_text(const std::vector<int>& replicas) {
  std::string out;
  for (std::size_t i = 0; i < replicas.size();) {
    std::size_t j = i;
    while (j + 1 < replicas.size() && replicas[j + 1] == replicas[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(replicas[i]) : fmt::format("{}-{}", replicas[i], replicas[j]);
    i = j + 1;
  }
  return out;
}

/// Where replicas run apart (trace::Report::replica_classes): a row per stage and class of replicas,
/// with the class's replicas, microbatch count and GPU kind, then what each row's peak holds.
void print_replica_class_stages(const trace::Report& r,
                                const std::function<double(const std::string&)>& slowdown_of) {
  const bool slowed = any_slowed(r, slowdown_of);
  Table stages;
  stages.add_row({"stage", "replicas", "microbatches", "GPU kind", slowed ? "slowest GPU" : "first GPU", "GPUs", "busy",
                  "idle", "idle share", "peak memory"});
  std::vector<const trace::DeviceReport*> shown;
  std::vector<std::string> replicas;
  const std::size_t ranks = r.replica_classes.front().stages.size();
  for (std::size_t s = 0; s < ranks; ++s) {
    for (const trace::ReplicaClassReport& c : r.replica_classes) {
      const trace::DeviceReport& d = c.stages.at(s);
      stages.add_row({std::to_string(d.stage), replica_text(c.replicas), std::to_string(c.microbatches),
                      c.gpu_kinds.at(s), shown_gpu(d.id, slowdown_of(d.id)),
                      std::to_string(c.gpus_per_stage), to_string(TimeNs::seconds(d.busy_s)),
                      to_string(TimeNs::seconds(d.idle_s)), percent(d.bubble_fraction),
                      to_string(Bytes::bytes(d.peak_memory_bytes)) + (d.oom ? " OOM" : "")});
      shown.push_back(&d);
      replicas.push_back(replica_text(c.replicas));
    }
  }
  std::cout << stages.render();
  print_peak_breakdown(shown, replicas);
}

/// The GPU with the largest peak (the first of equals), or null without devices.
const trace::DeviceReport* peak_device(const trace::Report& r) {
  const auto worst = std::max_element(r.devices.begin(), r.devices.end(), [](const auto& a, const auto& b) {
    return a.peak_memory_bytes < b.peak_memory_bytes;
  });
  return worst == r.devices.end() ? nullptr : &*worst;
}

/// The band of the largest peak (calibration::memory_band), where the report breaks its memory down.
std::optional<calibration::MemoryBand> memory_band_of(const trace::Report& r) {
  const trace::DeviceReport* worst = peak_device(r);
  if (worst == nullptr || !worst->memory.known()) return std::nullopt;
  return calibration::memory_band(worst->peak_memory_bytes, worst->memory.reserved);
}

/// Whether a GPU's peak fits its memory only without the planner's default margin (memory_margin.h):
/// `mpsim plan` would not rank this plan.
bool within_memory_margin(const trace::Report& r) {
  if (r.oom) return false;
  return std::any_of(r.devices.begin(), r.devices.end(), [](const trace::DeviceReport& d) {
    return Bytes::bytes(d.peak_memory_bytes) >
           planner::usable_memory(Bytes::bytes(d.memory_capacity_bytes), Bytes(), planner::kDefaultMemoryMargin);
  });
}

/// A row per pipeline stage, shown by its first GPU (its slowest under a slowdown what-if), then what
/// each row's peak holds.
void print_stage_table(const Inputs& in, const trace::Report& r,
                       const std::function<double(const std::string&)>& slowdown_of) {
  const plan::Plan& p = *in.plan;
  const bool slowed = any_slowed(r, slowdown_of);
  std::vector<const trace::DeviceReport*> shown_devices;  // one per stage that has a device
  for (int s = 0; s < p.degrees[plan::Axis::Pipeline]; ++s) {
    auto it = std::find_if(r.devices.begin(), r.devices.end(), [s](const auto& d) { return d.stage == s; });
    if (it == r.devices.end()) continue;
    for (auto d = it; d != r.devices.end(); ++d) {
      if (d->stage == s && slowdown_of(d->id) > slowdown_of(it->id)) it = d;
    }
    shown_devices.push_back(&*it);
  }
  Table stages;
  stages.add_row({"stage", slowed ? "slowest GPU" : "first GPU", "GPUs", "busy", "idle", "idle share", "peak memory"});
  for (const trace::DeviceReport* d : shown_devices) {
    stages.add_row(
        {std::to_string(d->stage), shown_gpu(d->id, slowdown_of(d->id)), std::to_string(p.gpus() / p.degrees[plan::Axis::Pipeline]),
         to_string(TimeNs::seconds(d->busy_s)), to_string(TimeNs::seconds(d->idle_s)), percent(d->bubble_fraction),
         to_string(Bytes::bytes(d->peak_memory_bytes)) + (d->oom ? " OOM" : "")});
  }
  std::cout << stages.render();
  print_peak_breakdown(shown_devices);
}

}  // namespace


std::optional<calibration::StepBand> step_band_of(const Inputs& in, const plan::Plan& plan, const trace::Report& r) {
  const auto kinds = plan::job_gpu_kinds(in.cluster);
  if (kinds.empty()) return std::nullopt;
  std::vector<std::string_view> ids;
  for (const auto* kind : kinds) ids.emplace_back(kind->id);
  return calibration::step_band(r.step_time_s, calibration::prediction_group(in.model, plan), ids,
                                in.profile ? &*in.profile : nullptr);
}

std::optional<calibration::StepBand> step_band_of(const Inputs& in, const trace::Report& r) {
  if (!in.plan) return std::nullopt;
  return step_band_of(in, *in.plan, r);
}

void add_prediction_fields(nlohmann::ordered_json& json, const Inputs& in, const plan::Plan* plan,
                           const trace::Report& r) {
  if (const auto band = plan != nullptr ? step_band_of(in, *plan, r) : std::nullopt) {
    json["step_time_band_s"] = {band->low_s, band->high_s};
    json["calibrated"] = band->calibrated;
    json["band_basis"] = calibration::band_basis_text(*band);
  }
  if (const auto band = memory_band_of(r)) json["peak_memory_band_bytes"] = {band->low_bytes, band->high_bytes};
  json["memory_margin"] = planner::kDefaultMemoryMargin;
  json["within_memory_margin"] = within_memory_margin(r);
}

nlohmann::ordered_json prediction_json(const Inputs& in, const trace::Report& r) {
  nlohmann::ordered_json json = trace::report_json(r);
  add_prediction_fields(json, in, in.plan ? &*in.plan : nullptr, r);
  return json;
}

void print_report(const Inputs& in, const trace::Report& r) {
  const plan::Plan& p = *in.plan;
  std::cout << fmt::format("{} on {}: {}{}, {}, {} microbatches{} of {}\n\n", in.model.name,
                           in.cluster.name.empty() ? "the cluster" : in.cluster.name, plan::summary(p.degrees),
                           p.virtual_stages > 1 ? fmt::format(" (x{} virtual)", p.virtual_stages) : "",
                           plan::to_string(p.schedule), plan::microbatches_text(p),
                           p.uneven_shares() ? " (by data-parallel replica)" : "", p.micro_batch);
  std::cout << fmt::format("  step time     {}", to_string(TimeNs::seconds(r.step_time_s)));
  if (const auto spread = in.model.profile_spread) {
    // The band the profile's own rounds span, centred on the prediction.
    std::cout << fmt::format(" ({} to {}: the profile's rounds spread {})",
                             to_string(TimeNs::seconds(r.step_time_s * (1 - *spread / 2))),
                             to_string(TimeNs::seconds(r.step_time_s * (1 + *spread / 2))), percent(*spread));
  }
  std::cout << "\n";
  if (const auto band = step_band_of(in, r)) {
    std::cout << fmt::format("  band          {} to {} ({})\n", to_string(TimeNs::seconds(band->low_s)),
                             to_string(TimeNs::seconds(band->high_s)), calibration::band_basis_text(*band));
  }
  std::cout << fmt::format("  throughput    {:.1f} TFLOP/s per GPU, MFU {} ({:.1f} TFLOP/s executed, recomputation included)\n",
                           r.tflops_per_gpu, percent(r.mfu), r.hardware_tflops_per_gpu);
  std::cout << fmt::format("  idle          {} of all GPU time; pipeline bubble rate {}\n", percent(r.bubble_fraction),
                           percent(r.bubble_rate));
  if (r.communication_wait_fraction > 0) {
    // Exposed communication the idle share does not show: the stream is held while it waits.
    std::cout << fmt::format("  comm wait     {} of all GPU time waiting on in-layer collectives (tensor-parallel "
                             "reductions, ZeRO-3 gathers, context and expert exchanges, overlaps outlasting their "
                             "pass)\n",
                             percent(r.communication_wait_fraction));
  }
  if (const trace::DeviceReport* worst = peak_device(r)) {
    // The planner's margin said beside every peak: a plan within it fits here but may not in a run.
    const std::string margin = fmt::format("{:g}%", 100 * planner::kDefaultMemoryMargin);
    std::cout << fmt::format("  peak memory   {} of {} on {}{}\n", to_string(Bytes::bytes(worst->peak_memory_bytes)),
                             to_string(Bytes::bytes(worst->memory_capacity_bytes)), worst->id,
                             r.oom                      ? "  OUT OF MEMORY"
                             : within_memory_margin(r) ? fmt::format(" (within the planner's {} memory margin: a run "
                                                                     "may run out of memory)",
                                                                     margin)
                                                       : fmt::format(" (fits the planner's {} memory margin)", margin));
    if (const auto band = memory_band_of(r)) {
      std::cout << fmt::format("  memory band   {} to {} ({})\n", to_string(Bytes::bytes(band->low_bytes)),
                               to_string(Bytes::bytes(band->high_bytes)), calibration::memory_band_text(*band));
    }
  }
  std::cout << "\n";
  // With a slowdown what-if the stage row names its slowest GPU (the one the stage waits for, also
  // when replicas are folded), else its first.
  const auto slowdown_of = [&](const std::string& id) {
    const auto device = in.cluster.find(id);
    return device ? in.cluster.device(*device).slowdown : 1.0;
  };
  if (!r.replica_classes.empty()) {
    print_replica_class_stages(r, slowdown_of);
  } else {
    print_stage_table(in, r, slowdown_of);
  }
  if (!r.links.empty()) {
    std::vector<trace::LinkReport> links = r.links;
    // Ties in busy time are common: a flow keeps every link of its route busy as long as its slowest link
    // makes it last, and folded replicas share flows. The link that sets the pace carries the most time's
    // worth of traffic at its own bandwidth: it comes first (a slow NIC rather than the PCIe links before it).
    std::unordered_map<std::string, double> bandwidth_of;
    for (const topology::Link& l : in.cluster.links()) bandwidth_of.emplace(l.name, l.bandwidth.in_bytes_per_sec());
    const auto load_s = [&](const trace::LinkReport& l) {
      const auto it = bandwidth_of.find(l.id);
      return it == bandwidth_of.end() || it->second <= 0 ? 0.0 : static_cast<double>(l.bytes) / it->second;
    };
    std::stable_sort(links.begin(), links.end(), [&](const auto& a, const auto& b) {
      if (a.busy_s != b.busy_s) return a.busy_s > b.busy_s;
      if (load_s(a) != load_s(b)) return load_s(a) > load_s(b);
      return a.bytes > b.bytes;
    });
    std::cout << "\nBusiest links:\n";
    Table table;
    table.add_row({"link", "busy", "traffic"});
    for (std::size_t i = 0; i < std::min<std::size_t>(5, links.size()); ++i) {
      table.add_row({links[i].id, to_string(TimeNs::seconds(links[i].busy_s)), to_string(Bytes::bytes(links[i].bytes))});
    }
    std::cout << table.render();
  }
}

std::string breakdown_line(const planner::TimeBreakdown& b) {
  const auto share = [&](double x) { return b.step_s > 0 ? percent(x / b.step_s) : percent(0); };
  return fmt::format("compute {} ({}), bubble {} ({}), exposed communication {} ({})", seconds(b.compute_s),
                     share(b.compute_s), seconds(b.bubble_s), share(b.bubble_s), seconds(b.exposed_communication_s),
                     share(b.exposed_communication_s));
}

nlohmann::ordered_json breakdown_json(const planner::TimeBreakdown& b) {
  return {{"stage", b.stage},
          {"step_time_s", b.step_s},
          {"compute_s", b.compute_s},
          {"bubble_s", b.bubble_s},
          {"exposed_communication_s", b.exposed_communication_s}};
}

trace::LinkLanes link_lanes_named(const std::string& trace_links) {
  for (const auto& [name, value] : trace::kLinkLanesNames) {
    if (name == trace_links) return value;
  }
  return trace::LinkLanes::Busiest;
}

void write_trace_file(const std::string& path, const trace::Timeline& timeline, trace::Report report,
                      const std::function<nlohmann::ordered_json(const trace::Report&)>& report_object) {
  const trace::Report embedded = trace::with_traced_memory_timelines(std::move(report), timeline);
  AtomicFileWriter file(path, gzip_by_name(path));
  trace::write_chrome_trace(timeline, embedded, report_object(embedded),
                            [&file](std::string_view piece) { file.write(piece); });
  file.commit();
}

}  // namespace mpsim::cli
