#include "sim/trace/trace_json.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace mpsim::trace {

namespace {

/// A device's figures as the report's `devices` lists them.
nlohmann::ordered_json device_json(const DeviceReport& d) {
  nlohmann::ordered_json device = {{"id", d.id},
                                   {"stage", d.stage},
                                   {"busy_s", d.busy_s},
                                   {"idle_s", d.idle_s},
                                   {"bubble_fraction", d.bubble_fraction},
                                   {"peak_memory_bytes", d.peak_memory_bytes},
                                   {"memory_capacity_bytes", d.memory_capacity_bytes},
                                   {"oom", d.oom},
                                   {"communication_wait_s", d.communication_wait_s}};
  if (d.memory.known()) {
    device["memory"] = {{"weights", d.memory.weights},     {"gradients", d.memory.gradients},
                        {"optimizer", d.memory.optimizer}, {"activations", d.memory.activations},
                        {"reserved", d.memory.reserved}};
    if (d.memory.optimizer_step > 0) device["memory"]["optimizer_step"] = d.memory.optimizer_step;
  }
  if (!d.memory_timeline.empty()) {
    nlohmann::ordered_json timeline = nlohmann::ordered_json::array();
    for (const MemoryPoint& p : d.memory_timeline) timeline.push_back({p.time_s, p.bytes});
    device["memory_timeline"] = std::move(timeline);
  }
  return device;
}

}  // namespace

nlohmann::ordered_json report_json(const Report& r) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["step_time_s"] = r.step_time_s;
  out["bubble_fraction"] = r.bubble_fraction;
  out["bubble_rate"] = r.bubble_rate;
  out["communication_wait_fraction"] = r.communication_wait_fraction;
  out["tflops_per_gpu"] = r.tflops_per_gpu;
  out["hardware_tflops_per_gpu"] = r.hardware_tflops_per_gpu;
  out["mfu"] = r.mfu;
  out["peak_memory_bytes"] = r.peak_memory_bytes;
  out["oom"] = r.oom;
  ordered_json devices = ordered_json::array();
  for (const auto& d : r.devices) devices.push_back(device_json(d));
  out["devices"] = devices;
  if (!r.replica_classes.empty()) {
    ordered_json classes = ordered_json::array();
    for (const ReplicaClassReport& c : r.replica_classes) {
      ordered_json stages = ordered_json::array();
      for (std::size_t s = 0; s < c.stages.size(); ++s) {
        ordered_json stage = device_json(c.stages[s]);
        stage["gpu_kind"] = s < c.gpu_kinds.size() ? c.gpu_kinds[s] : std::string();
        stage["gpus"] = c.gpus_per_stage;
        stages.push_back(std::move(stage));
      }
      classes.push_back({{"replicas", c.replicas}, {"microbatches", c.microbatches}, {"stages", std::move(stages)}});
    }
    out["replica_classes"] = std::move(classes);
  }
  ordered_json links = ordered_json::array();
  for (const auto& l : r.links) links.push_back({{"id", l.id}, {"bytes", l.bytes}, {"busy_s", l.busy_s}});
  out["links"] = links;
  if (!r.plan.document.empty()) out["plan"] = ordered_json::parse(r.plan.document);
  if (r.plan.expert > 1) out["expert_load"] = r.plan.expert_load;
  return out;
}

namespace {

std::string span_name(const Span& s) {
  const SpanTraits& t = traits(s.kind);
  std::string name(t.trace_name);
  if (!t.numbered) return name;
  if (s.microbatch >= 0) name += fmt::format("{}", s.microbatch);
  if (s.chunk >= 0) name += fmt::format(".{}", s.chunk);
  return name;
}

/// Microseconds with nanosecond resolution, printed exactly (no float rounding differences).
std::string microseconds(std::int64_t ns) {
  const bool negative = ns < 0;
  const std::int64_t a = negative ? -ns : ns;
  return fmt::format("{}{}.{:03d}", negative ? "-" : "", a / 1000, static_cast<int>(a % 1000));
}

/// Process ids by first appearance of a process name: deterministic.
std::map<std::string, int> process_ids(const Timeline& timeline) {
  std::map<std::string, int> pids;
  for (const Lane& lane : timeline.lanes) pids.try_emplace(lane.process, static_cast<int>(pids.size()) + 1);
  return pids;
}

/// Whether device `id` ("node0/gpu3") has lanes in the timeline ("gpu3 ..." threads of process "node0").
bool has_lanes(const Timeline& timeline, const std::string& id) {
  const auto slash = id.find('/');
  if (slash == std::string::npos) return false;
  const std::string_view process = std::string_view(id).substr(0, slash);
  const std::string prefix = id.substr(slash + 1) + " ";
  return std::any_of(timeline.lanes.begin(), timeline.lanes.end(),
                     [&](const Lane& l) { return l.process == process && l.thread.starts_with(prefix); });
}

/// Each device with lanes in the trace (a thread "gpu3 ..." under its node's process) and a memory
/// timeline: a counter track "gpu3 memory" of "C" events, one per change point, which Perfetto draws
/// as a graph of the memory through the step.
template <typename Append>
void append_memory_counters(const Timeline& timeline, const Report& report, const std::map<std::string, int>& pids,
                            const Append& append) {
  for (const DeviceReport& d : report.devices) {
    if (d.memory_timeline.empty() || !has_lanes(timeline, d.id)) continue;
    const auto slash = d.id.find('/');
    const int pid = pids.at(d.id.substr(0, slash));
    const std::string name = nlohmann::json(d.id.substr(slash + 1) + " memory").dump();
    for (const MemoryPoint& p : d.memory_timeline) {
      append(fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{"bytes":{}}}}})", name, pid,
                         microseconds(std::llround(p.time_s * 1e9)), p.bytes));
    }
  }
}

/// Events joined with ",\n", handed to a writer in pieces of about kPieceBytes.
class EventWriter {
 public:
  explicit EventWriter(const std::function<void(std::string_view)>& write) : write_(write) {}
  void raw(std::string_view text) {
    buffer_ += text;
    if (buffer_.size() >= kPieceBytes) flush();
  }
  void event(std::string_view text) {
    if (!first_) buffer_ += ",\n";
    first_ = false;
    raw(text);
  }
  void flush() {
    if (!buffer_.empty()) write_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
  const std::function<void(std::string_view)>& write_;
  std::string buffer_;
  bool first_ = true;
};

}  // namespace

std::string chrome_trace(const Timeline& timeline, const Report& report) {
  return chrome_trace(timeline, report, report_json(report));
}

std::string chrome_trace(const Timeline& timeline, const Report& report, const nlohmann::ordered_json& report_object) {
  std::string out;
  write_chrome_trace(timeline, report, report_object, [&out](std::string_view piece) { out += piece; });
  return out;
}

void write_chrome_trace(const Timeline& timeline, const Report& report, const nlohmann::ordered_json& report_object,
                        const std::function<void(std::string_view)>& write) {
  // Thread ids by lane order: deterministic.
  const std::map<std::string, int> pids = process_ids(timeline);
  std::vector<int> lane_pid(timeline.lanes.size());
  for (std::size_t i = 0; i < timeline.lanes.size(); ++i) lane_pid[i] = pids.at(timeline.lanes[i].process);
  EventWriter out(write);
  out.raw("{\"traceEvents\":[\n");
  const auto append = [&](const std::string& event) { out.event(event); };
  // Metadata: process and thread names, in a stable order.
  std::vector<std::pair<int, std::string>> processes;
  for (const auto& [name, pid] : pids) processes.emplace_back(pid, name);
  std::sort(processes.begin(), processes.end());
  for (const auto& [pid, name] : processes) {
    append(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                       nlohmann::json(name).dump()));
    append(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid,
                       pid));
  }
  for (std::size_t i = 0; i < timeline.lanes.size(); ++i) {
    append(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", lane_pid[i],
                       i + 1, nlohmann::json(timeline.lanes[i].thread).dump()));
    append(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                       lane_pid[i], i + 1, i + 1));
  }
  for (const Span& s : timeline.spans) {
    // args.op, the op's index in its rank's stream, only on spans of ops (not on link traffic).
    const std::string op = s.op >= 0 ? fmt::format(R"(,"op":{})", s.op) : std::string();
    append(fmt::format(
        R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"mb":{},"chunk":{},"stage":{},"bytes":{}{}}}}})",
        span_name(s), to_string(s.kind), lane_pid[s.lane], s.lane + 1, microseconds(s.start_ns),
        microseconds(s.end_ns - s.start_ns), s.microbatch, s.chunk, s.stage, s.bytes, op));
  }
  append_memory_counters(timeline, report, pids, append);
  out.raw("\n],\"displayTimeUnit\":\"ms\",\"mpsim\":");
  out.raw(report_object.dump());
  out.raw("}\n");
  out.flush();
}

Report with_traced_memory_timelines(Report report, const Timeline& timeline) {
  for (DeviceReport& d : report.devices) {
    if (d.memory_timeline.empty() || has_lanes(timeline, d.id)) continue;
    d.memory_timeline.clear();
    d.memory_timeline.shrink_to_fit();
  }
  return report;
}

}  // namespace mpsim::trace
