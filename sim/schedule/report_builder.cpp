#include "sim/schedule/report_builder.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/plan/layer_recompute.h"
#include "sim/plan/plan_json.h"
#include "sim/schedule/report_parts.h"

namespace mpsim::schedule {

namespace {

trace::PlanSummary plan_summary(const plan::Plan& p) {
  return {plan::plan_json(p).dump(),
          p.degrees[plan::Axis::Tensor],
          p.degrees[plan::Axis::Pipeline],
          p.degrees[plan::Axis::Data],
          p.virtual_stages,
          p.microbatches,
          p.micro_batch,
          p.global_batch,
          std::string(plan::to_string(p.schedule)),
          std::string(model::to_string(p.recompute)),
          p.zero,
          std::string(plan::to_string(p.precision)),
          std::string(plan::to_string(p.attention)),
          p.attention_kernel ? std::string(topology::to_string(*p.attention_kernel)) : std::string(),
          p.degrees[plan::Axis::Context],
          p.degrees[plan::Axis::Expert],
          p.degrees[plan::Axis::ExpertTensor],
          p.expert_load()};
}

}  // namespace


StepFlops step_flops(const model::Model& model, const plan::Plan& plan) {
  Flops recomputed;
  const std::vector<plan::LayerRecompute> rules = plan::layer_recompute(plan, model);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const model::Layer& layer = model.layers[i];
    const model::Recompute replayed = model::replayed_recompute(
        model::score_recompute(rules[i].rule, plan.recompute_modules), plan.attention == plan::AttentionKernel::Flash);
    recomputed += model::recomputed_flops(model, layer, replayed);
    if (model::traits(plan.recompute).takes_modules) {
      // Per sample: one sample on one tensor rank of 1.
      recomputed += model::module_recomputation(layer, 1, 1, false, plan.recompute_modules).matmul_flops;
    }
  }
  StepFlops out;
  out.model = model.training_flops_per_sample() * static_cast<double>(plan.global_batch);
  out.executed = out.model + recomputed * static_cast<double>(plan.global_batch);
  return out;
}

trace::Report build_report(double step_s, std::vector<DeviceActivity> devices, const StepFlops& flops,
                           std::optional<FlopsPerSec> peak, const plan::Plan& plan, std::vector<trace::LinkReport> links) {
  trace::Report r;
  r.step_time_s = step_s;
  std::int64_t longest_span = 0;
  double pipeline_busy = 0;
  for (DeviceActivity& a : devices) {
    trace::DeviceReport d;
    d.id = a.id;
    d.stage = a.stage;
    d.busy_s = static_cast<double>(a.busy_ns) * 1e-9;
    d.communication_wait_s = static_cast<double>(a.communication_wait_ns) * 1e-9;
    set_idle(d, step_s);
    d.peak_memory_bytes = a.peak_memory_bytes;
    d.memory_capacity_bytes = a.memory_capacity_bytes;
    d.memory = a.memory;
    d.memory_timeline = std::move(a.memory_timeline);
    d.oom = d.memory_capacity_bytes > 0 && d.peak_memory_bytes > d.memory_capacity_bytes;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, d.peak_memory_bytes);
    r.oom = r.oom || d.oom;
    r.devices.push_back(std::move(d));
    if (a.represents_stage) {
      longest_span = std::max(longest_span, a.last_end_ns - std::max<std::int64_t>(a.first_start_ns, 0));
      pipeline_busy += static_cast<double>(a.pipeline_busy_ns);
    }
  }
  r.bubble_fraction = idle_share(r.devices, step_s);
  r.communication_wait_fraction = communication_wait_share(r.devices, step_s);
  r.bubble_rate = zero_bubble_rate(longest_span, pipeline_busy, plan.degrees[plan::Axis::Pipeline]);
  const double gpus = static_cast<double>(devices.size());
  if (step_s > 0 && gpus > 0) {
    r.tflops_per_gpu = flops.model.count() / step_s / gpus * 1e-12;
    r.hardware_tflops_per_gpu = flops.executed.count() / step_s / gpus * 1e-12;
    if (peak) r.mfu = flops.model.count() / step_s / gpus / peak->in_flop_per_sec();
  }
  r.links = std::move(links);
  r.plan = plan_summary(plan);
  return r;
}

}  // namespace mpsim::schedule
