#pragma once
/// Activation recomputation policy, kept in its own header so that plan code can name it without
/// pulling in the model types.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/traits_table.h"

namespace mpsim::model {

/// What a transformer layer keeps between its forward and its backward pass
/// (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023).
enum class Recompute : std::uint8_t {
  None,       ///< every activation the backward pass needs is stored
  Selective,  ///< the attention scores (softmax, its dropout mask and output) are recomputed
  Full,       ///< only the layer's input is stored; the whole forward pass is run again in backward
  /// TorchTitan's per-op selective checkpointing (mode "selective", selective_ac_option "op"): each block
  /// keeps its input, the outputs of its odd-numbered matmuls (the 1st, 3rd, ... in forward order), of
  /// its attention kernels and of its reduce-scatters; its backward first replays everything else (the
  /// even-numbered matmuls, the norms, activations and other pointwise ops)
  Op,
};

inline constexpr std::size_t kRecomputeCount = 4;

struct RecomputeTraits {
  Recompute kind;
  std::string_view name;  ///< the plan file's word (`recompute`, `--recompute`)
  /// Megatron-LM's --recompute-granularity and Megatron-Core's recompute_granularity (NeMo's and
  /// Megatron-Bridge's key, and the plan file's Megatron-named key); empty: the flag is left out.
  std::string_view megatron;
  /// TorchTitan's activation_checkpoint.mode; empty where TorchTitan has none (its `selective` mode
  /// recomputes every nth block or chosen ops, not the attention scores).
  std::string_view torchtitan;
  /// TorchTitan's activation_checkpoint.selective_ac_option that goes with `torchtitan`; empty: none.
  std::string_view torchtitan_option;
  /// Only the layer's input is stored and the whole forward runs again before the backward: Megatron's
  /// --recompute-method uniform --recompute-num-layers 1, DeepSpeed's activation_checkpointing (DeepSpeed
  /// has no word for a mode; it checkpoints whole layers or nothing).
  bool whole_layer;
  /// recompute_modules (RecomputeModule) choose what is recomputed.
  bool takes_modules;
};

/// One row per Recompute, in the enum's order.
inline constexpr std::array<RecomputeTraits, kRecomputeCount> kRecomputeTraits{{
    // kind, name, megatron, torchtitan, torchtitan_option, whole_layer, takes_modules
    {Recompute::None, "none", "", "none", "", false, false},
    {Recompute::Selective, "selective", "selective", "", "", false, true},
    {Recompute::Full, "full", "full", "full", "", true, false},
    {Recompute::Op, "op", "", "selective", "op", false, false},
}};
static_assert(core::rows_in_enum_order(kRecomputeTraits),
              "kRecomputeTraits: one row per Recompute, in the enum's order");

[[nodiscard]] constexpr const RecomputeTraits& traits(Recompute r) noexcept {
  return kRecomputeTraits[static_cast<std::size_t>(r)];
}
/// The plan file's word: "none", "selective", "full", "op".
[[nodiscard]] constexpr std::string_view to_string(Recompute r) noexcept { return traits(r).name; }
/// The plan file's words, with their modes (`recompute`, `--recompute`).
inline constexpr auto kRecomputeNames = core::column_words<kRecomputeTraits, &RecomputeTraits::name>();

/// Which layers full recomputation checkpoints, and in groups of how many (`recompute_num_layers`, N).
/// Layers are the transformer blocks (and hand-listed layers) of a chunk, counted in forward order.
enum class RecomputeMethod : std::uint8_t {
  /// Megatron-LM's `--recompute-method uniform`: a chunk's layers in groups of N consecutive ones, the
  /// last group shorter when N does not divide them; a group keeps only its input, and its backward
  /// first runs the whole group's forward again (transformer_block.py `_checkpointed_forward`)
  Uniform,
  /// Megatron-LM's `--recompute-method block`: the first N layers of each chunk are checkpointed one by
  /// one, the others keep their whole stash
  Block,
  /// TorchTitan's selective_ac_option N: the rank's k-th block (counting from 1 over its chunks in
  /// order) is checkpointed alone when k % N == 0, the others keep their whole stash
  /// (activation_checkpoint.py `_apply_layer_sac`)
  Every,
};
inline constexpr std::size_t kRecomputeMethodCount = 3;

struct RecomputeMethodTraits {
  RecomputeMethod kind;
  std::string_view name;      ///< the plan file's word (`recompute_method`)
  std::string_view megatron;  ///< Megatron-LM's --recompute-method; empty: Megatron has none
  /// Written as TorchTitan's `recompute: selective` with `selective_ac_option: N`, which reads back as it.
  bool torchtitan_option;
};
inline constexpr std::array<RecomputeMethodTraits, kRecomputeMethodCount> kRecomputeMethodTraits{{
    {RecomputeMethod::Uniform, "uniform", "uniform", false},
    {RecomputeMethod::Block, "block", "block", false},
    {RecomputeMethod::Every, "every", "", true},
}};
static_assert(core::rows_in_enum_order(kRecomputeMethodTraits),
              "kRecomputeMethodTraits: one row per RecomputeMethod, in the enum's order");
[[nodiscard]] constexpr const RecomputeMethodTraits& traits(RecomputeMethod m) noexcept {
  return kRecomputeMethodTraits[static_cast<std::size_t>(m)];
}
[[nodiscard]] constexpr std::string_view to_string(RecomputeMethod m) noexcept { return traits(m).name; }
inline constexpr auto kRecomputeMethodNames =
    core::column_words<kRecomputeMethodTraits, &RecomputeMethodTraits::name>();
inline constexpr auto kMegatronRecomputeMethodNames =
    core::column_words<kRecomputeMethodTraits, &RecomputeMethodTraits::megatron>();

/// What full recomputation does with one layer it applies to.
struct FullRecomputePlace {
  bool checkpointed = true;  ///< dropped and replayed before its backward; false: keeps its whole stash
  bool keeps_input = true;   ///< checkpointed: it keeps its input (the first layer of its group)
  bool closes_group = true;  ///< checkpointed: the group's last layer, whose backward first replays the group
  friend constexpr bool operator==(FullRecomputePlace, FullRecomputePlace) = default;
};

/// The place of a layer under `method` with N = `layers`: `in_chunk` its index among its chunk's
/// `chunk_layers` recomputable layers (from 0), `on_rank` among its rank's, over the rank's chunks in
/// order (from 0). Preconditions: layers >= 1, 0 <= in_chunk < chunk_layers.
[[nodiscard]] constexpr FullRecomputePlace full_recompute_place(RecomputeMethod method, int layers, int in_chunk,
                                                                int chunk_layers, int on_rank) noexcept {
  switch (method) {
    case RecomputeMethod::Uniform: {
      const int first = in_chunk / layers * layers;
      const int last = std::min(first + layers, chunk_layers) - 1;
      return {true, in_chunk == first, in_chunk == last};
    }
    case RecomputeMethod::Block: return {in_chunk < layers, true, true};
    case RecomputeMethod::Every: return {(on_rank + 1) % layers == 0, true, true};
  }
  return {};
}

/// The modules Megatron-Core's selective recomputation can recompute (`recompute_modules`): each drops
/// what the module's output kept and runs the module again before the layer's backward.
enum class RecomputeModule : std::uint8_t {
  CoreAttention,    ///< the attention scores (the classic selective recomputation)
  LayerNorm,        ///< the outputs of the input and pre-MLP norms
  MoeActivation,    ///< the experts' activation output (the down projection's input)
  MlaUpProjection,  ///< latent attention's up-projected Q, K and V
  Mlp,              ///< a dense MLP's intermediates
  Moe,              ///< a MoE layer's routed tokens and experts' intermediates
  SharedExperts,    ///< the shared experts' intermediates
};
inline constexpr std::size_t kRecomputeModuleCount = 7;

struct RecomputeModuleTraits {
  RecomputeModule kind;
  /// Megatron-Core's word in recompute_modules (--recompute-modules), which plan files use too.
  std::string_view name;
  /// Recomputing the MoE layer (RecomputeModule::Moe) recomputes this module too: it lies inside it.
  bool inside_moe;
};

/// One row per RecomputeModule, in the enum's order (writers list a set's modules so).
inline constexpr std::array<RecomputeModuleTraits, kRecomputeModuleCount> kRecomputeModuleTraits{{
    {RecomputeModule::CoreAttention, "core_attn", false},
    {RecomputeModule::LayerNorm, "layernorm", false},
    {RecomputeModule::MoeActivation, "moe_act", true},
    {RecomputeModule::MlaUpProjection, "mla_up_proj", false},
    {RecomputeModule::Mlp, "mlp", false},
    {RecomputeModule::Moe, "moe", false},
    {RecomputeModule::SharedExperts, "shared_experts", true},
}};
static_assert(core::rows_in_enum_order(kRecomputeModuleTraits),
              "kRecomputeModuleTraits: one row per RecomputeModule, in the enum's order");

[[nodiscard]] constexpr const RecomputeModuleTraits& traits(RecomputeModule m) noexcept {
  return kRecomputeModuleTraits[static_cast<std::size_t>(m)];
}
inline constexpr auto kRecomputeModuleNames =
    core::column_words<kRecomputeModuleTraits, &RecomputeModuleTraits::name>();

/// A set of modules; Megatron's default is {core_attn}.
struct RecomputeModules {
  std::uint8_t bits = 1u << static_cast<unsigned>(RecomputeModule::CoreAttention);
  [[nodiscard]] constexpr bool has(RecomputeModule m) const noexcept { return (bits >> static_cast<unsigned>(m)) & 1u; }
  constexpr void add(RecomputeModule m) noexcept { bits = static_cast<std::uint8_t>(bits | (1u << static_cast<unsigned>(m))); }
  friend constexpr bool operator==(RecomputeModules, RecomputeModules) = default;
  friend constexpr auto operator<=>(RecomputeModules, RecomputeModules) = default;
};

/// The Megatron-Core words of the modules in `modules`, in the enum's order (recompute_modules as
/// plan files, Megatron-LM and NeMo write it).
[[nodiscard]] inline std::vector<std::string_view> module_names(RecomputeModules modules) {
  std::vector<std::string_view> names;
  for (const RecomputeModuleTraits& m : kRecomputeModuleTraits) {
    if (modules.has(m.kind)) names.push_back(m.name);
  }
  return names;
}

/// The recomputation that applies to the attention scores: selective recomputation without
/// `core_attn` among its modules leaves them stored.
[[nodiscard]] constexpr Recompute score_recompute(Recompute recompute, RecomputeModules modules) noexcept {
  return recompute == Recompute::Selective && !modules.has(RecomputeModule::CoreAttention) ? Recompute::None
                                                                                            : recompute;
}

}  // namespace mpsim::model
