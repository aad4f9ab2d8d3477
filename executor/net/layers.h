#pragma once
/// The real layers the executor trains, written once against Backend.
///
/// Every layer maps a microbatch's activation, rows = samples x seq by `hidden` columns, to the
/// next one. Tensor parallelism follows Megatron: attention heads and the MLP's inner width are
/// split across the tensor group; Q, K, V and fc1 are column-parallel, the attention projection and
/// fc2 row-parallel with an all-reduce of their output in forward, and the input gradient of each
/// column-parallel block is all-reduced in backward. Layer norms, biases after a row-parallel
/// matmul, the embedding and the output head are replicated on every tensor rank.
///
/// Backward is split in two halves: backward_input() makes the input gradient (and the layer-norm
/// parameter gradients, which come out of the same pass), backward_weight() the matmul weight and
/// bias gradients from what backward_input() kept. Gradients accumulate (+=) over microbatches.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/backend/backend.h"
#include "executor/net/buffer.h"

namespace mpsim::executor {

/// How a parameter is divided over the tensor group.
enum class Split : std::uint8_t { None, Columns, Rows };

/// One parameter tensor: its full (unsplit) shape, and where this rank's part lives.
struct Param {
  std::string name;
  std::int64_t rows = 0;  ///< full shape
  std::int64_t cols = 0;
  Split split = Split::None;
  enum class Init : std::uint8_t { Weight, Bias, Gamma, Beta, Table } init = Init::Weight;
  std::int64_t local_rows = 0;
  std::int64_t local_cols = 0;
  std::size_t offset = 0;  ///< in the rank's flat parameter and gradient buffers
  float* data = nullptr;
  float* grad = nullptr;
  /// A routed expert's weight: held by one expert rank (not replicated over the data group), its
  /// gradient reduced over the expert-data group.
  bool expert = false;

  [[nodiscard]] std::size_t count() const noexcept { return static_cast<std::size_t>(local_rows * local_cols); }
  [[nodiscard]] MatrixView value() const noexcept { return {data, local_rows, local_cols, local_cols}; }
  [[nodiscard]] MatrixView gradient() const noexcept { return {grad, local_rows, local_cols, local_cols}; }
};

/// Mixture-of-experts widths (whole-model values); experts == 0: the blocks are dense.
struct MoeDims {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn = 0;  ///< inner width of each routed expert's MLP
  std::int64_t shared_ffn = 0;  ///< inner width of the shared experts together (0: none), split like the dense MLP
  bool router_bias = false;
};

/// Widths of the network, whole-model values (before the tensor split).
struct NetDims {
  std::int64_t hidden = 0;
  std::int64_t heads = 1;
  std::int64_t head_dim = 0;
  std::int64_t ffn = 0;        ///< MLP inner width of transformer blocks
  std::int64_t generic_ffn = 0;  ///< MLP inner width of Generic blocks
  std::int64_t seq = 1;
  std::int64_t vocab = 0;
  std::int64_t positions = 0;  ///< rows of the position table
  MoeDims moe;                 ///< the MLP of the model's MoE blocks
};

/// One microbatch's data: token ids (embedding input), labels (loss), and the loss scale
/// (1 / the step's microbatches over every replica, microbatches x data-parallel ranks however the
/// replicas share them, so summed gradients are those of the global mean loss).
struct Batch {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> labels;
  std::vector<std::int32_t> positions;
  std::vector<float> inputs;  ///< rows x hidden, for models without an embedding
  std::int64_t rows = 0;
  std::int64_t samples = 0;
  float loss_scale = 1;
};

/// How context-parallel attention meets the keys and values of the sequence's other chunks.
enum class ContextExchange : std::uint8_t {
  AllGather,  ///< gather every rank's keys and values, sum their gradients back (cp_comm_type all_gather)
  Ring,       ///< pass key/value chunks around the group, merging partial outputs (p2p)
  AllToAll,   ///< Ulysses: trade sequence chunks for heads, attend over whole sequences (a2a)
};

/// What the backend, the tensor group and the memory meter a layer works with.
struct LayerContext {
  Backend* backend = nullptr;
  Group* tensor = nullptr;  ///< nullptr or size 1: no tensor parallelism
  int tensor_size = 1;
  int tensor_rank = 0;
  MemoryMeter* meter = nullptr;
  Group* expert = nullptr;  ///< the expert-parallel group (nullptr or size 1: every expert is local)
  int expert_size = 1;
  int expert_rank = 0;
  /// The expert-tensor group: its ranks hold the same experts, each a 1/size slice of every
  /// expert's inner width (nullptr or size 1: whole experts).
  Group* expert_tensor = nullptr;
  int expert_tensor_size = 1;
  int expert_tensor_rank = 0;
  /// Context parallelism: the group over which the sequence is split; rank r of C holds chunks r and
  /// 2C - 1 - r of its 2C (Megatron's causal load balancing). How attention meets the other ranks'
  /// keys and values is context_exchange (Megatron's cp_comm_type).
  Group* context = nullptr;
  int context_size = 1;
  int context_rank = 0;
  ContextExchange context_exchange = ContextExchange::AllGather;
  /// The ring's neighbours (world ranks): keys and values go to the next rank and come from the
  /// previous one; their gradients travel the same way home. Messages carry context_tag.
  int context_next = -1;
  int context_previous = -1;
  int context_tag = 0;
  float layer_norm_epsilon = 1e-5f;
  bool keep_attention_scores = true;  ///< false: selective recomputation (scores rebuilt in backward)
  /// The plan's attention kernel is FlashAttention: the scores are never held whole, only one query
  /// block's at a time, in the forward and again in the backward (which recomputes them), as the fused
  /// kernel does (Dao et al. 2022, Algorithm 2 and 4). Otherwise (`attention: standard`) the softmax
  /// output is materialized and kept for the backward unless keep_attention_scores is false.
  bool fused_attention = false;

  [[nodiscard]] Buffer buffer(std::int64_t rows, std::int64_t cols) const { return {*backend, *meter, rows, cols}; }
  /// Sum over the tensor group, in place (nothing without tensor parallelism).
  void tensor_all_reduce(MatrixView m) const;
};

/// What a layer keeps between its passes for one microbatch.
struct Stash {
  virtual ~Stash() = default;
  Buffer output;        ///< rows x hidden (empty for the loss layers)
  Buffer input_grad;    ///< rows x hidden (empty for the first layer)
  double loss = 0;      ///< loss layers: the unscaled mean loss of the microbatch
  bool has_loss = false;
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  [[nodiscard]] std::vector<Param>& params() noexcept { return params_; }
  [[nodiscard]] const std::vector<Param>& params() const noexcept { return params_; }
  /// The layer's index in the model (-1 for the executor's own loss or input stand-ins).
  [[nodiscard]] int model_index() const noexcept { return model_index_; }

  /// `x` is empty for a layer that makes its own input (embedding).
  [[nodiscard]] virtual std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& batch, MatrixView x) = 0;
  /// `dy` is empty for a loss layer (its gradient comes from the loss).
  virtual void backward_input(const LayerContext& ctx, const Batch& batch, Stash& stash, MatrixView dy) = 0;
  virtual void backward_weight(const LayerContext& ctx, const Batch& batch, Stash& stash) = 0;
  /// Both halves at once (a fused backward): by default one after the other. A layer may instead
  /// run each matmul's weight gradient beside its input gradient and free what it saved as soon as
  /// nothing reads it any more, as autograd frees a node's saved tensors once the node has run.
  virtual void backward(const LayerContext& ctx, const Batch& batch, Stash& stash, MatrixView dy) {
    backward_input(ctx, batch, stash, dy);
    backward_weight(ctx, batch, stash);
  }
  /// After backward_input(), when backward_weight() comes later (a split backward): frees what the
  /// weight half does not read. It reads each matmul's input and its output's gradient only, as
  /// the zero-bubble schedules' weight-gradient store keeps them (Qi et al. 2023, Section 2).
  virtual void release_after_input(Stash& stash) { (void)stash; }

 protected:
  Param& add_param(std::string name, std::int64_t rows, std::int64_t cols, Split split, Param::Init init);
  std::vector<Param> params_;
  int model_index_ = -1;
};

/// Token + learned position embedding (replicated over the tensor group).
[[nodiscard]] std::unique_ptr<Layer> make_embedding(int model_index, const NetDims& dims);
/// Pre-LN GPT block: x + proj(attn(LN1(x))), then + fc2(gelu(fc1(LN2(.)))), causal multi-head attention.
[[nodiscard]] std::unique_ptr<Layer> make_transformer_block(int model_index, const NetDims& dims, int tensor_size);
/// The same block with the MLP replaced by a mixture of experts (executor/net/moe_mlp.h): expert
/// rank `expert_rank` of `expert_size` holds dims.moe.experts / expert_size routed experts (each
/// split over the expert-tensor group by its parameters' local shapes).
[[nodiscard]] std::unique_ptr<Layer> make_moe_transformer_block(int model_index, const NetDims& dims, int tensor_size,
                                                                int expert_size, int expert_rank);
/// Residual MLP block: x + fc2(gelu(fc1(LN(x)))), inner width dims.generic_ffn.
[[nodiscard]] std::unique_ptr<Layer> make_mlp_block(int model_index, const NetDims& dims, int tensor_size);
/// Final layer norm, logits over the vocabulary (an untied projection), mean cross-entropy.
[[nodiscard]] std::unique_ptr<Layer> make_output_head(int model_index, const NetDims& dims);
/// Stand-ins for models listed by hand: the first stage's input is Batch::inputs, and the loss
/// after the last layer is 0.5 x the mean over rows of the squared output.
[[nodiscard]] std::unique_ptr<Layer> make_input_layer(const NetDims& dims);
[[nodiscard]] std::unique_ptr<Layer> make_squared_loss();

/// Parts of a full parameter a rank holds: the local shape of `p` split over `size` ranks (the
/// tensor group's for dense weights, the expert-tensor group's for routed experts).
void set_local_shape(Param& p, int size);

}  // namespace mpsim::executor
