#include "planner/search_space.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/core/input_error.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"

namespace mpsim::planner {
namespace {

using plan::PlanSpec;
using plan::ScheduleKind;

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) out.push_back(k);
  }
  return out;
}

bool resolves(const PlanSpec& spec, const topology::Cluster& cluster, const model::Model& model) {
  try {
    (void)plan::resolve_plan(spec, cluster, model);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

/// On a cluster of several GPU kinds, the same cluster at its first GPU's kind: a plan of one stage
/// spans every kind, which resolve_plan() refuses (mixed_stage_error), so the rules of one axis are
/// asked of this view instead.
topology::Cluster one_kind_view(const topology::Cluster& cluster) {
  return cluster.with_every_gpu_as(cluster.device(cluster.gpus().front()).gpu_kind);
}

/// Tensor degrees resolve_plan() accepts: it checks t alone on a plan that is otherwise trivially valid
/// (no pipeline, one microbatch of one sample per replica).
bool tensor_degree_valid(int t, const topology::Cluster& cluster, const model::Model& model) {
  if (plan::job_gpu_kinds(cluster).size() > 1) return tensor_degree_valid(t, one_kind_view(cluster), model);
  PlanSpec spec;
  spec.write(plan::Axis::Tensor, t);
  spec.write(plan::Axis::Pipeline, 1);
  spec.micro_batch = 1;
  spec.microbatches = 1;
  return resolves(spec, cluster, model);
}

/// The degrees of one candidate layout.
using Shape = plan::Degrees;

class Enumerator {
 public:
  Enumerator(const topology::Cluster& cluster, const model::Model& model, const SearchSpaceOptions& options)
      : cluster_(cluster),
        model_(model),
        options_(options),
        gpus_(static_cast<int>(cluster.gpus().size())),
        layers_(plan::partitionable_layer_count(model)),
        schedules_(options.schedules.empty() ? default_schedule_kinds() : options.schedules) {
    // The precisions the GPU runs GEMMs in (resolve_plan() refuses the others); unset: the model's.
    // On a cluster of several kinds, every kind runs them.
    const std::vector<const topology::GpuKind*> kinds = plan::job_gpu_kinds(cluster);
    several_kinds_ = kinds.size() > 1;
    for (const plan::Precision p : options.precisions) {
      const bool runs = !kinds.empty() && std::all_of(kinds.begin(), kinds.end(), [&](const topology::GpuKind* gpu) {
        return gpu->peak_for(plan::gemm_dtype(p)).has_value();
      });
      if (runs) precisions_.emplace_back(p);
    }
    if (options.precisions.empty()) precisions_.emplace_back(std::nullopt);
  }

  SearchSpace run() {
    if (gpus_ == 0 || model_.layers.empty() || options_.global_batch < 1) return out_;
    const int per_node = static_cast<int>(cluster_.gpus_of_node(cluster_.device(cluster_.gpus().front()).node).size());
    for (const int t : divisors(per_node)) {
      if (options_.max_tensor > 0 && t > options_.max_tensor) continue;
      if (!allowed(plan::Axis::Tensor, t)) continue;
      if (gpus_ % t != 0) continue;
      if (mirror() && !tensor_degree_valid(t, cluster_, model_)) continue;
      out_.tensor_degrees.push_back(t);
      for (const int c : divisors(gpus_ / t)) {
        if (!context_degree_searched(c)) continue;
        for (const int p : divisors(gpus_ / (t * c))) {
          if (!allowed(plan::Axis::Pipeline, p)) continue;
          if (mirror() && plan::stage_count_error(layers_, p, 1, false)) continue;
          const int d = gpus_ / (t * c * p);
          if (options_.global_batch % d != 0) continue;
          for (const auto& [e, et] : expert_degrees(t, c, d)) {
            add_batches(Shape{}
                            .set(plan::Axis::Tensor, t)
                            .set(plan::Axis::Context, c)
                            .set(plan::Axis::Pipeline, p)
                            .set(plan::Axis::Data, d)
                            .set(plan::Axis::Expert, e)
                            .set(plan::Axis::ExpertTensor, et));
          }
        }
      }
    }
    return out_;
  }

 private:
  [[nodiscard]] bool mirror() const noexcept { return options_.rules == SpaceRules::Mirror; }
  /// Whether `degree` is one `axis` may take (any, unless the options list the axis's degrees).
  [[nodiscard]] bool allowed(plan::Axis axis, int degree) const {
    const auto only = options_.only_degrees.find(axis);
    return only == options_.only_degrees.end() ||
           std::find(only->second.begin(), only->second.end(), degree) != only->second.end();
  }
  [[nodiscard]] const model::MoeShape* moe() const noexcept {
    return model_.shape && model_.shape->moe ? &*model_.shape->moe : nullptr;
  }

  /// Context degrees: every divisor with the raw rules; with mirrored rules those resolve_plan accepts
  /// (seq_len divisible by 2c) with at least min_context_tokens per rank.
  [[nodiscard]] bool context_degree_searched(int c) const {
    if (options_.max_context > 0 && c > options_.max_context) return false;
    if (!allowed(plan::Axis::Context, c)) return false;
    if (c == 1) return true;
    if (!model_.shape) return false;
    const std::int64_t seq = model_.shape->seq_len;
    if (!options_.only_degrees.contains(plan::Axis::Context) && seq / c < options_.min_context_tokens) return false;
    return !mirror() || seq % (2 * c) == 0;
  }

  /// (expert, expert_tensor) pairs: (1, t) for dense models; for MoE models every divisor of the
  /// experts with expert_tensor 1 or t, folded into t x c x d as Megatron requires.
  [[nodiscard]] std::vector<std::pair<int, int>> expert_degrees(int t, int c, int d) const {
    const model::MoeShape* m = moe();
    if (m == nullptr) return {{1, t}};
    std::vector<std::pair<int, int>> out;
    for (const int e : divisors(static_cast<int>(m->experts))) {
      if (options_.max_expert > 0 && e > options_.max_expert) continue;
      if (!allowed(plan::Axis::Expert, e)) continue;
      for (const int et : t > 1 ? std::vector<int>{1, t} : std::vector<int>{1}) {
        if (mirror()) {
          if (m->expert_ffn % et != 0) continue;
          plan::Degrees degrees;
          degrees.set(plan::Axis::Tensor, t)
              .set(plan::Axis::Context, c)
              .set(plan::Axis::Data, d)
              .set(plan::Axis::Expert, e)
              .set(plan::Axis::ExpertTensor, et);
          if (plan::degrees_error(degrees)) continue;
        }
        out.emplace_back(e, et);
      }
    }
    return out;
  }

  void add_batches(const Shape& shape) {
    const int per_replica = options_.global_batch / shape[plan::Axis::Data];
    for (int b = 1; b <= per_replica; b *= 2) {
      if (per_replica % b != 0) break;  // powers of two: once one fails, every larger one does
      if (options_.max_micro_batch > 0 && b > options_.max_micro_batch) break;
      for (const ScheduleKind kind : schedules_) add_schedule(shape, b, per_replica / b, kind);
    }
  }

  void add_schedule(const Shape& shape, int b, int m, ScheduleKind kind) {
    const int p = shape[plan::Axis::Pipeline];
    if (!plan::has_virtual_stages(kind)) {
      add_rest(shape, b, m, kind, 1);
      return;
    }
    if (plan::is_bidirectional(kind)) {
      // An even pipeline and an even count of microbatches, at least the minimum; each rank holds two
      // of the p stages, which need no even split.
      if (p < 2 || p % 2 != 0 || m % 2 != 0 || m < plan::minimum_microbatches(kind, p)) return;
      if (!mirror() || !plan::stage_count_error(layers_, p, 1, false)) add_rest(shape, b, m, kind, 2);
      return;
    }
    if (plan::is_v_shaped(kind)) {
      // Two chunks per rank, the layers split evenly over the 2p stages (ZB-V's "even layers per stage").
      if (p < 2 || m < plan::minimum_microbatches(kind, p)) return;
      if (!mirror() || !plan::stage_count_error(layers_, p, 2, false)) add_rest(shape, b, m, kind, 2);
      return;
    }
    if (mirror()) {
      // The plan check's own rules: an even split into p * v virtual stages, Megatron's group rule for N = p.
      if (p < 2 || plan::interleaved_group_error(m, p, p)) return;
      for (int v = 2; v <= layers_ / p; ++v) {
        if (!plan::stage_count_error(layers_, p, v, false)) add_rest(shape, b, m, kind, v);
      }
    } else {
      if (p < 2) return;
      for (int v = 2; v <= layers_; ++v) add_rest(shape, b, m, kind, v);
    }
  }

  void add_rest(const Shape& shape, int b, int m, ScheduleKind kind, int v) {
    const int replicas = shape[plan::Axis::Data] * shape[plan::Axis::Context];  // of the dense weights
    for (const model::Recompute r : options_.recompute) {
      if (same_as_no_recompute(r)) continue;
      for (const int z : options_.zero) {
        if (z > 0 && replicas == 1) continue;  // sharding over one replica is no sharding
        if (z > 1 && plan::is_bidirectional(kind)) continue;  // the plan check's rule for the two copies
        for (std::size_t pl = 0; pl < options_.placements.size(); ++pl) {
          // Placements that order the same axes the same way once size-1 axes are dropped give one layout.
          if (pl > 0 && same_layout_as_earlier(pl, shape)) continue;
          for (const bool sp : applicable(options_.sequence_parallel, shape[plan::Axis::Tensor] > 1)) {
            for (const bool overlap : applicable(options_.overlap, replicas > 1 || shape[plan::Axis::Tensor] > 1)) {
              for (const std::optional<plan::Precision>& precision : precisions_) {
                PlanSpec spec;
                spec.degrees = shape;
                spec.unwritten = moe() != nullptr ? plan::AxisSet{} : plan::AxisSet{plan::Axis::ExpertTensor};
                spec.virtual_stages = v;
                spec.global_batch = options_.global_batch;
                spec.micro_batch = b;
                spec.microbatches = m;
                spec.schedule = kind;
                spec.recompute = r;
                spec.zero = z;
                spec.placement = options_.placements[pl];
                spec.sequence_parallel = sp;
                spec.overlap_grad_reduce = overlap && replicas > 1;
                spec.overlap_param_gather = overlap && replicas > 1 && z >= 1;
                spec.overlap_tensor_comm = overlap && shape[plan::Axis::Tensor] > 1;
                spec.optimize = options_.objective;
                spec.precision = precision;
                spec.attention_kernel = options_.attention_kernel;
                spec.cross_entropy = options_.cross_entropy;
                spec.precision_aware_optimizer = options_.precision_aware_optimizer;
                spec.exp_avg_dtype = options_.exp_avg_dtype;
                spec.exp_avg_sq_dtype = options_.exp_avg_sq_dtype;
                if (model_.shape && model_.shape->moe) spec.dispatcher = options_.dispatcher;
                if (!mirror() && !resolves(spec, cluster_, model_)) {
                  ++out_.invalid;
                  continue;
                }
                // Each stage on one GPU kind (resolve_plan's mixed_stage_error, which the mirrored rules skip).
                if (mirror() && several_kinds_) {
                  const plan::StageGpuKinds kinds = plan::stage_gpu_kinds(cluster_, spec.degrees, spec.placement);
                  if (kinds.mixed || plan::replica_kinds_error(kinds, spec.degrees, spec.zero)) {
                    ++out_.invalid;
                    continue;
                  }
                }
                out_.candidates.push_back(std::move(spec));
              }
            }
          }
        }
      }
    }
  }

  /// The values of an on/off axis to try: all of them where the switch does something, else off once.
  [[nodiscard]] static std::vector<bool> applicable(const std::vector<bool>& values, bool does_something) {
    if (does_something || values.empty()) return values;
    return {false};
  }

  /// Whether `r` keeps and replays what no recomputation does, with no recomputation also searched:
  /// selective recomputation under FlashAttention (the planner's plans use it), the same plan twice.
  [[nodiscard]] bool same_as_no_recompute(model::Recompute r) const {
    constexpr bool flash = plan::kDefaultAttention == plan::AttentionKernel::Flash;
    const bool none_searched = std::find(options_.recompute.begin(), options_.recompute.end(),
                                         model::Recompute::None) != options_.recompute.end();
    return r != model::Recompute::None && none_searched &&
           model::stash_recompute(r, flash) == model::stash_recompute(model::Recompute::None, flash) &&
           model::replayed_recompute(r, flash) == model::replayed_recompute(model::Recompute::None, flash);
  }

  /// Whether placement `pl` lays ranks out exactly as one listed before it, for these degrees.
  [[nodiscard]] bool same_layout_as_earlier(std::size_t pl, const Shape& shape) const {
    const auto significant = [&](const plan::Placement& placement) {
      std::vector<plan::Axis> axes;
      for (const plan::Axis a : plan::complete_order(placement)) {
        if (shape[a] > 1) axes.push_back(a);
      }
      return axes;
    };
    const auto mine = significant(options_.placements[pl]);
    for (std::size_t q = 0; q < pl; ++q) {
      if (significant(options_.placements[q]) == mine) return true;
    }
    return false;
  }

  const topology::Cluster& cluster_;
  bool several_kinds_ = false;  ///< the job's GPUs are of more than one kind
  std::vector<std::optional<plan::Precision>> precisions_;
  const model::Model& model_;
  const SearchSpaceOptions& options_;
  int gpus_;
  int layers_;
  std::vector<ScheduleKind> schedules_;
  SearchSpace out_;
};

}  // namespace

std::vector<plan::ScheduleKind> all_schedule_kinds() {
  std::vector<ScheduleKind> out;
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) out.push_back(t.kind);
  return out;
}

std::vector<plan::ScheduleKind> default_schedule_kinds() {
  std::vector<ScheduleKind> out;
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) {
    if (t.searched_by_default) out.push_back(t.kind);
  }
  return out;
}

std::optional<std::string> fixed_degree_error(plan::Axis axis, int degree, const topology::Cluster& cluster,
                                              const model::Model& model) {
  const int gpus = static_cast<int>(cluster.gpus().size());
  if (degree < 1) return "a degree is at least 1";
  if (gpus % degree != 0) return fmt::format("{} does not divide the job's {} GPUs", degree, gpus);
  switch (axis) {
    case plan::Axis::Tensor: {
      const int per_node =
          static_cast<int>(cluster.gpus_of_node(cluster.device(cluster.gpus().front()).node).size());
      if (per_node % degree != 0) {
        return fmt::format("a tensor-parallel group stays within a node, and {} does not divide its {} GPUs", degree,
                           per_node);
      }
      PlanSpec spec;  // as tensor_degree_valid, for resolve_plan's own words
      spec.write(plan::Axis::Tensor, degree);
      spec.write(plan::Axis::Pipeline, 1);
      spec.micro_batch = 1;
      spec.microbatches = 1;
      try {
        (void)plan::resolve_plan(spec, plan::job_gpu_kinds(cluster).size() > 1 ? one_kind_view(cluster) : cluster, model);
      } catch (const InputError& e) {
        return fmt::format("tensor {}: {}", degree, e.message());
      }
      return std::nullopt;
    }
    case plan::Axis::Context:
      if (degree == 1) return std::nullopt;
      if (!model.shape) return "the model is a list of layers, with no sequence to split";
      if (model.shape->seq_len % (2 * degree) != 0) {
        return fmt::format("the sequence of {} tokens does not split into 2 x {} equal chunks", model.shape->seq_len,
                           degree);
      }
      return std::nullopt;
    case plan::Axis::Pipeline:
      return plan::stage_count_error(plan::partitionable_layer_count(model), degree, 1, false);
    case plan::Axis::Expert: {
      const model::MoeShape* moe = model.shape && model.shape->moe ? &*model.shape->moe : nullptr;
      if (moe == nullptr && degree > 1) return fmt::format("the model has no experts to spread over {} ranks", degree);
      if (moe == nullptr) return std::nullopt;
      if (moe->experts % degree != 0) return fmt::format("{} does not divide the model's {} experts", degree, moe->experts);
      return std::nullopt;
    }
    case plan::Axis::ExpertTensor:
    case plan::Axis::ExpertData:
    case plan::Axis::Data:
    case plan::Axis::DataShard:
    case plan::Axis::DataReplica:
    case plan::Axis::PipelineMirror:
      break;
  }
  return std::nullopt;
}

SearchSpace enumerate_search_space(const topology::Cluster& cluster, const model::Model& model,
                                   const SearchSpaceOptions& options) {
  return Enumerator(cluster, model, options).run();
}

}  // namespace mpsim::planner
