#pragma once
/// The part of the model one rank holds: its chunks (virtual stages) of real layers, their flat
/// parameter and gradient buffers, the per-microbatch state between passes, and the optimizer.
///
/// Layer mapping (model -> executor, docs/executor.md):
/// - Embedding -> token + learned position embedding;
/// - Transformer -> pre-LN GPT block (causal multi-head attention, GELU MLP, biases, residuals),
///   with the widths of Model::shape whatever the family; a layer with routed experts
///   (Layer::routed, the simulator's MoE rule) gets the mixture-of-experts MLP (moe_mlp.h);
/// - OutputHead -> final layer norm, untied logits projection, mean cross-entropy;
/// - Generic -> residual MLP block (layer norm, fc1 to 4h, GELU, fc2 back to h).
/// Widths (net_dims): from Model::shape when the model has one; otherwise h is the largest width in
/// [4, 512] whose MLP block (8h² + 7h parameters) fits in the largest Generic layer's parameter
/// count, seq = 1 and vocab = 64. A model that does not start with an Embedding gets seeded inputs;
/// one that does not end with an OutputHead gets the loss 0.5 x mean over rows of |output|².
///
/// Flat buffers: chunk 0's parameters first, then chunk 1's, ...; inside a chunk, the layers' dense
/// parameters (layers in model order, each layer's in its order), then the routed experts' (the
/// same order), so each chunk's experts are one range for their own reduction. Gradients mirror
/// parameters element for element.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "executor/backend/backend.h"
#include "executor/net/buffer.h"
#include "executor/net/layers.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::executor {

enum class Optimizer : std::uint8_t { Sgd, Adam };

struct NetOptions {
  std::uint64_t seed = 1;
  Optimizer optimizer = Optimizer::Sgd;
  float learning_rate = 0.1f;
};

/// The widths the executor builds for `model` (rule above). Throws std::invalid_argument when the
/// tensor degree does not divide the heads or the MLP widths, or for latent attention (simulated only).
[[nodiscard]] NetDims net_dims(const model::Model& model, int tensor);

/// The layers of chunk `chunk` of pipeline rank `pipeline_rank`, with parameter shapes for a tensor
/// group of the plan's tensor degree and the routed experts of expert rank `expert_rank` of its expert
/// degree (no memory allocated).
[[nodiscard]] std::vector<std::unique_ptr<Layer>> build_chunk_layers(const model::Model& model, const plan::Plan& plan,
                                                                     int pipeline_rank, int chunk, int expert_rank = 0);

/// Parameters of every chunk of (pipeline_rank, expert_rank, any tensor rank) in flat-buffer order,
/// with offsets set and no memory: what a rank's flat buffer holds, for whoever gathers it.
[[nodiscard]] std::vector<Param> rank_param_layout(const model::Model& model, const plan::Plan& plan,
                                                   int pipeline_rank, int expert_rank = 0);

/// The value of element (row, col) of the full parameter `p` of model layer `model_index`.
[[nodiscard]] float initial_value(std::uint64_t seed, int model_index, const Param& p, std::int64_t row,
                                  std::int64_t col) noexcept;

/// A half-open range of elements of the flat buffers.
struct ElementRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Where a rank sits in the plan's layout, and the groups its layers communicate over.
struct RankPlace {
  int pipeline = 0;
  int tensor = 0;
  int data = 0;
  int expert = 0;
  int expert_tensor = 0;
  int context = 0;
  Group* tensor_group = nullptr;  ///< nullptr: no tensor parallelism
  Group* expert_group = nullptr;  ///< nullptr: no expert parallelism
  Group* expert_tensor_group = nullptr;  ///< nullptr: whole experts (expert_tensor 1)
  Group* context_group = nullptr;  ///< nullptr: no context parallelism
  int context_next = -1;      ///< world ranks of the context ring's neighbours (cp_comm_type p2p)
  int context_previous = -1;
  int context_tag = 0;        ///< the tag of the ring's messages
};

class Network {
 public:
  Network(Backend& backend, MemoryMeter& meter, const model::Model& model, const plan::Plan& plan,
          const RankPlace& place, const NetOptions& options);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  [[nodiscard]] int chunks() const noexcept { return static_cast<int>(chunks_.size()); }
  /// Rows x hidden of the activation (and gradient) passed between virtual stages.
  [[nodiscard]] std::int64_t activation_rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t hidden() const noexcept { return dims_.hidden; }

  /// Starts step `step` (0-based, warm-up included): zeroes the gradients and makes the batches.
  void begin_step(int step);
  /// Releases every microbatch's state (all sends of the step must be complete).
  void end_step();

  /// `input` is empty on virtual stage 0.
  void forward(int microbatch, int chunk, MatrixView input);
  [[nodiscard]] MatrixView output(int microbatch, int chunk) const;
  /// The whole backward of the chunk for the microbatch, layer by layer (last to first), each layer's
  /// input and weight halves one after the other and its activations freed once it is through, as
  /// autograd frees what a node saved when the node has run. `dy` is empty on the last virtual stage.
  void backward(int microbatch, int chunk, MatrixView dy);
  /// A split backward's input half: every layer's, then what the weight half does not read is freed.
  void backward_input(int microbatch, int chunk, MatrixView dy);
  [[nodiscard]] MatrixView input_grad(int microbatch, int chunk) const;
  /// A split backward's weight half, layer by layer, each layer's activations freed once it is through.
  void backward_weight(int microbatch, int chunk);
  /// The chunk's output is read no more (its send is complete, and the next virtual stage is another
  /// rank's): freed, as Megatron's deallocate_output_tensor frees a pipeline output once sent.
  void release_output(int microbatch, int chunk);
  /// The chunk's input gradient is read no more (sent, or the previous chunk's backward is through).
  void release_input_grad(int microbatch, int chunk);

  [[nodiscard]] float* parameters() const noexcept { return params_; }
  [[nodiscard]] float* gradients() const noexcept { return grads_; }
  [[nodiscard]] std::size_t parameter_count() const noexcept { return count_; }
  /// Elements of chunk `chunk` in the flat buffers.
  [[nodiscard]] ElementRange chunk_range(int chunk) const noexcept { return chunk_ranges_[static_cast<std::size_t>(chunk)]; }
  /// The routed experts' elements of chunk `chunk`: the end of its range (empty without experts).
  [[nodiscard]] ElementRange chunk_expert_range(int chunk) const noexcept {
    return expert_ranges_[static_cast<std::size_t>(chunk)];
  }

  /// One optimizer step over `ranges` of the flat buffers (all of them without ZeRO).
  void optimizer_step(std::span<const ElementRange> ranges);

  /// Sum of the unscaled mean losses of this step's microbatches on this rank, and their number.
  [[nodiscard]] std::pair<double, int> losses() const noexcept { return {loss_sum_, loss_count_}; }

 private:
  struct Run {
    std::vector<std::unique_ptr<Stash>> stashes;
    Buffer input_copy;   // full recomputation: the stashed chunk input
    Buffer kept_output;  // full recomputation: the chunk's output, kept for its send
    Buffer kept_input_grad;  // the chunk's input gradient once its layers' stashes are gone
    bool recompute = false;
  };
  void recompute_if_dropped(Run& run, int chunk, const Batch& batch);
  /// Layer `layer` is through: the next layer's stash goes (its input gradient was this layer's dy).
  void free_after(Run& run, std::size_t layer);
  /// The chunk's backward is through: every stash goes but the first layer's input gradient.
  void finish_backward(Run& run);
  void run_forward(Run& run, int chunk, const Batch& batch, MatrixView input);
  [[nodiscard]] Run& run_of(int microbatch, int chunk);
  [[nodiscard]] const Run& run_of(int microbatch, int chunk) const;
  [[nodiscard]] Batch make_batch(int step, int microbatch) const;

  Backend& backend_;
  MemoryMeter& meter_;
  const model::Model& model_;
  plan::Plan plan_;
  NetOptions options_;
  NetDims dims_;
  LayerContext ctx_;
  int data_rank_;
  std::int64_t rows_ = 0;
  std::vector<std::vector<std::unique_ptr<Layer>>> chunks_;
  std::vector<ElementRange> chunk_ranges_;
  std::vector<ElementRange> expert_ranges_;
  std::size_t count_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  float* adam_m_ = nullptr;
  float* adam_v_ = nullptr;
  int optimizer_steps_ = 0;
  int step_ = 0;
  std::map<int, Batch> batches_;
  std::map<std::pair<int, int>, Run> runs_;
  double loss_sum_ = 0;
  int loss_count_ = 0;
};

}  // namespace mpsim::executor
