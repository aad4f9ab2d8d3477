#pragma once
/// The optimizer a training step runs, kept in its own header so that the model (which may carry a
/// measured step time per optimizer) and the plan (which chooses one) name the same set.
#include <cstdint>
#include <string_view>
#include <utility>

namespace mpsim::model {

/// The optimizer whose state the step keeps and updates: Adam(W) (fp32 master weights, momentum and
/// variance) or Muon (fp32 master weights and momentum; Kimi K2's recipe; Megatron-Core's `optimizer: muon`).
enum class Optimizer : std::uint8_t { Adam, Muon };
inline constexpr std::pair<std::string_view, Optimizer> kOptimizerNames[] = {{"adam", Optimizer::Adam},
                                                                             {"muon", Optimizer::Muon}};

}  // namespace mpsim::model
