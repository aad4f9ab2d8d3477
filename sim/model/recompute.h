#pragma once
/// Activation recomputation policy, kept in its own header so that plan code can name it without
/// pulling in the model types.
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
};

inline constexpr std::size_t kRecomputeCount = 3;

struct RecomputeTraits {
  Recompute kind;
  std::string_view name;  ///< the plan file's word (`recompute`, `--recompute`)
  /// Megatron-LM's --recompute-granularity and Megatron-Core's recompute_granularity (NeMo's and
  /// Megatron-Bridge's key, and the plan file's Megatron-named key); empty: the flag is left out.
  std::string_view megatron;
  /// TorchTitan's activation_checkpoint.mode; empty where TorchTitan has none (its `selective` mode
  /// recomputes every nth block or chosen ops, not the attention scores).
  std::string_view torchtitan;
  /// Only the layer's input is stored and the whole forward runs again before the backward: Megatron's
  /// --recompute-method uniform --recompute-num-layers 1, DeepSpeed's activation_checkpointing (DeepSpeed
  /// has no word for a mode; it checkpoints whole layers or nothing).
  bool whole_layer;
  /// recompute_modules (RecomputeModule) choose what is recomputed.
  bool takes_modules;
};

/// One row per Recompute, in the enum's order.
inline constexpr std::array<RecomputeTraits, kRecomputeCount> kRecomputeTraits{{
    // kind, name, megatron, torchtitan, whole_layer, takes_modules
    {Recompute::None, "none", "", "none", false, false},
    {Recompute::Selective, "selective", "selective", "", false, true},
    {Recompute::Full, "full", "full", "full", true, false},
}};
static_assert(core::rows_in_enum_order(kRecomputeTraits),
              "kRecomputeTraits: one row per Recompute, in the enum's order");

[[nodiscard]] constexpr const RecomputeTraits& traits(Recompute r) noexcept {
  return kRecomputeTraits[static_cast<std::size_t>(r)];
}
/// The plan file's word: "none", "selective", "full".
[[nodiscard]] constexpr std::string_view to_string(Recompute r) noexcept { return traits(r).name; }
/// The plan file's words, with their modes (`recompute`, `--recompute`).
inline constexpr auto kRecomputeNames = core::column_words<kRecomputeTraits, &RecomputeTraits::name>();

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
