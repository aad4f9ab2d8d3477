#include "sim/engine/working_memory.h"

namespace mpsim::engine {

LossMemory loss_memory(plan::CrossEntropy loss, std::int64_t dtype_bytes, bool vocabulary_parallel) noexcept {
  // `.float()` of fp32 logits is the tensor itself: no copy beside it, and no cast of the gradient back.
  const std::int64_t narrower = dtype_bytes < kStashedLogitBytes ? dtype_bytes : 0;
  const std::int64_t float_copy = dtype_bytes < kStashedLogitBytes ? kStashedLogitBytes : 0;
  switch (loss) {
    case plan::CrossEntropy::Native: return {kStashedLogitBytes, narrower, narrower};
    case plan::CrossEntropy::Te: return {dtype_bytes, 0, 0};
    case plan::CrossEntropy::Pytorch: {
      // Fused: the logits, their fp32 copy and the log-probabilities, then two fp32 gradients. Under
      // loss_parallel: also the shifted logits (forward) and a third fp32 tensor (backward).
      const std::int64_t decomposed = vocabulary_parallel ? kStashedLogitBytes : 0;
      return {kStashedLogitBytes, dtype_bytes + float_copy + decomposed, 2 * kStashedLogitBytes + decomposed};
    }
  }
  return {};
}

Bytes gathered_key_value_bytes(const model::Layer& layer, int micro_batch, int tensor, std::int64_t dtype_bytes) noexcept {
  std::int64_t bytes = 0;
  for (const model::AttentionCore& core : layer.attention) {
    bytes += (core.key_value_elements() * micro_batch * dtype_bytes + tensor - 1) / tensor;
  }
  return Bytes::bytes(bytes);
}

std::int64_t logit_elements(const model::Layer& layer, int micro_batch, int tensor) noexcept {
  if (layer.kind != model::LayerKind::OutputHead || layer.gemms.empty()) return 0;
  const model::Gemm& logits = layer.gemms.front();
  const std::int64_t t = logits.split == model::TensorSplit::Columns ? tensor : 1;
  return (logits.tokens * micro_batch * logits.out + t - 1) / t;
}

}  // namespace mpsim::engine
