#pragma once
/// Generations of fused attention kernels. A GPU kind gives the rate of each generation measured on it
/// (`attention_kernels` in configs/hardware/gpus.yaml); a plan names the generation its software
/// release ships (`attention_kernel`), else the kind's `attention_efficiency` applies (its newest).
/// The generations follow FlashAttention's: FA2 (the 2023 kernels, for Ampere, also run on Hopper),
/// FA3 (Hopper's asynchronous tensor-core kernels, July 2024), FA4 (Blackwell's). Libraries with their
/// own kernels (cuDNN's fused attention) are placed in the generation whose rate they ran at.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace mpsim::topology {

enum class AttentionGeneration : std::uint8_t { Fa2, Fa3, Fa4 };

inline constexpr std::pair<std::string_view, AttentionGeneration> kAttentionGenerationNames[] = {
    {"fa2", AttentionGeneration::Fa2}, {"fa3", AttentionGeneration::Fa3}, {"fa4", AttentionGeneration::Fa4}};

[[nodiscard]] constexpr std::string_view to_string(AttentionGeneration g) noexcept {
  for (const auto& [name, value] : kAttentionGenerationNames) {
    if (value == g) return name;
  }
  return "?";
}

/// The generation named `name` (fa2, fa3, fa4); nullopt for any other name.
[[nodiscard]] constexpr std::optional<AttentionGeneration> parse_attention_generation(std::string_view name) noexcept {
  for (const auto& [known, value] : kAttentionGenerationNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace mpsim::topology
