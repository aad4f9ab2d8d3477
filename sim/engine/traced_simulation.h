#pragma once
/// A simulation whose timeline is to be written as a trace: the link lanes it keeps (`--trace-links`)
/// are chosen before the run that records, so the links it drops never take memory. At real-job size
/// the links carry almost every span (GPT-3 175B on 1024 H100: 3 million link transfers against
/// 23,000 op spans).
#include "sim/engine/simulator.h"
#include "sim/trace/link_lanes.h"

namespace mpsim::engine {

/// simulate() with options.record_timeline, the timeline holding the link lanes `links` keeps, as
/// trace::select_link_lanes would keep them from the whole timeline (the same lanes, spans and order).
/// `busiest` simulates twice: once to total each link's transfer time, then to record the chosen
/// links; the report is the second run's (the engine is deterministic, so it equals the first).
[[nodiscard]] Prediction simulate_traced(const topology::Cluster& cluster, const model::Model& model,
                                         const plan::Plan& plan, EngineOptions options, trace::LinkLanes links);

}  // namespace mpsim::engine
