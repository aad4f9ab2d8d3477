#pragma once
/// The Megatron-Core settings that the Megatron-LM export (a flag of pretrain_gpt.py each) and the
/// Megatron-Bridge / NeMo export (a field of the model section each) write the same way: the same
/// field, the same value, under the same condition and in the same order. Each exporter writes them in
/// its own syntax; what only one of them writes, or writes otherwise (the GQA, dropout and
/// moe_layer_freq arguments, the layer split, precision, the data-parallel and overlap settings),
/// stays in that exporter.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::interop {

/// The runs the settings come in. Each exporter writes a run whole, its settings in the table's order,
/// where its own settings leave room for it; the runs themselves stand where each target puts them.
enum class McoreRun : std::uint8_t {
  Size,            ///< num_layers .. num_attention_heads
  Sequence,        ///< seq_length
  Embedding,       ///< position_embedding_type, normalization, rotary_base, rope_scaling(_factor), layernorm_epsilon
  Linear,          ///< add_bias_linear, share_embeddings_and_output_weights, qk_layernorm
  VocabAttention,  ///< vocab_size, make_vocab_size_divisible_by, then the MLA fields and its RoPE (rope_type, YaRN's)
  Experts,         ///< num_moe_experts .. moe_shared_expert_intermediate_size
  Routing,         ///< moe_router_enable_expert_bias, moe_grouped_gemm, mtp_num_layers
  ParallelSizes,   ///< tensor_model_parallel_size, pipeline_model_parallel_size
  FlexDispatcher,  ///< moe_token_dispatcher_type flex, its backend and the backend's SMs
  Recompute,       ///< recompute_granularity, recompute_method, recompute_num_layers, distribute_saved_activations
  Offload,         ///< cpu_offloading, cpu_offloading_num_layers
  Attention,       ///< attention_backend, cross_entropy_loss_fusion, cross_entropy_fusion_impl
  Capacity,        ///< moe_expert_capacity_factor, moe_pad_expert_input_to_capacity
};

/// A setting's value; monostate: unset (Megatron-Core's default None: Megatron-LM leaves the flag
/// out, Megatron-Bridge writes null so that the recipe's value does not survive the merge).
using McoreValue = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

/// A Megatron-LM flag that is not `--` and the field's words joined by dashes, or a switch that
/// sets the field to false.
struct MegatronFlagName {
  std::string_view key;
  std::string_view flag;
  bool switch_sets = true;  ///< the value the switch gives the field (store_true: true, store_false: false)
};
inline constexpr MegatronFlagName kMegatronFlagNames[] = {
    {"num_moe_experts", "--num-experts"},
    {"add_bias_linear", "--disable-bias-linear", false},
    {"layernorm_epsilon", "--norm-epsilon"},  // RMSNorm's too, despite the name
    {"rope_scaling", "--use-rope-scaling"},   // Megatron-LM's use_rope_scaling, GPTModel's rope_scaling
    {"apply_rope_fusion", "--no-rope-fusion", false},
    // Megatron-LM's switch sets untie_embeddings_and_output_weights, whose negation is Megatron-Core's field.
    {"share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", false},
};

struct McoreSetting {
  McoreRun run;
  std::string_view key;  ///< Megatron-Core's field (TransformerConfig, ModelParallelConfig), Bridge's model key
  McoreValue value;

  /// Megatron-LM's flag for it (kMegatronFlagNames, or plan::command_line_flag of the key).
  [[nodiscard]] std::string flag() const;
  /// The value a switch (bool) flag gives the field when present; Megatron's default is the other.
  [[nodiscard]] bool switch_sets() const;
  /// The flag and its value as pretrain_gpt.py takes them ("--hidden-size 4096", "--swiglu"); none
  /// for an unset value or a bool that is Megatron's default.
  [[nodiscard]] std::optional<std::string> megatron_argument() const;
  /// The value as a YAML scalar: true / false, null, the number or the string as it is.
  [[nodiscard]] std::string config_value() const;
};

/// The settings of `shape` (a decoder-only shape; exporters check that first) and `plan`, in the
/// order both exports write them.
/// Why Megatron-Core cannot run the plan's recomputation (per-op checkpointing, a method other than
/// uniform or block), for the exports' refusal at `recompute`; nothing when it can.
[[nodiscard]] std::optional<std::string> megatron_recompute_error(const plan::Plan& plan);

[[nodiscard]] std::vector<McoreSetting> megatron_core_settings(const model::TransformerShape& shape,
                                                               const plan::Plan& plan);

}  // namespace mpsim::interop
