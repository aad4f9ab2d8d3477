#pragma once
/// What a pass holds while it runs beyond what the stash rule counts (sim/schedule/stash.h), per
/// microbatch on one tensor-parallel rank.
///
/// The stash rule adds a chunk's whole stash when its forward starts and frees it when its backward
/// starts. A real backward frees each layer's stash only once that layer's backward is through (layers
/// run last to first), and while a layer's backward runs it holds what recomputation rebuilds of it:
/// the whole layer under full recomputation, the chosen modules' outputs under Megatron-Core's
/// recompute_modules, the scores with a materializing attention. What the loss keeps of the logits and
/// holds beside them depends on its kernel (plan::CrossEntropy), per logit:
///  - native (Megatron-Core's vocab_parallel_cross_entropy: `vocab_parallel_logits.float()`, then softmax
///    and gradient in place in that buffer): keeps the fp32 buffer (Korthikanti et al. 2023, Section
///    4.3); the 16-bit logits beside it in the forward, the 16-bit gradient cast from it in the backward;
///  - te (Transformer Engine's parallel_cross_entropy: the gradient written into the 16-bit logits in
///    the forward): keeps the 16-bit logits, nothing beside them;
///  - pytorch (torch.nn.functional.cross_entropy on `logits.float()`, TorchTitan's loss): keeps the fp32
///    log-softmax output; the 16-bit logits and their fp32 copy beside it in the forward, and in the
///    backward the gradients of the log-softmax's output and input (two fp32 tensors).
/// For an fp32 model `.float()` returns the logits themselves: no 16-bit copies and no fp32 copy.
/// The transients of a forward under full recomputation (its layers run without keeping anything, a few
/// of one layer's tensors at a time) and the activation gradients passed between layers (one layer's
/// output each) are left out: both are small beside one layer's recomputed activations.
#include <algorithm>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::engine {

/// The working memory of a run of consecutive layers (a layer, a partition unit or a chunk), per
/// microbatch.
struct WorkingMemory {
  Bytes stashed;   ///< the run's stash under the plan's rule
  Bytes forward;   ///< the most its forward holds beyond the whole stash (added at F's start)
  Bytes backward;  ///< the most its backward holds: what is left of the run's stash plus a layer's working set
};

/// `earlier` then `later` (layers in forward order): the backward runs `later` first, with all of
/// `earlier`'s stash still held.
[[nodiscard]] constexpr WorkingMemory then(const WorkingMemory& earlier, const WorkingMemory& later) noexcept {
  return {earlier.stashed + later.stashed, std::max(earlier.forward, later.forward),
          std::max(earlier.backward, Bytes(earlier.stashed + later.backward))};
}

/// What recomputation rebuilds of one layer before its backward, and the loss's transients.
struct LayerWorkingSet {
  Bytes forward;   ///< beyond the layer's stash, during its forward
  Bytes backward;  ///< beyond the layer's stash, during its backward
};

/// A layer's working memory given its stash and its working set.
[[nodiscard]] constexpr WorkingMemory layer_working_memory(Bytes stashed, const LayerWorkingSet& set) noexcept {
  return {stashed, set.forward, Bytes(stashed + set.backward)};
}

/// The output head's stash counts each logit in fp32 (model/transformer.cpp, Korthikanti et al. 2023).
inline constexpr std::int64_t kStashedLogitBytes = 4;

/// What the loss keeps of each logit from its forward to its backward, and holds beside the stash while
/// each pass runs, in bytes per logit, for a model whose activations take `dtype_bytes`.
/// `vocabulary_parallel`: the logits are split over tensor ranks by vocabulary. PyTorch's cross-entropy
/// then runs under `loss_parallel` (TorchTitan's default with tensor parallelism), whose log-softmax is
/// written out in elementwise ops (torch/distributed/tensor/parallel/loss.py, `_log_softmax`: the
/// shifted logits, their exp, the result, each an fp32 tensor) and whose backward of the loss and the
/// log-softmax together (`_nll_loss_and_log_softmax_backward`) builds zeros with the target's -1,
/// exp of the log-probabilities and their sum before the product: one fp32 tensor more than the fused
/// kernels in each pass.
struct LossMemory {
  std::int64_t kept = 0;
  std::int64_t forward = 0;
  std::int64_t backward = 0;
};
[[nodiscard]] LossMemory loss_memory(plan::CrossEntropy loss, std::int64_t dtype_bytes,
                                     bool vocabulary_parallel) noexcept;

/// What an all-gather context-parallel exchange (`cp_comm_type: all_gather`) holds while a layer's
/// attention runs, on one tensor rank per microbatch of `micro_batch` (`layer` is the rank's context
/// share: its queries against every key): the whole sequence's keys and values, gathered before the
/// attention (Transformer Engine's AttnFuncWithCPAndKVAllGather, k_ag and v_ag; PyTorch's
/// context_parallel all-gather rotation, its aggregated buffer). The backward gathers them again and
/// Transformer Engine sums their gradients over the whole sequence beside them (dk, dv, before the
/// reduce-scatter): twice this in the backward (PyTorch keeps only the rank's share of the gradients).
[[nodiscard]] Bytes gathered_key_value_bytes(const model::Layer& layer, int micro_batch, int tensor,
                                             std::int64_t dtype_bytes) noexcept;

/// Elements of the logits one tensor rank computes for a microbatch of `micro_batch`: the output head's
/// first GEMM (the vocabulary projection, split by columns); zero for any other layer.
[[nodiscard]] std::int64_t logit_elements(const model::Layer& layer, int micro_batch, int tensor) noexcept;

}  // namespace mpsim::engine
