#pragma once
/// The plan: everything the planner decides, and the contract between planner, simulator and
/// executor. `PlanSpec` is a plan as written (some values may be left to be derived); `Plan` is
/// complete and checked against a cluster and a model (resolve_plan()).
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"
#include "sim/model/optimizer.h"
#include "sim/model/recompute.h"
#include "sim/plan/axis.h"
#include "sim/plan/degrees.h"
#include "sim/plan/schedule_traits.h"
#include "sim/topology/attention_generation.h"

namespace mpsim::plan {

using model::Recompute;

enum class Objective : std::uint8_t { Speed, Memory };
[[nodiscard]] std::string_view to_string(Objective o) noexcept;

/// The number format the matrix multiplies run in (Transformer Engine's recipes). Weights, activations
/// and gradients between the GEMMs stay in the model's dtype; FP8 formats add a quantized copy.
enum class Precision : std::uint8_t {
  Bf16,
  Fp16,
  Fp32,
  Fp8,    ///< per-tensor scaled E4M3/E5M2 (Hopper and later; `fp8_recipe: delayed|tensorwise`)
  Mxfp8,  ///< 32-element block scales (Blackwell and later; `fp8_recipe: mxfp8`)
  Fp8Blockwise,  ///< DeepSeek-V3's block scales: 128 x 128 weight blocks, 1 x 128 activation tiles
                 ///< (Hopper and later; `fp8_recipe: blockwise`)
};
[[nodiscard]] std::string_view to_string(Precision p) noexcept;
inline constexpr std::pair<std::string_view, Precision> kPrecisionNames[] = {
    {"bf16", Precision::Bf16}, {"fp16", Precision::Fp16}, {"fp32", Precision::Fp32},
    {"fp8", Precision::Fp8},   {"mxfp8", Precision::Mxfp8}, {"fp8-blockwise", Precision::Fp8Blockwise}};
/// Megatron-Core's `fp8_recipe` words; the first of a precision is the one exports write (tensorwise:
/// current scaling, Megatron-Bridge's FP8 recipes; delayed is Megatron-LM's default).
inline constexpr std::pair<std::string_view, Precision> kMegatronFp8Recipes[] = {
    {"tensorwise", Precision::Fp8}, {"delayed", Precision::Fp8}, {"mxfp8", Precision::Mxfp8},
    {"blockwise", Precision::Fp8Blockwise}};
/// The word of `value` in a (word, value) table such as kScheduleNames: the first that names it.
template <typename Names, typename Enum>
[[nodiscard]] constexpr std::string_view name_of(const Names& names, Enum value) noexcept {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return "?";
}
/// Every word of a (word, value) table, in order (a command line's choices).
template <typename Names>
[[nodiscard]] std::vector<std::string> names_of(const Names& names) {
  std::vector<std::string> out;
  for (const auto& entry : names) out.emplace_back(entry.first);
  return out;
}
/// Whether GEMMs in `p` quantize their inputs to 8 bits.
[[nodiscard]] inline bool is_fp8(Precision p) noexcept {
  return p == Precision::Fp8 || p == Precision::Mxfp8 || p == Precision::Fp8Blockwise;
}

/// How context-parallel attention meets the keys and values of the other chunks (Megatron-Core's
/// cp_comm_type): p2p, the ring that passes K/V chunks beside the attention (Megatron's default);
/// all_gather, every rank gathers all K/V before its attention (and reduce-scatters their gradients);
/// a2a (DeepSpeed-Ulysses), all-to-alls that trade the sequence split for a head split before the
/// attention and back after it (context x tensor must divide the query and the key/value heads).
enum class ContextComm : std::uint8_t { P2p, AllGather, AllToAll };
inline constexpr std::pair<std::string_view, ContextComm> kContextCommNames[] = {
    {"p2p", ContextComm::P2p}, {"all_gather", ContextComm::AllGather}, {"a2a", ContextComm::AllToAll}};

/// How a MoE layer moves its routed tokens to the expert ranks and back (Megatron-Core's
/// moe_token_dispatcher_type and moe_flex_dispatcher_backend): `alltoall`, NCCL all-to-alls that send
/// every token copy to its expert's rank; `flex` with DeepEP or HybridEP, which send a token once to
/// each NVLink domain (node) holding one of its experts, over the rail to the GPU of the same local
/// index, and fan it out to the experts' GPUs over NVLink (engine::token_dispatch_rounds). The two
/// flex backends move the same bytes here.
enum class MoeDispatcher : std::uint8_t { AllToAll, DeepEp, HybridEp };
inline constexpr std::pair<std::string_view, MoeDispatcher> kFlexBackendNames[] = {{"deepep", MoeDispatcher::DeepEp},
                                                                                  {"hybridep", MoeDispatcher::HybridEp}};
/// Megatron-Core's field for the SMs each flex backend's kernels hold.
inline constexpr std::pair<std::string_view, MoeDispatcher> kFlexDispatcherSmsKeys[] = {
    {"moe_deepep_num_sms", MoeDispatcher::DeepEp}, {"moe_hybridep_num_sms", MoeDispatcher::HybridEp}};
/// The command-line flag of a plan field: `--` and its words joined by dashes (moe_deepep_num_sms:
/// Megatron-LM's --moe-deepep-num-sms).
[[nodiscard]] inline std::string command_line_flag(std::string_view field) {
  std::string out = "--" + std::string(field);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}
/// One name per dispatcher, as `mpsim plan --moe-dispatcher` and the plan JSON's `moe_dispatcher` give it.
inline constexpr std::pair<std::string_view, MoeDispatcher> kMoeDispatcherNames[] = {
    {"alltoall", MoeDispatcher::AllToAll}, {"deepep", MoeDispatcher::DeepEp}, {"hybridep", MoeDispatcher::HybridEp}};
[[nodiscard]] constexpr bool deduplicates_tokens(MoeDispatcher d) noexcept { return d != MoeDispatcher::AllToAll; }

/// The optimizer (sim/model/optimizer.h: a profiled model may carry its measured step time).
using model::kOptimizerNames;
using model::Optimizer;

/// The number format an Adam moment is stored in (Megatron-Core's --exp-avg-dtype and
/// --exp-avg-sq-dtype, which need --use-precision-aware-optimizer): the kernel computes in fp32 either
/// way. fp8 is Megatron's torch.uint8 with a per-tensor scale (Transformer Engine's FusedAdam).
enum class StateDtype : std::uint8_t { Fp32, Bf16, Fp16, Fp8 };
inline constexpr std::pair<std::string_view, StateDtype> kStateDtypeNames[] = {
    {"fp32", StateDtype::Fp32}, {"bf16", StateDtype::Bf16}, {"fp16", StateDtype::Fp16}, {"fp8", StateDtype::Fp8}};
[[nodiscard]] constexpr int bytes_of(StateDtype d) noexcept {
  return d == StateDtype::Fp32 ? 4 : d == StateDtype::Fp8 ? 1 : 2;
}

/// How the loss runs on the last stage's logits, which sets what it keeps of them and what it holds
/// beside them (sim/engine/working_memory.h). `native`: Megatron-Core's vocabulary-parallel
/// cross-entropy (`cross_entropy_fusion_impl: native`, its default, fused or not), which turns the
/// logits into one fp32 buffer and computes the softmax and its gradient in place there. `te`:
/// Transformer Engine's parallel_cross_entropy (`cross_entropy_fusion_impl: te` with
/// `cross_entropy_loss_fusion`), which writes the gradient into the 16-bit logits. `pytorch`:
/// torch.nn.functional.cross_entropy on `logits.float()` (TorchTitan's loss), whose log-softmax output,
/// fp32 input and two gradients are separate tensors.
enum class CrossEntropy : std::uint8_t { Native, Te, Pytorch };
inline constexpr std::pair<std::string_view, CrossEntropy> kCrossEntropyNames[] = {
    {"native", CrossEntropy::Native}, {"te", CrossEntropy::Te}, {"pytorch", CrossEntropy::Pytorch}};

/// How attention's core (QK^T, softmax, scores x V) runs: FlashAttention fuses it into one kernel that
/// never writes the s x s scores (the default: Megatron-Core's `attention_backend: auto` picks it);
/// `standard` materializes them, as Megatron did in 2021.
enum class AttentionKernel : std::uint8_t { Flash, Standard };
[[nodiscard]] std::string_view to_string(AttentionKernel a) noexcept;
inline constexpr AttentionKernel kDefaultAttention = AttentionKernel::Flash;

/// What a plan file states and a complete plan keeps as stated: PlanSpec (as written) and Plan
/// (resolved) both are these settings plus their own, so resolve_plan copies them in one assignment.
struct PlanSettings {
  /// Every axis' degree. In a PlanSpec the axes in `unwritten` were left out of the file and
  /// resolve_plan derives them (data fills the cluster; expert_tensor follows tensor, Megatron's default).
  Degrees degrees;
  int virtual_stages = 1;
  int micro_batch = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  Recompute recompute = Recompute::None;
  model::RecomputeModules recompute_modules;  ///< what selective recomputation recomputes (Megatron's recompute_modules)
  /// Which layers full recomputation checkpoints (Megatron-LM's recompute_method, TorchTitan's
  /// selective_ac_option N), with recompute_num_layers N; uniform with N = 1 checkpoints every layer alone
  model::RecomputeMethod recompute_method = model::RecomputeMethod::Uniform;
  int recompute_num_layers = 1;
  /// Full recomputation keeps each checkpoint's input split over the tensor ranks and all-gathers it
  /// before the replay (Megatron-Core's distribute_saved_activations, Megatron-LM's
  /// --distribute-saved-activations, DeepSpeed's activation_checkpointing.partition_activations): for
  /// tensor parallelism without sequence parallelism, whose layer inputs are whole on every rank
  bool distribute_saved_activations = false;
  bool sequence_parallel = false;
  bool overlap_tensor_comm = false;    ///< in-layer tensor collectives beside the compute (--tp-comm-overlap)
  bool overlap_grad_reduce = false;    ///< gradient buckets reduced during the backward (--overlap-grad-reduce)
  bool overlap_param_gather = false;   ///< ZeRO's parameter all-gather during the forward (--overlap-param-gather)
  /// Each steady-state forward beside the next backward, so one microbatch's expert all-to-alls hide
  /// under the other's compute (--overlap-moe-expert-parallel-comm; schedule::make_combined_1f1b)
  bool overlap_moe_expert_comm = false;
  bool grad_reduce_in_fp32 = true;     ///< fp32 gradient buffer and reduction (Megatron-LM's default for 16-bit models)
  bool fp8_param_gather = false;       ///< FP8 weights only, gathered in FP8 (--fp8-param-gather; needs an FP8 precision)
  Optimizer optimizer = Optimizer::Adam;
  /// Megatron-Core's --use-precision-aware-optimizer: Transformer Engine's FusedAdam keeps the master
  /// weights and moments and takes the 16-bit gradients as they are (engine::optimizer_bytes_per_parameter)
  bool precision_aware_optimizer = false;
  StateDtype exp_avg_dtype = StateDtype::Fp32;     ///< Adam's first moment (--exp-avg-dtype)
  StateDtype exp_avg_sq_dtype = StateDtype::Fp32;  ///< Adam's second moment (--exp-avg-sq-dtype)
  CrossEntropy cross_entropy = CrossEntropy::Native;
  ContextComm context_comm = ContextComm::P2p;
  /// The first blocks whose stashed activations go to host memory during the forward and come back
  /// before their backward (Megatron-Core's cpu_offloading_num_layers; pipeline 1, no recomputation)
  int activation_offload_layers = 0;
  double routing_imbalance = 1.0;      ///< tokens of the busiest expert rank over the mean (1: uniform routing)
  std::optional<double> expert_capacity_factor;  ///< Megatron's moe_expert_capacity_factor; unset: dropless
  bool pad_expert_input_to_capacity = false;     ///< Megatron's moe_pad_expert_input_to_capacity
  MoeDispatcher dispatcher = MoeDispatcher::AllToAll;  ///< Megatron's token dispatcher (and flex backend)
  /// SMs the flex backend's kernels hold (moe_deepep_num_sms / moe_hybridep_num_sms); unset: Megatron-Core's
  /// defaults, 20 and 16
  std::optional<int> flex_dispatcher_sms;
  AttentionKernel attention = kDefaultAttention;
  /// The generation of FlashAttention-class kernels the run's software ships (fa2, fa3, fa4), which
  /// sets their rate (the GPU kind's `attention_kernels`); unset: the kind's `attention_efficiency`
  std::optional<topology::AttentionGeneration> attention_kernel;
  int zero = 0;
  Placement placement = kMegatronPlacement;
  Objective optimize = Objective::Speed;
  bool allow_tensor_across_nodes = false;
  /// Each data-parallel replica's microbatches per step, by data-parallel rank (uneven batch shares, as
  /// heterogeneity-aware planners give replicas on GPUs of different speeds); they sum to the plan's
  /// microbatches x data, so the global batch stays micro_batch x their sum. Empty: every replica runs
  /// `microbatches` (Megatron's even split).
  std::vector<int> replica_microbatches;

  friend bool operator==(const PlanSettings&, const PlanSettings&) = default;
};

/// The plan keys of Adam's two moment dtypes (Megatron-Core's field names; plan::command_line_flag
/// gives Megatron-LM's flags), and each with its value in `s`.
inline constexpr std::array<std::string_view, 2> kMomentDtypeKeys = {"exp_avg_dtype", "exp_avg_sq_dtype"};
[[nodiscard]] inline std::array<std::pair<std::string_view, StateDtype>, 2> moment_dtypes(const PlanSettings& s) noexcept {
  return {{{kMomentDtypeKeys[0], s.exp_avg_dtype}, {kMomentDtypeKeys[1], s.exp_avg_sq_dtype}}};
}

/// A plan as written. Unset values are derived by resolve_plan(): the degrees in `unwritten`,
/// `microbatches` from the global batch, `global_batch` from the microbatches.
struct PlanSpec : PlanSettings {
  AxisSet unwritten = Axis::Data | Axis::ExpertTensor;
  std::optional<int> global_batch;
  std::optional<int> microbatches;
  std::vector<int> partition;                ///< empty = balanced; else boundaries, pipeline*virtual_stages+1 of them
  std::optional<Precision> precision;        ///< unset: the model's dtype
  std::optional<int> active_microbatches;    ///< SageMaker interleaved cap; default pipeline + 2
  std::optional<int> microbatch_group_size;  ///< Megatron microbatch_group_size_per_vp_stage; default pipeline
  std::optional<int> zb_memory_limit;        ///< zb-auto: activations held at most, in microbatches; default pipeline
  /// Where each field was written (by its dotted name), so that checks against the cluster and the
  /// model still point at the file, line and field.
  std::map<std::string, SourceLocation> origins;
  std::string file;

  /// The degree the file gave `a`; nothing where it left it to be derived.
  [[nodiscard]] std::optional<int> written(Axis a) const noexcept {
    return unwritten.contains(a) ? std::nullopt : std::optional<int>(degrees[a]);
  }
  /// Gives `a` the degree `degree`, as a file writing it does.
  PlanSpec& write(Axis a, int degree) noexcept {
    degrees.set(a, degree);
    unwritten = unwritten.without(a);
    return *this;
  }
};

/// A complete plan, consistent with its cluster and model: the settings as written, and what
/// resolve_plan derived from them.
struct Plan : PlanSettings {
  int global_batch = 1;
  int microbatches = 1;
  std::vector<int> partition;  ///< boundaries over the model's layers, pipeline*virtual_stages+1 of them
  Precision precision = Precision::Bf16;
  int active_microbatches = 3;
  int microbatch_group_size = 1;
  int zb_memory_limit = 1;

  [[nodiscard]] int gpus() const noexcept { return degrees.ranks(); }
  /// The microbatches data-parallel replica `replica` runs per step: its share, or `microbatches`.
  [[nodiscard]] int microbatches_of_replica(int replica) const {
    return replica_microbatches.empty() ? microbatches : replica_microbatches.at(static_cast<std::size_t>(replica));
  }
  /// Whether the replicas run different microbatch counts.
  [[nodiscard]] bool uneven_shares() const noexcept {
    return std::any_of(replica_microbatches.begin(), replica_microbatches.end(),
                       [&](int n) { return n != microbatches; });
  }
  /// Replicas of each expert: expert layers regroup tensor x context x data as expert_tensor x
  /// expert x expert_data (Megatron's parallel folding).
  [[nodiscard]] int expert_data() const noexcept { return degrees[Axis::ExpertData]; }
  /// Virtual stages: the chunks of every pipeline rank.
  [[nodiscard]] int stages() const noexcept { return degrees[Axis::Pipeline] * virtual_stages; }
  /// The stages the partition cuts (partition_stage_count).
  [[nodiscard]] int partition_stages() const noexcept {
    return partition_stage_count(schedule, degrees[Axis::Pipeline], virtual_stages);
  }
  /// The busiest expert rank's routed tokens over the uniform share, which sets the experts' GEMMs
  /// and the all-to-alls everyone waits for: the imbalance when dropless; with a capacity factor,
  /// the capacity when padded to it, else the smaller of the two (tokens past capacity are dropped).
  [[nodiscard]] double expert_load() const noexcept {
    if (!expert_capacity_factor) return routing_imbalance;
    return pad_expert_input_to_capacity ? *expert_capacity_factor
                                        : std::min(routing_imbalance, *expert_capacity_factor);
  }
  friend bool operator==(const Plan&, const Plan&) = default;
};

}  // namespace mpsim::plan
