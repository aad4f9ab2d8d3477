#include "sim/plan/plan_check.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/plan/layout.h"
#include "sim/topology/route_table.h"

namespace mpsim::plan {
namespace {

/// Throws at the field's origin in the plan file (or at the file itself when the field was derived).
class Checker {
 public:
  explicit Checker(const PlanSpec& spec) : spec_(spec) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    const auto it = spec_.origins.find(field);
    const SourceLocation where = it != spec_.origins.end() ? it->second : SourceLocation{spec_.file, 0, 0};
    throw InputError(where, field, message);
  }
  void require(bool ok, const std::string& field, const std::string& message) const {
    if (!ok) fail(field, message);
  }

 private:
  const PlanSpec& spec_;
};

/// The GPUs that share `gpu`'s NVLink domain (itself included); a node without NVLink has a domain of 1.
int nvlink_domain_size(const topology::Cluster& cluster, topology::DeviceId gpu) {
  const auto routes = topology::routes_from(cluster, gpu);
  int n = 0;
  for (const auto g : cluster.gpus()) {
    const auto& r = routes[g.value];
    n += r && (r->path_class == topology::PathClass::NVL || r->path_class == topology::PathClass::Local) ? 1 : 0;
  }
  return n;
}

/// The smallest NVLink domain a tensor group may land in: that of the first job GPU of each kind (on a
/// cluster of several kinds, a tensor group on each kind's nodes has to fit that kind's domain), with
/// the kind's name. Nodes of one kind are taken as wired alike.
struct SmallestDomain {
  int gpus = 0;
  std::string kind_name;
};
SmallestDomain smallest_nvlink_domain(const topology::Cluster& cluster) {
  SmallestDomain smallest;
  std::vector<int> probed;
  for (const topology::DeviceId g : cluster.gpus()) {
    const int kind = cluster.device(g).gpu_kind;
    if (std::find(probed.begin(), probed.end(), kind) != probed.end()) continue;
    probed.push_back(kind);
    const int domain = nvlink_domain_size(cluster, g);
    if (probed.size() == 1 || domain < smallest.gpus) smallest = {domain, cluster.gpu_kind_of(g).name};
  }
  return smallest;
}

}  // namespace

std::vector<int> even_partition(int layers, int stages) {
  std::vector<int> bounds{0};
  for (int s = 0; s < stages; ++s) bounds.push_back(bounds.back() + layers / stages + (s < layers % stages ? 1 : 0));
  return bounds;
}

int partitionable_layer_count(const model::Model& m) {
  const auto blocks = std::count_if(m.layers.begin(), m.layers.end(),
                                    [](const model::Layer& l) { return l.kind == model::LayerKind::Transformer; });
  return blocks > 0 ? static_cast<int>(blocks) : static_cast<int>(m.layers.size());
}

namespace {

/// Whether layers come before the first block and after the last one.
struct AroundBlocks {
  bool before = false;
  bool after = false;
};
AroundBlocks layers_around_blocks(const model::Model& m) {
  const auto is_block = [](const model::Layer& l) { return l.kind == model::LayerKind::Transformer; };
  const auto first = std::find_if(m.layers.begin(), m.layers.end(), is_block);
  if (first == m.layers.end()) return {};
  const auto last = std::find_if(m.layers.rbegin(), m.layers.rend(), is_block);
  return {first != m.layers.begin(), last != m.layers.rbegin()};
}

}  // namespace

int end_stages_without_blocks(const model::Model& m) {
  const AroundBlocks around = layers_around_blocks(m);
  return (around.before ? 1 : 0) + (around.after ? 1 : 0);
}

std::vector<LayerRange> virtual_stage_layers(const Plan& plan, const model::Model& m) {
  // Indices of the partitionable layers in m.layers.
  std::vector<int> units;
  const bool has_blocks = std::any_of(m.layers.begin(), m.layers.end(),
                                      [](const model::Layer& l) { return l.kind == model::LayerKind::Transformer; });
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    if (!has_blocks || m.layers[i].kind == model::LayerKind::Transformer) units.push_back(static_cast<int>(i));
  }
  std::vector<LayerRange> out;
  const int stages = static_cast<int>(plan.partition.size()) - 1;
  for (int vs = 0; vs < stages; ++vs) {
    const auto s = static_cast<std::size_t>(vs);
    const int from = plan.partition[s];
    const int to = plan.partition[s + 1];
    // A first or last stage without blocks holds what comes before or after them (see
    // end_stages_without_blocks).
    LayerRange r{from < static_cast<int>(units.size()) ? units[static_cast<std::size_t>(from)] : units.back() + 1,
                 to > from ? units[static_cast<std::size_t>(to - 1)] + 1 : units.front()};
    if (vs == 0) r.first = 0;                                          // the embedding and anything before
    if (vs == stages - 1) r.last = static_cast<int>(m.layers.size());  // the output head and anything after
    out.push_back(r);
  }
  // A bidirectional schedule's virtual stage p + k holds stage k's layers again (is_bidirectional).
  if (is_bidirectional(plan.schedule)) {
    const std::vector<LayerRange> once = out;
    out.insert(out.end(), once.begin(), once.end());
  }
  return out;
}

std::optional<ShapeRuleError> v_schedule_error(ScheduleKind kind, int pipeline, int virtual_stages, int microbatches) {
  if (virtual_stages != 2) {
    return ShapeRuleError{"virtual_stages", fmt::format("{} holds two chunks per rank (virtual_stages 2), not {}",
                                                        to_string(kind), virtual_stages)};
  }
  if (is_bidirectional(kind) && pipeline % 2 != 0) {
    return ShapeRuleError{"pipeline", fmt::format("{} pairs rank r with rank p - 1 - r: it needs an even pipeline, "
                                                  "not {}", to_string(kind), pipeline)};
  }
  if (is_bidirectional(kind) && microbatches % 2 != 0) {
    return ShapeRuleError{"microbatches", fmt::format("{} sends half the microbatches each way: it needs an even "
                                                      "number, not {}", to_string(kind), microbatches)};
  }
  const int least = minimum_microbatches(kind, pipeline);
  if (microbatches < least) {
    return ShapeRuleError{"microbatches", fmt::format("{} on pipeline {} needs at least {} microbatches, not {}",
                                                      to_string(kind), pipeline, least, microbatches)};
  }
  return std::nullopt;
}

std::optional<std::string> attention_rate_error(const topology::GpuKind& gpu, topology::AttentionGeneration generation,
                                                std::string_view setting) {
  if (gpu.attention_efficiency_of(generation)) return std::nullopt;
  return fmt::format("{} has no attention rate for {} kernels (its attention_kernels); leave {} out for its "
                     "attention_efficiency",
                     gpu.name, topology::to_string(generation), setting);
}

std::optional<std::string> interleaved_group_error(int microbatches, int pipeline, int group_size) {
  const int n = group_size;
  const int m = microbatches;
  const int p = pipeline;
  if (n < 1) return fmt::format("interleaved-1f1b needs a microbatch group size of at least 1, not {}", n);
  if (n >= m) return std::nullopt;  // one group: how m < p runs
  if (n < p) {
    return fmt::format(
        "interleaved-1f1b needs a microbatch group size of at least the pipeline size {} (or of all {} "
        "microbatches), not {}: smaller groups deadlock",
        p, m, n);
  }
  const int last = m % n;
  if (last != 0 && last < p) {
    return fmt::format(
        "interleaved-1f1b: {} microbatches in groups of {} leave a last group of {}, fewer than the "
        "pipeline size {}: it deadlocks",
        m, n, last, p);
  }
  return std::nullopt;
}

std::optional<std::string> stage_count_error(int layers, int pipeline, int virtual_stages, bool explicit_partition,
                                             int end_stages) {
  const int stages = pipeline * virtual_stages;
  if (stages > layers + (explicit_partition ? end_stages : 0)) {
    return fmt::format("{} stages for a model of {} layers", stages, layers);
  }
  if (!explicit_partition && virtual_stages > 1 && layers % stages != 0) {
    return fmt::format("{} layers do not split evenly into pipeline {} x virtual stages {}", layers, pipeline,
                       virtual_stages);
  }
  return std::nullopt;
}

int microbatch_group_size_of(const PlanSpec& spec) noexcept {
  if (traits(spec.schedule).rule != ShapeRule::MicrobatchGroup) return 1;
  return spec.microbatch_group_size.value_or(spec.degrees[Axis::Pipeline]);
}

int active_microbatches_of(const PlanSpec& spec) noexcept {
  if (traits(spec.schedule).rule != ShapeRule::ActiveCap) return 3;
  return spec.active_microbatches.value_or(spec.degrees[Axis::Pipeline] + 2);  // SageMaker's default
}

int zb_memory_limit_of(const PlanSpec& spec) noexcept {
  if (traits(spec.schedule).rule != ShapeRule::MemoryLimit) return 1;
  return spec.zb_memory_limit.value_or(spec.degrees[Axis::Pipeline]);  // ZB-1p: 1F1B's peak
}

Precision model_precision(int dtype_bytes) noexcept {
  return dtype_bytes >= 4 ? Precision::Fp32 : Precision::Bf16;
}

topology::DType gemm_dtype(Precision p) noexcept {
  switch (p) {
    case Precision::Bf16: return topology::DType::Bf16;
    case Precision::Fp16: return topology::DType::Fp16;
    case Precision::Fp32: return topology::DType::Fp32;
    case Precision::Fp8:
    case Precision::Mxfp8:
    case Precision::Fp8Blockwise: return topology::DType::Fp8;
  }
  return topology::DType::Bf16;
}

Plan resolve_plan(const PlanSpec& spec, const topology::Cluster& cluster, const model::Model& model) {
  const Checker check(spec);
  Plan p;
  static_cast<PlanSettings&>(p) = spec;
  // Axes the file left out: expert_tensor follows tensor (Megatron's default); data is set below.
  p.degrees = degrees_of(spec, spec.written(Axis::Data).value_or(1));
  // The V schedules hold two chunks per rank: virtual_stages left out or 1 (no interleaving, the
  // default a Megatron plan writes) means those two.
  p.virtual_stages = is_v_shaped(spec.schedule) && spec.virtual_stages == 1 ? 2 : spec.virtual_stages;
  // Megatron-Core's rules for --overlap-moe-expert-parallel-comm (TransformerConfig): expert
  // parallelism, interleaving when pipelined (its combined 1F1B), no full recomputation.
  if (p.overlap_moe_expert_comm) {
    check.require(p.degrees[Axis::Expert] > 1, "overlap.moe_expert_comm",
                  "overlapping the expert all-to-alls needs expert parallelism (expert > 1)");
    if (p.degrees[Axis::Pipeline] > 1) {
      check.require(p.schedule == ScheduleKind::Interleaved1F1B && p.virtual_stages > 1, "overlap.moe_expert_comm",
                    "overlapping the expert all-to-alls on a pipeline needs interleaved-1f1b with virtual_stages > 1 "
                    "(Megatron-Core's rule)");
    } else {
      check.require(p.schedule == ScheduleKind::OneFOneB || p.schedule == ScheduleKind::GPipe ||
                        p.schedule == ScheduleKind::Interleaved1F1B,
                    "overlap.moe_expert_comm",
                    fmt::format("overlapping the expert all-to-alls runs Megatron-Core's combined 1F1B, not {}",
                                to_string(p.schedule)));
    }
    check.require(spec.recompute != model::Recompute::Full, "overlap.moe_expert_comm",
                  "overlapping the expert all-to-alls does not combine with full recomputation (Megatron-Core's rule)");
  }
  // Megatron-Core's rules for its layer-wise offloading (TransformerConfig): one pipeline stage, no
  // recomputation, and the last block stays on the GPU.
  if (p.activation_offload_layers > 0) {
    const int blocks = partitionable_layer_count(model);
    check.require(p.degrees[Axis::Pipeline] == 1, "activation_offload_layers",
                  fmt::format("activation offloading needs pipeline 1, not {} (Megatron-Core's rule)",
                              p.degrees[Axis::Pipeline]));
    check.require(spec.recompute == model::Recompute::None, "activation_offload_layers",
                  "activation offloading does not combine with recomputation (Megatron-Core's rule)");
    check.require(p.activation_offload_layers < blocks, "activation_offload_layers",
                  fmt::format("offloads {} of the model's {} blocks; at least the last stays on the GPU",
                              p.activation_offload_layers, blocks));
    check.require(std::any_of(cluster.devices().begin(), cluster.devices().end(),
                              [](const topology::Device& d) { return d.kind == topology::DeviceKind::Cpu; }),
                  "activation_offload_layers", "activation offloading needs a host CPU in the topology");
  }
  // Megatron-LM's rules for distributing the checkpoints' inputs (arguments.py, TransformerConfig):
  // full recomputation, split over tensor ranks whose inputs are whole (no sequence parallelism).
  if (p.distribute_saved_activations) {
    check.require(spec.recompute == model::Recompute::Full, "distribute_saved_activations",
                  "distributing saved activations splits full recomputation's checkpoints; it needs recompute: full");
    check.require(p.degrees[Axis::Tensor] > 1, "distribute_saved_activations",
                  "distributing saved activations splits them over the tensor ranks; it needs tensor > 1");
    check.require(!p.sequence_parallel, "distribute_saved_activations",
                  "with sequence parallelism the saved inputs are already split over the tensor ranks "
                  "(Megatron-Core refuses both)");
  }
  // Every rule on the GPU holds for each kind the job runs on (a cluster of several kinds: node_groups).
  const std::vector<const topology::GpuKind*> kinds = job_gpu_kinds(cluster);
  if (p.flex_dispatcher_sms) {
    for (const topology::GpuKind* gpu : kinds) {
      check.require(gpu->sm_count == 0 || *p.flex_dispatcher_sms < gpu->sm_count,
                    std::string(name_of(kFlexDispatcherSmsKeys, p.dispatcher)),
                    fmt::format("{} SMs for the dispatcher leave none of the GPU's {} to compute",
                                *p.flex_dispatcher_sms, gpu->sm_count));
    }
  }
  p.precision = spec.precision.value_or(model_precision(model.dtype_bytes));
  if (!spec.precision && p.precision == Precision::Bf16 &&
      std::any_of(kinds.begin(), kinds.end(),
                  [](const topology::GpuKind* gpu) { return !gpu->peak_for(topology::DType::Bf16); })) {
    p.precision = Precision::Fp16;  // Volta: 16-bit models train in FP16 (on every kind of a mixed job)
  }

  // Degrees against the GPU count.
  const int gpus = static_cast<int>(cluster.gpus().size());
  check.require(p.degrees[Axis::Context] > 1 || p.context_comm == ContextComm::P2p, "cp_comm_type",
                "cp_comm_type applies to context parallelism (context > 1)");
  if (p.degrees[Axis::Context] > 1 && model.shape && p.context_comm == ContextComm::AllToAll) {
    // Ulysses gives each rank whole heads: the key/value heads (and the query heads) split over
    // context x tensor.
    const std::int64_t kv_heads = model.shape->mla ? model.shape->heads : model.shape->kv_heads;
    check.require(kv_heads % (p.degrees[Axis::Context] * p.degrees[Axis::Tensor]) == 0 &&
                      model.shape->heads % (p.degrees[Axis::Context] * p.degrees[Axis::Tensor]) == 0,
                  "cp_comm_type",
                  fmt::format("a2a context parallelism splits heads: context {} x tensor {} must divide the model's "
                              "{} key/value heads",
                              p.degrees[Axis::Context], p.degrees[Axis::Tensor], kv_heads));
  }
  if (p.degrees[Axis::Context] > 1 && model.shape) {
    // Megatron splits the sequence into 2 x context chunks (causal load balancing).
    check.require(model.shape->seq_len % (2 * p.degrees[Axis::Context]) == 0, "context",
                  fmt::format("context {} needs a sequence length divisible by 2 x {} (the model's is {})",
                              p.degrees[Axis::Context], p.degrees[Axis::Context], model.shape->seq_len));
  }
  // The ranks of one data-parallel replica: every other axis' degree.
  const int model_parallel = Degrees(p.degrees).set(Axis::Data, 1).ranks();
  if (spec.written(Axis::Data)) {
    check.require(
        model_parallel * p.degrees[Axis::Data] == gpus, "data",
        fmt::format("tensor {} x pipeline {} x data {} = {} GPUs, but the cluster has {}", p.degrees[Axis::Tensor],
                    p.degrees[Axis::Pipeline], p.degrees[Axis::Data], model_parallel * p.degrees[Axis::Data], gpus));
  } else {
    check.require(gpus % model_parallel == 0, spec.origins.contains("tensor") ? "tensor" : "pipeline",
                  fmt::format("tensor {} x pipeline {} = {} does not divide the cluster's {} GPUs",
                              p.degrees[Axis::Tensor], p.degrees[Axis::Pipeline], model_parallel, gpus));
    p.degrees.set(Axis::Data, gpus / model_parallel);
  }
  if (p.degrees[Axis::DataReplica] > 1) {
    check.require(
        p.degrees[Axis::Data] % p.degrees[Axis::DataReplica] == 0, "shard_groups",
        fmt::format("shard_groups {} does not divide data {}", p.degrees[Axis::DataReplica], p.degrees[Axis::Data]));
    check.require(p.zero >= 1, "shard_groups",
                  "shard_groups splits what ZeRO shards; it needs zero 1 or more (HSDP: zero 3)");
  }
  // Expert layers regroup the same GPUs (parallel folding).
  if (const auto error = degrees_error(p.degrees)) {
    check.fail(spec.origins.contains("expert_tensor") ? "expert_tensor" : "expert", *error);
  }
  const std::int64_t experts = model.shape && model.shape->moe ? model.shape->moe->experts : 0;
  if (p.degrees[Axis::Expert] > 1) {
    check.require(experts > 0, "expert", "expert parallelism needs a model with moe blocks");
    check.require(experts % p.degrees[Axis::Expert] == 0, "expert",
                  fmt::format("expert {} does not divide the model's {} experts", p.degrees[Axis::Expert], experts));
  }
  const bool routing_set = p.routing_imbalance != 1.0 || p.expert_capacity_factor || p.pad_expert_input_to_capacity;
  check.require(experts > 0 || !routing_set,
                spec.origins.contains("routing_imbalance") ? "routing_imbalance" : "moe_expert_capacity_factor",
                "routing applies to models with moe blocks");
  check.require(experts > 0 || !deduplicates_tokens(p.dispatcher), "moe_token_dispatcher_type",
                "the flex token dispatcher applies to models with moe blocks");
  check.require(!p.pad_expert_input_to_capacity || p.expert_capacity_factor.has_value(),
                "moe_pad_expert_input_to_capacity", "padding to capacity needs moe_expert_capacity_factor");
  if (experts > 0 && p.degrees[Axis::ExpertTensor] > 1) {
    check.require(model.shape->moe->expert_ffn % p.degrees[Axis::ExpertTensor] == 0, "expert_tensor",
                  fmt::format("expert_tensor {} does not divide the experts' width {}", p.degrees[Axis::ExpertTensor],
                              model.shape->moe->expert_ffn));
  }

  // Batch: micro x microbatches x data = global.
  const int per_step = p.micro_batch * p.degrees[Axis::Data];
  if (spec.global_batch && spec.microbatches) {
    p.global_batch = *spec.global_batch;
    p.microbatches = *spec.microbatches;
    check.require(per_step * p.microbatches == p.global_batch, "global_batch",
                  fmt::format("micro {} x microbatches {} x data {} = {}, not the global batch {}", p.micro_batch,
                              p.microbatches, p.degrees[Axis::Data], per_step * p.microbatches, p.global_batch));
  } else if (spec.global_batch) {
    p.global_batch = *spec.global_batch;
    check.require(p.global_batch % per_step == 0, "global_batch",
                  fmt::format("global batch {} is not a multiple of micro {} x data {} = {}", p.global_batch,
                              p.micro_batch, p.degrees[Axis::Data], per_step));
    p.microbatches = p.global_batch / per_step;
  } else {
    p.microbatches = spec.microbatches.value_or(1);
    p.global_batch = per_step * p.microbatches;
  }

  // The GEMM precision needs the GPU's support (no FP8 before Hopper, no BF16 on Volta).
  for (const topology::GpuKind* gpu : kinds) {
    check.require(gpu->peak_for(gemm_dtype(p.precision)).has_value(), "precision",
                  fmt::format("{} has no {} peak; choose a precision it supports", gpu->name, to_string(p.precision)));
  }
  // A kernel generation is FlashAttention's, and the GPU kind must have a rate measured for it.
  if (p.attention_kernel) {
    const std::string_view generation = topology::to_string(*p.attention_kernel);
    check.require(p.attention == AttentionKernel::Flash, "attention_kernel",
                  fmt::format("attention_kernel {} names FlashAttention kernels; attention is {}", generation,
                              to_string(p.attention)));
    for (const topology::GpuKind* gpu : kinds) {
      const auto missing = attention_rate_error(*gpu, *p.attention_kernel, "attention_kernel");
      check.require(!missing, "attention_kernel", missing.value_or(""));
    }
  }
  // Megatron-Core's OptimizerConfig: moments other than fp32 need the precision-aware optimizer, which
  // only Transformer Engine's FusedAdam is.
  for (const auto& [field, dtype] : moment_dtypes(p)) {
    check.require(dtype == StateDtype::Fp32 || p.precision_aware_optimizer, std::string(field),
                  fmt::format("{} {} needs precision_aware_optimizer: true (Megatron-Core keeps moments in fp32 otherwise)",
                              field, name_of(kStateDtypeNames, dtype)));
  }
  check.require(!p.precision_aware_optimizer || p.optimizer == Optimizer::Adam, "precision_aware_optimizer",
                fmt::format("the precision-aware optimizer is Transformer Engine's FusedAdam; optimizer is {}",
                            name_of(kOptimizerNames, p.optimizer)));
  check.require(!p.fp8_param_gather || is_fp8(p.precision), "fp8_param_gather",
                fmt::format("FP8 weights need an FP8 precision (fp8, mxfp8 or fp8-blockwise), not {}", to_string(p.precision)));

  // Recompute modules: Megatron reads them under selective recomputation only, and each names a part
  // the model has.
  if (p.recompute_modules != model::RecomputeModules{}) {
    check.require(
        model::traits(p.recompute).takes_modules, "recompute_modules",
        fmt::format("recompute_modules apply to selective recomputation, not '{}'", model::to_string(p.recompute)));
    for (const model::RecomputeModuleTraits& row : model::kRecomputeModuleTraits) {
      const std::string_view name = row.name;
      const model::RecomputeModule module = row.kind;
      if (!p.recompute_modules.has(module) || module == model::RecomputeModule::CoreAttention) continue;
      const bool present = std::any_of(model.layers.begin(), model.layers.end(), [module](const model::Layer& l) {
        return std::any_of(l.recomputable.begin(), l.recomputable.end(),
                           [module](const model::ModuleStash& m) { return m.module == module; });
      });
      check.require(present, "recompute_modules", fmt::format("the model has no '{}' to recompute", name));
    }
  }

  // Tensor parallelism: within one NVLink domain, and it must split the heads.
  if (!p.allow_tensor_across_nodes && p.degrees[Axis::Tensor] > 1) {
    const SmallestDomain domain = smallest_nvlink_domain(cluster);
    const std::string where = cluster.job_gpu_kinds().size() > 1 ? fmt::format(" on the {} nodes", domain.kind_name) : "";
    check.require(p.degrees[Axis::Tensor] <= std::max(domain.gpus, 1), "tensor",
                  fmt::format("tensor {} spans more than one NVLink domain ({} GPUs{}); lower it, or set "
                              "allow_tensor_across_nodes: true",
                              p.degrees[Axis::Tensor], domain.gpus, where));
  }
  if (model.shape && p.degrees[Axis::Tensor] > 1) {
    check.require(model.shape->heads % p.degrees[Axis::Tensor] == 0, "tensor",
                  fmt::format("tensor {} does not divide the model's {} attention heads", p.degrees[Axis::Tensor],
                              model.shape->heads));
  }

  // Stages and the partition.
  const int layers = partitionable_layer_count(model);
  const int stages = p.partition_stages();
  const int end_stages = end_stages_without_blocks(model);
  // A bidirectional schedule's two chunks per rank hold two of the pipeline's stages (partition_stage_count).
  const int cut_chunks = is_bidirectional(p.schedule) ? 1 : p.virtual_stages;
  if (const auto error =
          stage_count_error(layers, p.degrees[Axis::Pipeline], cut_chunks, !spec.partition.empty(), end_stages)) {
    check.fail(stages > layers && !spec.origins.contains("virtual_stages") ? "pipeline" : "virtual_stages", *error);
  }
  if (spec.partition.empty()) {
    p.partition = even_partition(layers, stages);
  } else {
    p.partition = spec.partition;
    check.require(static_cast<int>(p.partition.size()) == stages + 1, "partition",
                  fmt::format("{} stages need {} boundaries, got {}", stages, stages + 1, p.partition.size()));
    check.require(p.partition.front() == 0 && p.partition.back() == layers, "partition",
                  fmt::format("boundaries must start at 0 and end at the model's {} layers", layers));
    // Every stage holds a block, except that the first may hold only the embedding and the last only
    // the output head (Megatron's account_for_embedding/loss_in_pipeline_split).
    const AroundBlocks around = layers_around_blocks(model);
    bool increasing = true;
    for (std::size_t i = 0; i + 1 < p.partition.size(); ++i) {
      const bool may_be_empty = (i == 0 && around.before) || (i + 2 == p.partition.size() && around.after);
      increasing = increasing && (p.partition[i + 1] > p.partition[i] ||
                                  (may_be_empty && p.partition[i + 1] == p.partition[i]));
    }
    check.require(increasing, "partition",
                  "boundaries must increase: every stage holds at least one block (the first may hold only the "
                  "embedding, the last only the output head)");
  }

  // Full recomputation's choice of layers: Megatron-LM reads recompute_method and recompute_num_layers
  // under full granularity only, and its block method checkpoints at most a chunk's layers.
  // (A plan that states the defaults, as the report's plan object does, is accepted under any mode.)
  const bool default_layers = p.recompute_method == model::RecomputeMethod::Uniform && p.recompute_num_layers == 1;
  for (const char* field : {"recompute_method", "recompute_num_layers"}) {
    check.require(default_layers || !spec.origins.contains(field) || p.recompute == Recompute::Full, field,
                  fmt::format("{} applies to recompute: full, not '{}'", field, model::to_string(p.recompute)));
  }
  if (p.recompute == Recompute::Full && p.recompute_method == model::RecomputeMethod::Block) {
    const std::vector<LayerRange> ranges = virtual_stage_layers(p, model);
    for (std::size_t vs = 0; vs < ranges.size(); ++vs) {
      const auto first = model.layers.begin() + ranges[vs].first;
      const auto recomputed = std::count_if(first, model.layers.begin() + ranges[vs].last,
                                            [](const model::Layer& l) { return model::is_recomputed(l.kind); });
      check.require(recomputed == 0 || p.recompute_num_layers <= recomputed,
                    spec.origins.contains("recompute_num_layers") ? "recompute_num_layers" : "recompute_method",
                    fmt::format("recompute_method block checkpoints the first {} layers of each chunk; virtual "
                                "stage {} holds {}",
                                p.recompute_num_layers, vs, recomputed));
    }
  }

  // Schedule rules.
  const ShapeRule rule = traits(p.schedule).rule;
  check.require(has_virtual_stages(p.schedule) || p.virtual_stages == 1, "virtual_stages",
                fmt::format("virtual stages need schedule interleaved-1f1b or a V schedule, not {}",
                            to_string(p.schedule)));
  if (rule == ShapeRule::VShape) {
    if (const auto error = v_schedule_error(p.schedule, p.degrees[Axis::Pipeline], p.virtual_stages, p.microbatches)) {
      check.fail(error->field, error->message);
    }
  }
  if (is_bidirectional(p.schedule)) {
    // Each stage's two copies reduce their gradients together (Axis::PipelineMirror); sharding the
    // weights or gradients across them is not modelled.
    check.require(p.zero <= 1, "zero",
                  fmt::format("{} keeps two copies of every stage; it runs with zero 0 or 1 (the distributed "
                              "optimizer), not {}", to_string(p.schedule), p.zero));
    check.require(p.degrees[Axis::DataReplica] == 1, "shard_groups",
                  fmt::format("{} keeps two copies of every stage; hybrid sharding is not modelled with it",
                              to_string(p.schedule)));
  }
  if (rule == ShapeRule::MicrobatchGroup) {
    check.require(p.virtual_stages > 1, "schedule", "interleaved-1f1b needs virtual_stages > 1");
    p.microbatch_group_size = microbatch_group_size_of(spec);
    const int n = p.microbatch_group_size;
    check.require(!interleaved_group_error(p.microbatches, p.degrees[Axis::Pipeline], n),
                  spec.microbatch_group_size ? "microbatch_group_size" : "microbatches",
                  fmt::format("interleaved-1f1b runs microbatches in groups of {} (microbatch_group_size_per_vp_stage, "
                              "default the pipeline size): {} microbatches need groups of at least {} and a last "
                              "group that is whole or at least {} (Megatron's rule)",
                              n, p.microbatches, p.degrees[Axis::Pipeline], p.degrees[Axis::Pipeline]));
  } else if (spec.microbatch_group_size) {
    check.fail("microbatch_group_size", "microbatch_group_size_per_vp_stage applies to interleaved-1f1b only");
  }
  if (rule == ShapeRule::ActiveCap) {
    p.active_microbatches = active_microbatches_of(spec);
  } else if (spec.active_microbatches) {
    check.fail("active_microbatches", "active_microbatches applies to sagemaker-interleaved only");
  }
  if (rule == ShapeRule::MemoryLimit) {
    p.zb_memory_limit = zb_memory_limit_of(spec);
    check.require(p.zb_memory_limit >= 1, "zb_memory_limit",
                  fmt::format("zb-auto holds at least one microbatch's activations, not {}", p.zb_memory_limit));
  } else if (spec.zb_memory_limit) {
    check.fail("zb_memory_limit", "zb_memory_limit applies to zb-auto only");
  }
  if (kinds.size() > 1) {
    if (const auto mixed = mixed_stage_error(cluster, p)) check.fail("placement", *mixed);
  }
  if (!p.replica_microbatches.empty()) {
    if (const auto error = replica_share_error(p, p.replica_microbatches)) {
      check.fail("replica_microbatches", "replica_microbatches " + *error);
    }
  }
  return p;
}

std::vector<const topology::GpuKind*> job_gpu_kinds(const topology::Cluster& cluster) {
  std::vector<const topology::GpuKind*> kinds;
  for (const int k : cluster.job_gpu_kinds()) kinds.push_back(&cluster.gpu_kinds().at(static_cast<std::size_t>(k)));
  return kinds;
}

StageGpuKinds stage_gpu_kinds(const topology::Cluster& cluster, const Degrees& degrees, const Placement& placement) {
  StageGpuKinds out;
  const Layout layout(degrees, placement);
  const auto& gpus = cluster.gpus();
  if (static_cast<std::size_t>(layout.ranks()) != gpus.size()) return out;  // the degrees' own error
  const auto kind_of = [&](int rank) { return cluster.device(gpus.at(static_cast<std::size_t>(rank))).gpu_kind; };
  // The first GPU of each (replica, stage): every other axis at 0.
  const auto first_of = [&](int replica, int stage) {
    return layout.with(layout.with(0, Axis::Data, replica), Axis::Pipeline, stage);
  };
  const int pipeline = degrees[Axis::Pipeline];
  for (int d = 0; d < degrees[Axis::Data]; ++d) {
    std::vector<int> stages;
    for (int stage = 0; stage < pipeline; ++stage) stages.push_back(kind_of(first_of(d, stage)));
    out.replica_kinds.push_back(std::move(stages));
  }
  out.kinds = out.replica_kinds.front();
  for (int rank = 0; rank < layout.ranks(); ++rank) {
    const int stage = layout.coordinate(rank, Axis::Pipeline);
    const int replica = layout.coordinate(rank, Axis::Data);
    if (kind_of(rank) == out.replica_kinds[static_cast<std::size_t>(replica)][static_cast<std::size_t>(stage)]) continue;
    out.mixed = StageGpuKinds::Mixed{stage, first_of(replica, stage), rank};
    break;
  }
  return out;
}

std::optional<std::string> replica_share_error(const Plan& p, const std::vector<int>& shares) {
  const int data = p.degrees[Axis::Data];
  if (static_cast<int>(shares.size()) != data) {
    return fmt::format("lists {} microbatch counts; the plan has {} data-parallel replicas (parallelism.data), one "
                       "count each",
                       shares.size(), data);
  }
  std::int64_t sum = 0;
  for (const int n : shares) {
    if (n < 1) return fmt::format("every replica runs at least one microbatch, not {}", n);
    sum += n;
  }
  if (sum != static_cast<std::int64_t>(p.microbatches) * data) {
    return fmt::format("sums to {}; the replicas run microbatches {} x data {} = {} in all (global batch {} at micro "
                       "batch {})",
                       sum, p.microbatches, data, static_cast<std::int64_t>(p.microbatches) * data, p.global_batch,
                       p.micro_batch);
  }
  const bool uneven = std::any_of(shares.begin(), shares.end(), [&](int n) { return n != p.microbatches; });
  if (!uneven) return std::nullopt;
  if (p.zero >= 3) {
    return "uneven shares do not combine with zero 3: its per-layer parameter gathers span the replicas, which "
           "would have to run the same microbatches";
  }
  if (p.degrees[Axis::Expert] > 1) {
    return "uneven shares do not combine with expert parallelism: the expert all-to-alls span the replicas, which "
           "would have to run the same microbatches";
  }
  for (std::size_t d = 0; d < shares.size(); ++d) {
    if (const auto error = replica_count_error(p, shares[d])) return fmt::format("replica {}: {}", d, *error);
  }
  return std::nullopt;
}

std::optional<std::string> replica_count_error(const Plan& p, int microbatches) {
  if (is_v_shaped(p.schedule)) {
    if (const auto error = v_schedule_error(p.schedule, p.degrees[Axis::Pipeline], p.virtual_stages, microbatches)) {
      return error->message;
    }
  }
  if (traits(p.schedule).rule == ShapeRule::MicrobatchGroup) {
    if (const auto error = interleaved_group_error(microbatches, p.degrees[Axis::Pipeline], p.microbatch_group_size)) {
      return *error;
    }
  }
  return std::nullopt;
}

std::optional<std::string> replica_kinds_error(const StageGpuKinds& stages, const Degrees& degrees, int zero) {
  if (!stages.replicas_differ()) return std::nullopt;
  if (zero >= 3) {
    return "data-parallel replicas on different GPU kinds do not combine with zero 3: its per-layer parameter "
           "gathers span the replicas (docs/mixed-clusters.md)";
  }
  if (degrees[Axis::Expert] > 1) {
    return "data-parallel replicas on different GPU kinds do not combine with expert parallelism: the expert "
           "all-to-alls span the replicas (docs/mixed-clusters.md)";
  }
  return std::nullopt;
}

std::optional<std::string> mixed_stage_error(const topology::Cluster& cluster, const Plan& plan) {
  const StageGpuKinds stages = stage_gpu_kinds(cluster, plan.degrees, plan.placement);
  if (!stages.mixed) return replica_kinds_error(stages, plan.degrees, plan.zero);
  const topology::DeviceId first = cluster.gpus().at(static_cast<std::size_t>(stages.mixed->first));
  const topology::DeviceId other = cluster.gpus().at(static_cast<std::size_t>(stages.mixed->other));
  return fmt::format("pipeline stage {} would run on {} ({}) and {} ({}) in one data-parallel replica; each stage "
                     "of a replica runs on one GPU kind: choose a placement or pipeline degree whose stages each fall "
                     "on GPUs of one kind within a replica (replicas may differ in kind, with replica_microbatches "
                     "giving each its share: docs/mixed-clusters.md)",
                     stages.mixed->stage, cluster.gpu_kind_of(first).id, cluster.device(first).name, cluster.gpu_kind_of(other).id,
                     cluster.device(other).name);
}

}  // namespace mpsim::plan
