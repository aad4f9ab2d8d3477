#pragma once
/// Activation recomputation policy, kept in its own header so that plan code can name it without
/// pulling in the model types.
#include <cstdint>
#include <string_view>
#include <utility>

namespace mpsim::model {

/// What a transformer layer keeps between its forward and its backward pass
/// (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023).
enum class Recompute : std::uint8_t {
  None,       ///< every activation the backward pass needs is stored
  Selective,  ///< the attention scores (softmax, its dropout mask and output) are recomputed
  Full,       ///< only the layer's input is stored; the whole forward pass is run again in backward
};

/// "none", "selective", "full": the words of the plan file.
[[nodiscard]] constexpr std::string_view to_string(Recompute r) noexcept {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

/// The modules Megatron-Core's selective recomputation can recompute (`recompute_modules`): each drops
/// what the module's output kept and runs the module again before the layer's backward.
enum class RecomputeModule : std::uint8_t {
  CoreAttention,    ///< `core_attn`: the attention scores (the classic selective recomputation)
  LayerNorm,        ///< `layernorm`: the outputs of the input and pre-MLP norms
  MoeActivation,    ///< `moe_act`: the experts' activation output (the down projection's input)
  MlaUpProjection,  ///< `mla_up_proj`: latent attention's up-projected Q, K and V
  Mlp,              ///< `mlp`: a dense MLP's intermediates
  Moe,              ///< `moe`: a MoE layer's routed tokens and experts' intermediates
  SharedExperts,    ///< `shared_experts`: the shared experts' intermediates
};
inline constexpr std::pair<std::string_view, RecomputeModule> kRecomputeModuleNames[] = {
    {"core_attn", RecomputeModule::CoreAttention},
    {"layernorm", RecomputeModule::LayerNorm},
    {"moe_act", RecomputeModule::MoeActivation},
    {"mla_up_proj", RecomputeModule::MlaUpProjection},
    {"mlp", RecomputeModule::Mlp},
    {"moe", RecomputeModule::Moe},
    {"shared_experts", RecomputeModule::SharedExperts},
};

/// A set of modules; Megatron's default is {core_attn}.
struct RecomputeModules {
  std::uint8_t bits = 1u << static_cast<unsigned>(RecomputeModule::CoreAttention);
  [[nodiscard]] constexpr bool has(RecomputeModule m) const noexcept { return (bits >> static_cast<unsigned>(m)) & 1u; }
  constexpr void add(RecomputeModule m) noexcept { bits = static_cast<std::uint8_t>(bits | (1u << static_cast<unsigned>(m))); }
  friend constexpr bool operator==(RecomputeModules, RecomputeModules) = default;
  friend constexpr auto operator<=>(RecomputeModules, RecomputeModules) = default;
};

/// The recomputation that applies to the attention scores: selective recomputation without
/// `core_attn` among its modules leaves them stored.
[[nodiscard]] constexpr Recompute score_recompute(Recompute recompute, RecomputeModules modules) noexcept {
  return recompute == Recompute::Selective && !modules.has(RecomputeModule::CoreAttention) ? Recompute::None
                                                                                            : recompute;
}

}  // namespace mpsim::model
