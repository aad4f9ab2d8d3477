#pragma once
/// Activation recomputation policy, kept in its own header so that plan code can name it without
/// pulling in the model types.
#include <cstdint>
#include <string_view>

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

}  // namespace mpsim::model
