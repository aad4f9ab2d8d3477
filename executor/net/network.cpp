#include "executor/net/network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "executor/net/init.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/replica_share.h"

namespace mpsim::executor {
namespace {

using model::LayerKind;

std::uint64_t name_hash(const std::string& s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: stable across builds
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

/// Sets the offsets of one chunk's parameters from `offset` on: the dense ones first, then the
/// routed experts'. Returns the experts' range.
ElementRange place_chunk(std::vector<std::unique_ptr<Layer>>& layers, std::size_t& offset) {
  ElementRange experts;
  for (const bool expert : {false, true}) {
    if (expert) experts.begin = offset;
    for (auto& layer : layers) {
      for (Param& p : layer->params()) {
        if (p.expert != expert) continue;
        p.offset = offset;
        offset += p.count();
      }
    }
  }
  experts.end = offset;
  return experts;
}

/// A model that does not start with an embedding is fed seeded inputs (rows x hidden values).
bool takes_seeded_inputs(const model::Model& model) {
  return model.layers.empty() || model.layers.front().kind != LayerKind::Embedding;
}

}  // namespace

NetDims net_dims(const model::Model& model, int tensor) {
  NetDims d;
  if (model.shape) {
    const model::TransformerShape& s = *model.shape;
    // The executor's attention is GPT-style multi-head attention; latent attention is simulated only.
    if (s.mla) {
      throw std::invalid_argument(
          fmt::format("the executor runs multi-head attention; {} has latent attention", model.name));
    }
    if (s.mtp_layers > 0) {
      throw std::invalid_argument(
          fmt::format("the executor runs next-token prediction; {} has multi-token prediction", model.name));
    }
    if (s.moe) {
      d.moe.experts = s.moe->experts;
      d.moe.top_k = s.moe->top_k;
      d.moe.expert_ffn = s.moe->expert_ffn;
      d.moe.shared_ffn = s.moe->shared_experts * s.moe->shared_expert_ffn;
      d.moe.router_bias = s.moe->router_bias;
    }
    d.hidden = s.hidden;
    d.heads = std::max<std::int64_t>(s.heads, 1);
    d.head_dim = s.head_dim > 0 ? s.head_dim : s.hidden / d.heads;
    d.ffn = s.ffn > 0 ? s.ffn : 4 * s.hidden;
    d.seq = std::max<std::int64_t>(s.seq_len, 1);
    d.vocab = s.vocab > 0 ? s.vocab : 64;
    d.positions = s.max_positions > 0 ? std::max(s.max_positions, d.seq) : d.seq;
  } else {
    std::int64_t largest = 0;
    for (const model::Layer& l : model.layers) {
      if (l.kind == LayerKind::Generic) largest = std::max(largest, l.parameters);
    }
    std::int64_t h = 4;
    while (h < 512 && 8 * (h + 1) * (h + 1) + 7 * (h + 1) <= largest) ++h;
    d.hidden = h;
    d.heads = 1;
    d.head_dim = h;
    d.ffn = 4 * h;
    d.seq = 1;
    d.vocab = 64;
    d.positions = 1;
  }
  d.generic_ffn = 4 * d.hidden;
  if (d.heads % tensor != 0 || d.ffn % tensor != 0 || d.generic_ffn % tensor != 0 || d.moe.shared_ffn % tensor != 0) {
    throw std::invalid_argument(fmt::format("tensor degree {} does not divide the heads ({}) and MLP widths ({}, {}, {})",
                                            tensor, d.heads, d.ffn, d.generic_ffn, d.moe.shared_ffn));
  }
  return d;
}

std::vector<std::unique_ptr<Layer>> build_chunk_layers(const model::Model& model, const plan::Plan& plan,
                                                       int pipeline_rank, int chunk, int expert_rank) {
  const NetDims dims = net_dims(model, plan.degrees[plan::Axis::Tensor]);
  const auto ranges = plan::virtual_stage_layers(plan, model);
  const int vs = plan::virtual_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], pipeline_rank, chunk);
  const plan::LayerRange range = ranges.at(static_cast<std::size_t>(vs));
  const int stage = plan::partition_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], vs);
  std::vector<std::unique_ptr<Layer>> layers;
  if (stage == 0 && takes_seeded_inputs(model)) {
    layers.push_back(make_input_layer(dims));
  }
  for (int i = range.first; i < range.last; ++i) {
    const model::Layer& layer = model.layers[static_cast<std::size_t>(i)];
    switch (layer.kind) {
      case LayerKind::Embedding: layers.push_back(make_embedding(i, dims)); break;
      case LayerKind::Transformer:
        // The model says which blocks have routed experts (dense_layers, frequency).
        layers.push_back(layer.routed.experts > 0
                             ? make_moe_transformer_block(i, dims, plan.degrees[plan::Axis::Tensor],
                                                          plan.degrees[plan::Axis::Expert], expert_rank)
                             : make_transformer_block(i, dims, plan.degrees[plan::Axis::Tensor]));
        break;
      case LayerKind::OutputHead: layers.push_back(make_output_head(i, dims)); break;
      case LayerKind::Generic:
        layers.push_back(make_mlp_block(i, dims, plan.degrees[plan::Axis::Tensor]));
        break;
    }
  }
  if (stage == plan.partition_stages() - 1 && (model.layers.empty() || model.layers.back().kind != LayerKind::OutputHead)) {
    layers.push_back(make_squared_loss());
  }
  for (auto& layer : layers) {
    // Routed experts split over the expert-tensor group, the rest over the tensor group.
    for (Param& p : layer->params())
      set_local_shape(
          p, p.expert ? std::max(1, plan.degrees[plan::Axis::ExpertTensor]) : plan.degrees[plan::Axis::Tensor]);
  }
  return layers;
}

std::vector<Param> rank_param_layout(const model::Model& model, const plan::Plan& plan, int pipeline_rank,
                                     int expert_rank) {
  std::vector<Param> out;
  std::size_t offset = 0;
  for (int c = 0; c < plan.virtual_stages; ++c) {
    auto layers = build_chunk_layers(model, plan, pipeline_rank, c, expert_rank);
    (void)place_chunk(layers, offset);
    for (const auto& layer : layers) {
      for (Param p : layer->params()) {
        p.name = fmt::format("{}\t{}", layer->model_index(), p.name);
        out.push_back(std::move(p));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Param& a, const Param& b) { return a.offset < b.offset; });
  return out;
}

float initial_value(std::uint64_t seed, int model_index, const Param& p, std::int64_t row, std::int64_t col) noexcept {
  const float u = seeded_uniform(seed, static_cast<std::uint64_t>(model_index + 1), name_hash(p.name),
                                 static_cast<std::uint64_t>(row * p.cols + col));
  switch (p.init) {
    case Param::Init::Weight: return u / std::sqrt(static_cast<float>(p.rows));
    case Param::Init::Bias: return 0.02f * u;
    case Param::Init::Gamma: return 1.0f + 0.1f * u;
    case Param::Init::Beta: return 0.05f * u;
    case Param::Init::Table: return 0.5f * u;
  }
  return 0;
}

namespace {

ContextExchange context_exchange(plan::ContextComm comm) {
  switch (comm) {
    case plan::ContextComm::P2p: return ContextExchange::Ring;
    case plan::ContextComm::AllToAll: return ContextExchange::AllToAll;
    case plan::ContextComm::AllGather: return ContextExchange::AllGather;
  }
  return ContextExchange::AllGather;
}

}  // namespace

Network::Network(Backend& backend, MemoryMeter& meter, const model::Model& model, const plan::Plan& plan,
                 const RankPlace& place, const NetOptions& options)
    : backend_(backend),
      meter_(meter),
      model_(model),
      plan_(plan),
      options_(options),
      dims_(net_dims(model, plan.degrees[plan::Axis::Tensor])),
      data_rank_(place.data) {
  ctx_.backend = &backend;
  ctx_.tensor = place.tensor_group;
  ctx_.tensor_size = plan.degrees[plan::Axis::Tensor];
  ctx_.tensor_rank = place.tensor;
  ctx_.expert = place.expert_group;
  ctx_.expert_size = plan.degrees[plan::Axis::Expert];
  ctx_.expert_rank = place.expert;
  ctx_.expert_tensor = place.expert_tensor_group;
  ctx_.expert_tensor_size = place.expert_tensor_group != nullptr ? plan.degrees[plan::Axis::ExpertTensor] : 1;
  ctx_.expert_tensor_rank = place.expert_tensor;
  ctx_.context = place.context_group;
  ctx_.context_size = plan.degrees[plan::Axis::Context];
  ctx_.context_rank = place.context;
  ctx_.context_exchange = context_exchange(plan.context_comm);
  ctx_.context_next = place.context_next;
  ctx_.context_previous = place.context_previous;
  ctx_.context_tag = place.context_tag;
  ctx_.meter = &meter;
  ctx_.keep_attention_scores = plan.recompute != model::Recompute::Selective;
  ctx_.fused_attention = plan.attention == plan::AttentionKernel::Flash;
  rows_ = static_cast<std::int64_t>(plan.micro_batch) * dims_.seq / plan.degrees[plan::Axis::Context];
  for (int c = 0; c < plan.virtual_stages; ++c) {
    chunks_.push_back(build_chunk_layers(model, plan, place.pipeline, c, place.expert));
    const std::size_t begin = count_;
    expert_ranges_.push_back(place_chunk(chunks_.back(), count_));
    chunk_ranges_.push_back({begin, count_});
  }
  params_ = backend.allocate(count_);
  grads_ = backend.allocate(count_);
  meter.add(static_cast<std::int64_t>(2 * count_ * sizeof(float)));
  std::vector<float> host(count_);
  for (auto& chunk : chunks_) {
    for (auto& layer : chunk) {
      for (Param& p : layer->params()) {
        p.data = params_ + p.offset;
        p.grad = grads_ + p.offset;
        const int split_rank = p.expert ? place.expert_tensor : place.tensor;
        const std::int64_t row0 = p.split == Split::Rows ? split_rank * p.local_rows : 0;
        const std::int64_t col0 = p.split == Split::Columns ? split_rank * p.local_cols : 0;
        for (std::int64_t r = 0; r < p.local_rows; ++r) {
          for (std::int64_t c = 0; c < p.local_cols; ++c) {
            host[p.offset + static_cast<std::size_t>(r * p.local_cols + c)] =
                initial_value(options.seed, layer->model_index(), p, row0 + r, col0 + c);
          }
        }
      }
    }
  }
  backend.upload(host, params_);
}

Network::~Network() {
  runs_.clear();
  for (float* p : {params_, grads_, adam_m_, adam_v_}) {
    if (p != nullptr) backend_.release(p);
  }
}

Batch Network::make_batch(int step, int microbatch) const {
  Batch b;
  b.samples = plan_.micro_batch;
  b.rows = rows_;
  // Each context rank averages the loss over its share of the tokens. Every microbatch weighs the same
  // in the global mean, 1 / the step's microbatches over all replicas, whatever its replica's share:
  // the data-parallel sum of the gradients is then the whole global batch's.
  b.loss_scale = 1.0f / static_cast<float>(plan::step_microbatches(plan_) * plan_.degrees[plan::Axis::Context]);
  // Global sample index: data-parallel rank d holds the samples of microbatches [first, first + its
  // share) of the global batch (d x m onwards when the shares are even), so the same global batch is
  // seen however it is split.
  const std::int64_t first =
      (plan::first_microbatch_of_replica(plan_, data_rank_) + microbatch) * plan_.micro_batch;
  // The positions this rank holds: all, or under context parallelism chunks r and 2C - 1 - r of 2C.
  std::vector<std::int64_t> held;
  const std::int64_t c = plan_.degrees[plan::Axis::Context];
  const std::int64_t chunk = dims_.seq / (2 * c);
  if (c == 1) {
    for (std::int64_t p = 0; p < dims_.seq; ++p) held.push_back(p);
  } else {
    const std::int64_t r = ctx_.context_rank;
    for (const std::int64_t part : {r, 2 * c - 1 - r}) {
      for (std::int64_t p = part * chunk; p < (part + 1) * chunk; ++p) held.push_back(p);
    }
  }
  // The seeded inputs cost a hash per value (seq x hidden per sample): made only where they are read,
  // or a GPU would idle while the host made them for every microbatch of a model with an embedding.
  const bool seeded_inputs = takes_seeded_inputs(model_);
  for (std::int64_t s = 0; s < b.samples; ++s) {
    const auto tokens = sample_tokens(options_.seed, step, first + s, dims_.seq, dims_.vocab);
    for (const std::int64_t p : held) {
      b.tokens.push_back(tokens[static_cast<std::size_t>(p)]);
      b.labels.push_back(tokens[static_cast<std::size_t>(p + 1)]);
      b.positions.push_back(static_cast<std::int32_t>(p));
      for (std::int64_t e = 0; seeded_inputs && e < dims_.hidden; ++e) {
        b.inputs.push_back(seeded_uniform(options_.seed, 0xDA7A, static_cast<std::uint64_t>(step),
                                          static_cast<std::uint64_t>(((first + s) * dims_.seq + p) * dims_.hidden + e)));
      }
    }
  }
  return b;
}

void Network::begin_step(int step) {
  step_ = step;
  runs_.clear();
  batches_.clear();
  loss_sum_ = 0;
  loss_count_ = 0;
  backend_.fill({grads_, 1, static_cast<std::int64_t>(count_), static_cast<std::int64_t>(count_)}, 0.0f);
}

void Network::end_step() {
  runs_.clear();
  batches_.clear();
}

Network::Run& Network::run_of(int microbatch, int chunk) { return runs_[{microbatch, chunk}]; }

const Network::Run& Network::run_of(int microbatch, int chunk) const {
  const auto it = runs_.find({microbatch, chunk});
  if (it == runs_.end()) {
    throw std::logic_error(fmt::format("no forward pass of microbatch {} chunk {} on this rank", microbatch, chunk));
  }
  return it->second;
}

void Network::run_forward(Run& run, int chunk, const Batch& batch, MatrixView input) {
  run.stashes.clear();
  MatrixView x = input;
  for (auto& layer : chunks_[static_cast<std::size_t>(chunk)]) {
    run.stashes.push_back(layer->forward(ctx_, batch, x));
    x = run.stashes.back()->output.view();
  }
}

void Network::forward(int microbatch, int chunk, MatrixView input) {
  auto [it, fresh] = batches_.try_emplace(microbatch);
  if (fresh) it->second = make_batch(step_, microbatch);
  const Batch& batch = it->second;
  Run& run = run_of(microbatch, chunk);
  run_forward(run, chunk, batch, input);
  for (const auto& s : run.stashes) {
    if (s->has_loss) {
      loss_sum_ += s->loss;
      ++loss_count_;
    }
  }
  // Full recomputation keeps the chunk's input and output only (the Transformer and Generic layers'
  // activations are rebuilt in backward; this executor re-runs the whole chunk, embedding and head
  // included, which changes the time but not the gradients).
  if (plan_.recompute == model::Recompute::Full) {
    if (input.data != nullptr) {
      run.input_copy = ctx_.buffer(input.rows, input.cols);
      backend_.copy(input, run.input_copy.view());
    }
    run.kept_output = std::move(run.stashes.back()->output);
    run.stashes.clear();
    run.recompute = true;
  }
}

MatrixView Network::output(int microbatch, int chunk) const {
  const Run& run = run_of(microbatch, chunk);
  if (!run.kept_output.empty()) return run.kept_output.view();
  return run.stashes.back()->output.view();
}

void Network::recompute_if_dropped(Run& run, int chunk, const Batch& batch) {
  if (!run.recompute) return;
  run_forward(run, chunk, batch, run.input_copy.empty() ? MatrixView{} : run.input_copy.view());
  run.recompute = false;
}

void Network::free_after(Run& run, std::size_t layer) {
  if (layer + 1 < run.stashes.size()) run.stashes[layer + 1].reset();
}

void Network::finish_backward(Run& run) {
  if (!run.stashes.empty() && run.stashes.front() != nullptr && !run.stashes.front()->input_grad.empty()) {
    run.kept_input_grad = std::move(run.stashes.front()->input_grad);
  }
  run.stashes.clear();
  run.input_copy.reset();
  run.kept_output.reset();
}

void Network::backward(int microbatch, int chunk, MatrixView dy) {
  Run& run = run_of(microbatch, chunk);
  const Batch& batch = batches_.at(microbatch);
  recompute_if_dropped(run, chunk, batch);
  auto& layers = chunks_[static_cast<std::size_t>(chunk)];
  for (std::size_t i = layers.size(); i-- > 0;) {
    layers[i]->backward(ctx_, batch, *run.stashes[i], dy);
    free_after(run, i);
    dy = run.stashes[i]->input_grad.view();
  }
  finish_backward(run);
}

void Network::backward_input(int microbatch, int chunk, MatrixView dy) {
  Run& run = run_of(microbatch, chunk);
  const Batch& batch = batches_.at(microbatch);
  recompute_if_dropped(run, chunk, batch);
  auto& layers = chunks_[static_cast<std::size_t>(chunk)];
  for (std::size_t i = layers.size(); i-- > 0;) {
    layers[i]->backward_input(ctx_, batch, *run.stashes[i], dy);
    layers[i]->release_after_input(*run.stashes[i]);
    // The layer's output was the next layer's input, which only that layer's input half read. The
    // chunk's own output goes with release_output() or at the end of the backward.
    if (i + 1 < layers.size()) run.stashes[i]->output.reset();
    dy = run.stashes[i]->input_grad.view();
  }
}

MatrixView Network::input_grad(int microbatch, int chunk) const {
  const Run& run = run_of(microbatch, chunk);
  if (!run.kept_input_grad.empty() || run.stashes.empty()) return run.kept_input_grad.view();
  return run.stashes.front()->input_grad.view();
}

void Network::backward_weight(int microbatch, int chunk) {
  Run& run = run_of(microbatch, chunk);
  const Batch& batch = batches_.at(microbatch);
  auto& layers = chunks_[static_cast<std::size_t>(chunk)];
  for (std::size_t i = layers.size(); i-- > 0;) {
    layers[i]->backward_weight(ctx_, batch, *run.stashes[i]);
    free_after(run, i);
  }
  finish_backward(run);
}

void Network::release_output(int microbatch, int chunk) {
  Run& run = run_of(microbatch, chunk);
  run.kept_output.reset();
  if (!run.stashes.empty() && run.stashes.back() != nullptr) run.stashes.back()->output.reset();
}

void Network::release_input_grad(int microbatch, int chunk) {
  Run& run = run_of(microbatch, chunk);
  run.kept_input_grad.reset();
  if (!run.stashes.empty() && run.stashes.front() != nullptr) run.stashes.front()->input_grad.reset();
}

void Network::optimizer_step(std::span<const ElementRange> ranges) {
  ++optimizer_steps_;
  if (options_.optimizer == Optimizer::Adam && adam_m_ == nullptr) {
    adam_m_ = backend_.allocate(count_);
    adam_v_ = backend_.allocate(count_);
    meter_.add(static_cast<std::int64_t>(2 * count_ * sizeof(float)));
  }
  for (const ElementRange& r : ranges) {
    const std::size_t n = r.end - r.begin;
    if (n == 0) continue;
    switch (options_.optimizer) {
      case Optimizer::Sgd: backend_.sgd_step(params_ + r.begin, grads_ + r.begin, n, options_.learning_rate); break;
      case Optimizer::Adam: {
        AdamHyper hyper;
        hyper.learning_rate = options_.learning_rate;
        hyper.step = optimizer_steps_;
        backend_.adam_step(params_ + r.begin, grads_ + r.begin, adam_m_ + r.begin, adam_v_ + r.begin, n, hyper);
        break;
      }
    }
  }
}

}  // namespace mpsim::executor
