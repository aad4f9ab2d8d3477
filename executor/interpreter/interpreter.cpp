#include "executor/interpreter/interpreter.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "executor/interpreter/program_for_plan.h"
#include "executor/interpreter/step_record.h"
#include "sim/plan/layout.h"
#include "sim/plan/replica_share.h"
#include "sim/schedule/message.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/program.h"
#include "sim/schedule/report_builder.h"
#include "sim/schedule/report_parts.h"
#include "sim/schedule/validate.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::executor {
namespace {

using schedule::Op;
using schedule::OpKind;


Role role_of(OpKind k) noexcept {
  if (schedule::is_send(k)) return Role::Send;
  if (schedule::is_recv(k)) return Role::Recv;
  if (schedule::is_collective(k)) return Role::Collective;
  return Role::Compute;
}

class Interpreter {
 public:
  Interpreter(Backend& backend, const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
              const ExecuteOptions& options)
      : backend_(backend),
        cluster_(cluster),
        model_(model),
        plan_(plan),
        options_(options),
        layout_(plan),
        me_(backend.world_rank()),
        pipeline_rank_(layout_.coordinate(me_, plan::Axis::Pipeline)) {
    if (const auto mismatch = world_size_mismatch(plan, backend.world_size())) throw std::invalid_argument(*mismatch);
    const schedule::ChunkGradientBytes gradient_bytes = schedule::chunk_gradient_split(model, plan);
    gradient_bytes_ = gradient_bytes.dense;
    expert_gradient_bytes_ = gradient_bytes.experts;
    // Each rank runs its replica's program: with uneven shares, the schedule of its own microbatch count.
    program_ = program_for_plan(model, plan, gradient_bytes, options.grad_bucket,
                                layout_.coordinate(me_, plan::Axis::Data));
    // As the program's sharded weights.
    zero3_ = plan.zero >= 3 && plan.degrees.product(plan::Axis::Data | plan::Axis::Context) > 1;
    shard_axes_ = schedule::dense_shard_group(plan);
    if (plan.degrees[plan::Axis::DataReplica] > 1) replica_axes_ = plan::Axis::DataReplica;
    if (const auto error = schedule::validate(program_)) {
      throw std::invalid_argument(fmt::format("invalid program: {}", error->message));
    }
    // Point-to-point messages are tagged with their number; the gathers to rank 0 use the two after,
    // the context ring the one after those. Every rank takes the same tags past the messages: those of
    // the largest share when the replicas' counts differ. The loss is where each replica's routes end.
    std::int64_t messages = 0;
    int most_microbatches = 0;
    for (int d = 0; d < plan.degrees[plan::Axis::Data]; ++d) {
      const schedule::PipelineShape shape = schedule::shape_of(plan::replica_plan(plan, d));
      if (schedule::message_count(shape) > messages) {
        messages = schedule::message_count(shape);
        most_microbatches = shape.microbatches;
      }
      loss_ranks_.emplace_back(schedule::rank_of(shape, schedule::route_of(shape, 0).last),
                               schedule::rank_of(shape, schedule::route_of(shape, shape.microbatches - 1).last));
    }
    if (messages + 3 > backend.max_tag()) {
      throw std::invalid_argument(fmt::format("{} microbatches x {} virtual stages make {} messages, more than the "
                                              "backend's largest tag ({})",
                                              most_microbatches, plan.stages(), messages, backend.max_tag()));
    }
    gather_tag_ = static_cast<int>(messages);
    // A GPU's slowdown (a what-if, sim/topology/instance_override.h) as the simulator prices it: each
    // compute op takes `slowdown` times as long. The CPU backend emulates it by waiting; a real GPU's
    // speed is its own.
    slowdown_ = cluster.device(cluster.gpus().at(static_cast<std::size_t>(me_))).slowdown;
    if (slowdown_ != 1.0 && backend.name() != "cpu") {
      throw std::invalid_argument(fmt::format("{} is {}x slow in the topology; only the cpu backend emulates a "
                                              "slowdown (a GPU runs at its own speed)",
                                              cluster.device(cluster.gpus().at(static_cast<std::size_t>(me_))).name,
                                              slowdown_));
    }
    parameter_tag_ = gather_tag_ + 1;
    // Every rank makes every group the program names (and the tensor and expert groups its layers
    // use), in the same order: Backend::make_group is collective over the world.
    std::set<plan::AxisSet> axes{plan::Axis::Tensor};
    if (plan.degrees[plan::Axis::Expert] > 1) axes.insert(plan::Axis::Expert);
    if (plan.degrees[plan::Axis::ExpertTensor] > 1) axes.insert(plan::Axis::ExpertTensor);
    if (plan.degrees[plan::Axis::Context] > 1) axes.insert(plan::Axis::Context);
    for (const auto& stream : program_.streams) {
      for (const Op& op : stream) {
        if (schedule::is_collective(op.kind)) axes.insert(op.group);
      }
    }
    for (const plan::AxisSet a : axes) {
      const std::vector<int> mine = layout_.group(me_, a);
      for (const std::vector<int>& group : layout_.groups(a)) {
        auto g = backend.make_group(group);
        if (group == mine) groups_[a] = std::move(g);
      }
    }
    RankPlace place;
    place.pipeline = pipeline_rank_;
    place.tensor = layout_.coordinate(me_, plan::Axis::Tensor);
    place.data = layout_.coordinate(me_, plan::Axis::Data);
    place.expert = layout_.coordinate(me_, plan::Axis::Expert);
    place.expert_tensor = layout_.coordinate(me_, plan::Axis::ExpertTensor);
    place.context = layout_.coordinate(me_, plan::Axis::Context);
    if (plan.degrees[plan::Axis::Context] > 1) {
      place.context_group = groups_.at(plan::Axis::Context).get();
      place.context_next =
          layout_.with(me_, plan::Axis::Context, (place.context + 1) % plan.degrees[plan::Axis::Context]);
      place.context_previous =
          layout_.with(me_, plan::Axis::Context,
                       (place.context + plan.degrees[plan::Axis::Context] - 1) % plan.degrees[plan::Axis::Context]);
      place.context_tag = parameter_tag_ + 1;
    }
    place.tensor_group = groups_.at(plan::Axis::Tensor).get();
    if (plan.degrees[plan::Axis::Expert] > 1) place.expert_group = groups_.at(plan::Axis::Expert).get();
    if (plan.degrees[plan::Axis::ExpertTensor] > 1)
      place.expert_tensor_group = groups_.at(plan::Axis::ExpertTensor).get();
    network_ = std::make_unique<Network>(backend, meter_, model, plan, place, options.net);
  }

  ExecuteResult run() {
    ExecuteResult result;
    result.root = backend_.world_rank() == 0;
    std::vector<std::vector<StepRecord>> measured;  // rank 0: [step][world rank]
    const int total = options_.warmup + options_.steps;
    for (int step = 0; step < total; ++step) {
      StepRecord mine = run_step(step);
      std::vector<StepRecord> all = gather(mine);
      if (!result.root) continue;
      double loss = 0;
      std::int64_t count = 0;
      // The loss is where the microbatches' routes end: the last pipeline rank, rank 0 in a V, both
      // in a bidirectional schedule (of each replica's own count).
      for (int r = 0; r < layout_.ranks(); ++r) {
        const int pipeline = layout_.coordinate(r, plan::Axis::Pipeline);
        const auto [loss_rank, other_loss_rank] =
            loss_ranks_[static_cast<std::size_t>(layout_.coordinate(r, plan::Axis::Data))];
        if ((pipeline != loss_rank && pipeline != other_loss_rank) || layout_.coordinate(r, plan::Axis::Tensor) != 0) {
          continue;
        }
        loss += all[static_cast<std::size_t>(r)].loss_sum;
        count += all[static_cast<std::size_t>(r)].loss_count;
      }
      const double mean = count > 0 ? loss / static_cast<double>(count) : 0;
      result.losses.push_back(mean);
      const double seconds = step_seconds(all);
      if (options_.print_losses) {
        std::cout << fmt::format("step {}{}: loss {:.6f}, {:.3f} ms\n", step + 1, step < options_.warmup ? " (warm-up)" : "",
                                 mean, seconds * 1e3)
                  << std::flush;
      }
      if (step >= options_.warmup) {
        result.step_times_s.push_back(seconds);
        measured.push_back(std::move(all));
      }
    }
    if (zero3_) {
      for (int c = 0; c < network_->chunks(); ++c) gather_chunk(c);  // whole weights for the dump
    }
    if (options_.dump_parameters) result.parameters = gather_parameters();
    backend_.barrier();
    if (result.root && !measured.empty()) {
      std::vector<int> order(result.step_times_s.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return result.step_times_s[static_cast<std::size_t>(a)] < result.step_times_s[static_cast<std::size_t>(b)]; });
      result.median_step = order[(order.size() - 1) / 2];
      build_report(measured[static_cast<std::size_t>(result.median_step)], result);
    }
    return result;
  }

 private:
  StepRecord run_step(int step) {
    backend_.barrier();
    backend_.reset_marks();
    overwaited_ = {};
    network_->begin_step(step);
    reduce_cursor_.assign(2 * static_cast<std::size_t>(network_->chunks()), 0);
    gather_cursor_.assign(2 * static_cast<std::size_t>(network_->chunks()), 0);
    owned_.clear();
    scattered_.clear();
    whole_.clear();
    const int start_mark = backend_.record_mark();
    const auto& stream = program_.streams[static_cast<std::size_t>(pipeline_rank_)];
    std::vector<std::pair<int, int>> op_marks;
    op_marks.reserve(stream.size());
    for (const Op& op : stream) {
      if (options_.fail_at_op >= 0 && ops_run_ == options_.fail_at_op) std::raise(options_.fail_signal);
      ++ops_run_;
      // In-layer collectives run inside the layers of their compute op (the network's forward and
      // backward call the tensor group where the math needs them), so they have no span of their own.
      // ZeRO 3's weight gathers run here, before the pass that reads the weights, and have one.
      if (schedule::is_collective(op.kind) && schedule::is_in_layer(op.stream)) {
        if (zero3_ && op.kind == OpKind::AllGather) {
          const int before = backend_.record_mark();
          gather_pass_weights(op.chunk, op.group);
          op_marks.emplace_back(before, backend_.record_mark());
        } else {
          op_marks.emplace_back(-1, -1);
        }
        continue;
      }
      const int before = backend_.record_mark();
      release_sent();
      const auto started = std::chrono::steady_clock::now();
      run_op(op);
      if (slowdown_ > 1.0 && schedule::is_compute(op.kind)) stretch_since(started);
      op_marks.emplace_back(before, backend_.record_mark());
      // ZeRO 3 keeps only this rank's shard between passes: the others' elements are poisoned, so
      // a pass that ran without its gather would spoil the step.
      if (zero3_ && schedule::is_compute(op.kind) && op.kind != OpKind::BackwardInput &&
          op.kind != OpKind::OptimizerStep) {
        for (const Op& pass : schedule::compute_parts(op)) drop_unowned(pass.chunk);
      }
    }
    for (auto& s : sends_) s.handle->wait();
    backend_.synchronize();
    sends_.clear();
    network_->end_step();
    received_.clear();
    const std::vector<std::int64_t> times = backend_.mark_times_ns();
    StepRecord record;
    const auto [loss_sum, loss_count] = network_->losses();
    record.loss_sum = loss_sum;
    record.loss_count = loss_count;
    record.peak_memory = meter_.peak;
    const std::int64_t t0 = times.at(static_cast<std::size_t>(start_mark));
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (op_marks[i].first < 0) continue;
      RankSpan s;
      s.op = static_cast<std::int64_t>(i);
      s.start = times.at(static_cast<std::size_t>(op_marks[i].first)) - t0;
      s.end = times.at(static_cast<std::size_t>(op_marks[i].second)) - t0;
      s.kind = static_cast<std::int32_t>(schedule::span_kind(op.kind));
      s.role = static_cast<std::int32_t>(role_of(op.kind));
      if (op.kind != OpKind::OptimizerStep && !schedule::is_collective(op.kind)) {
        s.microbatch = static_cast<std::int32_t>(op.microbatch);
        s.chunk = op.chunk;
      }
      s.stage = schedule::virtual_stage(program_.shape, pipeline_rank_, op.chunk);
      if (schedule::is_collective(op.kind)) s.bytes = op.bytes.count();
      if (schedule::is_send(op.kind) || schedule::is_recv(op.kind)) {
        s.bytes = network_->activation_rows() * network_->hidden() * static_cast<std::int64_t>(sizeof(float));
      }
      record.spans.push_back(s);
    }
    return record;
  }

  /// Waits until the compute op that started at `started` has taken `slowdown_` times as long as it did
  /// (the CPU backend computes synchronously, so its end is now). Sleeps to within a tenth of a
  /// millisecond of the end, then spins. A wait that ends late (the thread woke late on a busy machine)
  /// is taken off the next op's, so that a step's ops together take `slowdown_` times their time.
  void stretch_since(std::chrono::steady_clock::time_point started) {
    using Clock = std::chrono::steady_clock;
    const auto now = Clock::now();
    const auto wanted = std::chrono::duration_cast<Clock::duration>((now - started) * (slowdown_ - 1.0));
    if (wanted <= overwaited_) {
      overwaited_ -= wanted;
      return;
    }
    const auto end = now + (wanted - overwaited_);
    constexpr auto kSpin = std::chrono::microseconds(100);
    if (end - now > kSpin) std::this_thread::sleep_until(end - kSpin);
    auto t = Clock::now();
    while (t < end) t = Clock::now();
    overwaited_ = t - end;
  }

  [[nodiscard]] int peer_world(std::uint32_t pipeline_rank) const {
    return layout_.with(me_, plan::Axis::Pipeline, static_cast<int>(pipeline_rank));
  }
  [[nodiscard]] int tag(const Op& op) const {
    return static_cast<int>(schedule::message_number(program_.shape, schedule::message_of(program_.shape, pipeline_rank_, op)));
  }
  [[nodiscard]] std::size_t boundary_count() const {
    return static_cast<std::size_t>(network_->activation_rows() * network_->hidden());
  }
  Buffer& received(bool gradient, const Op& op) {
    auto& b = received_[{gradient, static_cast<int>(op.microbatch), op.chunk}];
    if (b.empty()) b = Buffer(backend_, meter_, network_->activation_rows(), network_->hidden());
    return b;
  }

  /// The activation a Forward of (microbatch, chunk) reads: none on the first stage of its route, the
  /// previous chunk's output when that stage is on this rank, else what RecvActivation received.
  MatrixView forward_input(const Op& op) {
    const int vs = schedule::virtual_stage(program_.shape, pipeline_rank_, op.chunk);
    if (!schedule::route_of(program_.shape, static_cast<int>(op.microbatch)).has_before(vs)) return {};
    if (schedule::rank_of(program_.shape, vs - 1) == pipeline_rank_) {
      return network_->output(static_cast<int>(op.microbatch), schedule::chunk_of(program_.shape, vs - 1));
    }
    return received(false, op).view();
  }
  MatrixView backward_dy(const Op& op) {
    const int vs = schedule::virtual_stage(program_.shape, pipeline_rank_, op.chunk);
    if (!schedule::route_of(program_.shape, static_cast<int>(op.microbatch)).has_after(vs)) return {};
    if (schedule::rank_of(program_.shape, vs + 1) == pipeline_rank_) {
      return network_->input_grad(static_cast<int>(op.microbatch), schedule::chunk_of(program_.shape, vs + 1));
    }
    return received(true, op).view();
  }

  /// A send in flight and what it reads: the chunk's output (an activation) or its input gradient.
  struct PendingSend {
    bool gradient = false;
    int microbatch = 0;
    int chunk = 0;
    std::unique_ptr<SendHandle> handle;
  };
  void send(bool gradient, const Op& op, MatrixView data) {
    sends_.push_back({gradient, static_cast<int>(op.microbatch), op.chunk,
                      backend_.send(data.data, boundary_count(), peer_world(op.peer), tag(op))});
  }
  void release(const PendingSend& s) {
    if (s.gradient) {
      network_->release_input_grad(s.microbatch, s.chunk);
    } else {
      network_->release_output(s.microbatch, s.chunk);
    }
  }
  /// Frees what the sends that are complete read: a pipeline message's buffer lives until its send
  /// is through (Megatron frees a stage's output once sent; the receiver keeps its copy).
  void release_sent() {
    std::erase_if(sends_, [&](PendingSend& s) {
      if (!s.handle->done()) return false;
      release(s);
      return true;
    });
  }
  /// The backward of (microbatch, chunk) starts: the gradient of its output has come, so its
  /// output's send (if any) is through; the output goes.
  void output_sent(const Op& op) {
    std::erase_if(sends_, [&](PendingSend& s) {
      if (s.gradient || s.microbatch != static_cast<int>(op.microbatch) || s.chunk != op.chunk) return false;
      s.handle->wait();
      release(s);
      return true;
    });
  }
  /// After a backward pass of (microbatch, chunk): what it read no more goes. The input half is the
  /// last to read the received activation (the chunk's input); the weight half the received gradient
  /// (the last matmul's output gradient) and the next chunk's input gradient when that chunk is here.
  void input_read(const Op& op) { received_.erase({false, static_cast<int>(op.microbatch), op.chunk}); }
  void output_grad_read(const Op& op) {
    received_.erase({true, static_cast<int>(op.microbatch), op.chunk});
    const int vs = schedule::virtual_stage(program_.shape, pipeline_rank_, op.chunk);
    if (schedule::route_of(program_.shape, static_cast<int>(op.microbatch)).has_after(vs) &&
        schedule::rank_of(program_.shape, vs + 1) == pipeline_rank_) {
      network_->release_input_grad(static_cast<int>(op.microbatch), schedule::chunk_of(program_.shape, vs + 1));
    }
  }

  void run_op(const Op& op) {
    const int mb = static_cast<int>(op.microbatch);
    switch (op.kind) {
      case OpKind::Forward: network_->forward(mb, op.chunk, forward_input(op)); break;
      case OpKind::Backward:
        output_sent(op);
        network_->backward(mb, op.chunk, backward_dy(op));
        input_read(op);
        output_grad_read(op);
        break;
      case OpKind::BackwardInput:
        output_sent(op);
        network_->backward_input(mb, op.chunk, backward_dy(op));
        input_read(op);
        break;
      case OpKind::BackwardWeight:
        network_->backward_weight(mb, op.chunk);
        output_grad_read(op);
        break;
      case OpKind::ForwardBackward:  // one after the other: the overlap is a matter of time, not of result
        for (const Op& pass : schedule::compute_parts(op)) run_op(pass);
        break;
      case OpKind::SendActivation: send(false, op, network_->output(mb, op.chunk)); break;
      case OpKind::SendGrad: send(true, op, network_->input_grad(mb, op.chunk)); break;
      case OpKind::RecvActivation:
        backend_.recv(received(false, op).data(), boundary_count(), peer_world(op.peer), tag(op));
        break;
      case OpKind::RecvGrad:
        backend_.recv(received(true, op).data(), boundary_count(), peer_world(op.peer), tag(op));
        break;
      case OpKind::AllReduce:
      case OpKind::ReduceScatter: reduce_bucket(op); break;
      case OpKind::AllGather: gather_bucket(op); break;
      // The IR emits all-to-alls only inside layers (the MoE dispatch and combine), which the MoE
      // layers run with the real token counts inside their compute op; run_step() skips them.
      case OpKind::AllToAll: throw std::logic_error("an all-to-all outside a layer: the program has none");
      case OpKind::OptimizerStep:
        if (zero3_) {
          // The sum of every microbatch's reduce-scatter is the reduce-scatter of the accumulated
          // gradients: one per chunk before the step.
          for (int c = 0; c < network_->chunks(); ++c) reduce_scatter_chunk(c);
        }
        network_->optimizer_step(optimizer_ranges());
        break;
    }
  }

  [[nodiscard]] Group& group_of(const Op& op) const { return *groups_.at(op.group); }

  /// The part of a chunk's flat buffers a gradient collective covers, and the bytes the program
  /// sized its buckets from: the routed experts' elements for one over the expert-data group, the
  /// rest otherwise (the whole chunk when the experts share the dense weights' replicas).
  struct Section {
    ElementRange range;
    std::int64_t bytes = 0;
    std::size_t index = 0;  // into the cursors: two per chunk
  };
  [[nodiscard]] Section section_of(const Op& op) const {
    const auto r = static_cast<std::size_t>(pipeline_rank_);
    const auto c = static_cast<std::size_t>(op.chunk);
    const ElementRange chunk = network_->chunk_range(op.chunk);
    const ElementRange experts = network_->chunk_expert_range(op.chunk);
    const std::int64_t dense_bytes = gradient_bytes_[r][c].count();
    if (op.group == schedule::expert_replica_group(plan_)) {
      return {experts, expert_gradient_bytes_[r][c].count(), 2 * c + 1};
    }
    if (schedule::splits_expert_gradients(plan_)) return {{chunk.begin, experts.begin}, dense_bytes, 2 * c};
    return {chunk, dense_bytes, 2 * c};
  }

  /// Elements [first, last) of `section` that the bucket covers, relative to the section start,
  /// advancing `cursor` (bytes of the section's earlier buckets).
  static std::pair<std::size_t, std::size_t> bucket_elements(const Section& section, const Op& op, std::int64_t& cursor,
                                                             std::size_t multiple) {
    const std::size_t n = section.range.end - section.range.begin;
    const std::int64_t total = section.bytes;
    const std::int64_t from = cursor;
    cursor += op.bytes.count();
    if (total <= 0) return {0, 0};
    auto at = [&](std::int64_t bytes) -> std::size_t {
      if (bytes >= total) return n - n % multiple;
      const auto e = static_cast<std::size_t>(static_cast<double>(n) * static_cast<double>(bytes) / static_cast<double>(total));
      return e - e % multiple;
    };
    return {at(from), at(cursor)};
  }

  void reduce_bucket(const Op& op) {
    Group& group = group_of(op);
    const auto size = static_cast<std::size_t>(group.size());
    const bool scatter = op.kind == OpKind::ReduceScatter;
    // HSDP: the shard a bucket's reduce-scatter left this rank (and the tail) is summed over the
    // groups that hold the other copies, right after it.
    if (!scatter && !replica_axes_.empty() && op.group == replica_axes_) {
      for (const ElementRange& r : last_scattered_) all_reduce_range(group, r);
      return;
    }
    const Section section = section_of(op);
    std::int64_t& cursor = reduce_cursor_[section.index];
    auto [first, last] = bucket_elements(section, op, cursor, scatter ? size : 1);
    float* grads = network_->gradients() + section.range.begin;
    if (!scatter) {
      if (last > first) backend_.all_reduce_sum(group, grads + first, last - first);
      return;
    }
    scattered_.insert(section.index);
    last_scattered_.clear();
    if (last > first) {
      backend_.reduce_scatter_sum(group, grads + first, last - first);
      const std::size_t slice = (last - first) / size;
      const std::size_t mine = section.range.begin + first + static_cast<std::size_t>(group.rank()) * slice;
      last_scattered_.push_back({mine, mine + slice});
    }
    // The section's last bucket also takes the tail that does not divide by the group size.
    const std::size_t n = section.range.end - section.range.begin;
    if (cursor >= section.bytes && n % size != 0) {
      const std::size_t tail = n - n % size;
      backend_.all_reduce_sum(group, grads + tail, n - tail);
      last_scattered_.push_back({section.range.begin + tail, section.range.end});
    }
    owned_.insert(owned_.end(), last_scattered_.begin(), last_scattered_.end());
  }
  void all_reduce_range(Group& group, ElementRange r) {
    if (r.end > r.begin) backend_.all_reduce_sum(group, network_->gradients() + r.begin, r.end - r.begin);
  }

  /// ZeRO 3: a section of a chunk's flat buffers sharded over one group (the dense weights over
  /// their replicas; the routed experts, when they have replicas of their own, over expert-data):
  /// its elements in whole multiples of the group's size, split evenly (the remainder is kept whole
  /// on every rank), and this rank's slice of them.
  struct Shard {
    plan::AxisSet group;
    ElementRange range;    // the section
    ElementRange sharded;  // its elements in whole multiples of the group's size
    ElementRange mine;
    std::size_t index = 0;  // into scattered_: two per chunk, the dense section's then the experts'
  };
  [[nodiscard]] Shard shard_over(plan::AxisSet axes, ElementRange range, std::size_t index) const {
    const Group& group = *groups_.at(axes);
    const auto size = static_cast<std::size_t>(group.size());
    const std::size_t whole = (range.end - range.begin) / size * size;
    const std::size_t slice = whole / size;
    const std::size_t mine = range.begin + static_cast<std::size_t>(group.rank()) * slice;
    return {axes, range, {range.begin, range.begin + whole}, {mine, mine + slice}, index};
  }
  /// The chunk's sharded sections: the whole chunk over the dense group when the experts share the
  /// dense weights' replicas; else the dense part over it and the experts over expert-data (when
  /// they have more than one replica; a single replica keeps them whole and unreduced).
  [[nodiscard]] std::vector<Shard> shards_of(int chunk) const {
    const ElementRange range = network_->chunk_range(chunk);
    const auto dense = 2 * static_cast<std::size_t>(chunk);
    if (!schedule::splits_expert_gradients(plan_)) return {shard_over(shard_axes_, range, dense)};
    const ElementRange experts = network_->chunk_expert_range(chunk);
    std::vector<Shard> out{shard_over(shard_axes_, {range.begin, experts.begin}, dense)};
    if (plan_.expert_data() > 1 && experts.end > experts.begin) {
      out.push_back(shard_over(plan::Axis::ExpertData, experts, dense + 1));
    }
    return out;
  }
  /// Gathers the chunk's sections sharded over `axes` (every section when unset).
  void gather_chunk(int chunk, std::optional<plan::AxisSet> axes = std::nullopt) {
    for (const Shard& s : shards_of(chunk)) {
      if ((axes && s.group != *axes) || s.sharded.end <= s.sharded.begin) continue;
      backend_.all_gather(*groups_.at(s.group), network_->parameters() + s.sharded.begin,
                          s.sharded.end - s.sharded.begin);
    }
  }
  /// ZeRO 3: a pass's gathers (the program has one per group of equal layers) find the chunk's
  /// weights over `axes` whole after the first of them, which gathers them all; they stay whole
  /// until the pass ends (drop_unowned).
  void gather_pass_weights(int chunk, plan::AxisSet axes) {
    const std::pair<int, std::uint16_t> key{chunk, axes.bits()};
    if (std::find(whole_.begin(), whole_.end(), key) != whole_.end()) return;
    gather_chunk(chunk, axes);
    whole_.push_back(key);
  }
  void drop_unowned(int chunk) {
    std::erase_if(whole_, [&](const auto& key) { return key.first == chunk; });
    const auto poison = [&](std::size_t from, std::size_t to) {
      if (to <= from) return;
      const auto n = static_cast<std::int64_t>(to - from);
      backend_.fill({network_->parameters() + from, 1, n, n}, std::numeric_limits<float>::quiet_NaN());
    };
    for (const Shard& s : shards_of(chunk)) {
      poison(s.sharded.begin, s.mine.begin);
      poison(s.mine.end, s.sharded.end);
    }
  }
  void reduce_scatter_chunk(int chunk) {
    float* grads = network_->gradients();
    for (const Shard& s : shards_of(chunk)) {
      Group& group = *groups_.at(s.group);
      std::vector<ElementRange> mine;
      if (s.sharded.end > s.sharded.begin) {
        backend_.reduce_scatter_sum(group, grads + s.sharded.begin, s.sharded.end - s.sharded.begin);
        mine.push_back(s.mine);
      }
      if (s.range.end > s.sharded.end) {
        backend_.all_reduce_sum(group, grads + s.sharded.end, s.range.end - s.sharded.end);
        mine.push_back({s.sharded.end, s.range.end});
      }
      // HSDP: the dense shard is summed over the groups that hold the other copies.
      if (s.group == shard_axes_ && !replica_axes_.empty()) {
        for (const ElementRange& r : mine) all_reduce_range(*groups_.at(replica_axes_), r);
      }
      owned_.insert(owned_.end(), mine.begin(), mine.end());
      scattered_.insert(s.index);
    }
  }

  void gather_bucket(const Op& op) {
    Group& group = group_of(op);
    const auto size = static_cast<std::size_t>(group.size());
    const Section section = section_of(op);
    auto [first, last] = bucket_elements(section, op, gather_cursor_[section.index], size);
    if (last > first) backend_.all_gather(group, network_->parameters() + section.range.begin + first, last - first);
  }

  /// What this rank's optimizer updates: the slices its reduce-scatters left it (ZeRO), and whole
  /// every section no reduce-scatter split (all of them without ZeRO; the experts' when they have
  /// no replicas to shard over).
  [[nodiscard]] std::vector<ElementRange> optimizer_ranges() const {
    std::vector<ElementRange> ranges = owned_;
    for (int c = 0; c < network_->chunks(); ++c) {
      const ElementRange chunk = network_->chunk_range(c);
      const ElementRange experts = network_->chunk_expert_range(c);
      const auto dense = 2 * static_cast<std::size_t>(c);
      if (!schedule::splits_expert_gradients(plan_)) {
        if (!scattered_.contains(dense)) ranges.push_back(chunk);
        continue;
      }
      if (!scattered_.contains(dense)) ranges.push_back({chunk.begin, experts.begin});
      if (!scattered_.contains(dense + 1)) ranges.push_back(experts);
    }
    return ranges;
  }

  /// Every rank's record of the step, on rank 0 (empty elsewhere).
  /// Every rank's record on rank 0, as host messages (the device channels join pipeline neighbours only).
  std::vector<StepRecord> gather(const StepRecord& mine) {
    const int ranks = layout_.ranks();
    const std::vector<float> packed = encode_step_record(mine);
    if (backend_.world_rank() != 0) {
      backend_.host_send(encode_span_count(mine.spans.size()), 0, gather_tag_);
      backend_.host_send(packed, 0, gather_tag_);
      return {};
    }
    std::vector<StepRecord> all(static_cast<std::size_t>(ranks));
    all[0] = mine;
    for (int r = 1; r < ranks; ++r) {
      std::array<float, 2> count{};
      backend_.host_recv(count, r, gather_tag_);
      const std::size_t spans = decode_span_count(count, r);
      std::vector<float> host(step_record_words(spans));
      backend_.host_recv(host, r, gather_tag_);
      all[static_cast<std::size_t>(r)] = decode_step_record(host, spans, r);
    }
    return all;
  }

  [[nodiscard]] double step_seconds(const std::vector<StepRecord>& all) const {
    std::int64_t end = 0;
    for (const StepRecord& r : all) {
      for (const RankSpan& s : r.spans) end = std::max(end, s.end);
    }
    return static_cast<double>(end) * 1e-9;
  }

  /// The ranks whose parameters rank 0 assembles: data rank 0 of every (pipeline, tensor) position
  /// for the dense weights, expert-data rank 0 of every (pipeline, expert) position for the routed
  /// experts (each expert lives on the ranks of its expert coordinate only).
  [[nodiscard]] std::vector<int> parameter_sources() const {
    std::vector<int> out;
    for (int r = 0; r < layout_.ranks(); ++r) {
      if (layout_.coordinate(r, plan::Axis::Data) == 0 || layout_.coordinate(r, plan::Axis::ExpertData) == 0) {
        out.push_back(r);
      }
    }
    return out;
  }

  /// Rank 0: the parameters of parameter_sources(), assembled into full tensors in layer order.
  std::string gather_parameters() {
    const std::vector<int> sources = parameter_sources();
    if (backend_.world_rank() != 0) {
      if (std::binary_search(sources.begin(), sources.end(), me_)) {
        std::vector<float> host(network_->parameter_count());
        backend_.download(network_->parameters(), host);
        backend_.host_send(host, 0, parameter_tag_);
      }
      return {};
    }
    struct Full {
      std::int64_t rows = 0, cols = 0;
      std::vector<float> values;
    };
    std::map<std::pair<int, std::string>, Full> tensors;  // (model layer, parameter name)
    std::map<int, std::vector<std::string>> names;        // per layer, in the order first met
    for (const int from : sources) {
      const int expert = layout_.coordinate(from, plan::Axis::Expert);
      const int t = layout_.coordinate(from, plan::Axis::Tensor);
      const int et = layout_.coordinate(from, plan::Axis::ExpertTensor);
      const bool dense_replica = layout_.coordinate(from, plan::Axis::Data) == 0;
      const bool expert_replica = layout_.coordinate(from, plan::Axis::ExpertData) == 0;
      const std::vector<Param> params =
          rank_param_layout(model_, plan_, layout_.coordinate(from, plan::Axis::Pipeline), expert);
      std::size_t count = 0;
      for (const Param& q : params) count += q.count();
      std::vector<float> host(count);
      if (from == 0) {
        backend_.download(network_->parameters(), host);
      } else {
        backend_.host_recv(host, from, parameter_tag_);
      }
      for (const Param& q : params) {
        if (q.expert ? !expert_replica : !dense_replica) continue;
        const int layer = std::stoi(q.name.substr(0, q.name.find('\t')));
        const std::string name = q.name.substr(q.name.find('\t') + 1);
        Full& f = tensors[{layer, name}];
        if (f.values.empty()) {
          f.rows = q.rows;
          f.cols = q.cols;
          f.values.assign(static_cast<std::size_t>(q.rows * q.cols), 0.0f);
          names[layer].push_back(name);
        }
        const int split_rank = q.expert ? et : t;
        const std::int64_t row0 = q.split == Split::Rows ? split_rank * q.local_rows : 0;
        const std::int64_t col0 = q.split == Split::Columns ? split_rank * q.local_cols : 0;
        for (std::int64_t r = 0; r < q.local_rows; ++r) {
          for (std::int64_t c = 0; c < q.local_cols; ++c) {
            f.values[static_cast<std::size_t>((row0 + r) * q.cols + col0 + c)] =
                host[q.offset + static_cast<std::size_t>(r * q.local_cols + c)];
          }
        }
      }
    }
    std::string out;
    for (const auto& [layer, layer_names] : names) {
      const std::string& layer_name = model_.layers.at(static_cast<std::size_t>(layer)).name;
      for (const std::string& name : layer_names) {
        const Full& f = tensors.at({layer, name});
        out += fmt::format("{}\t{}.{}\t{}\t{}\t", layer, layer_name, name, f.rows, f.cols);
        for (std::size_t i = 0; i < f.values.size(); ++i) {
          if (i > 0) out += ' ';
          out += fmt::format("{:.9g}", f.values[i]);
        }
        out += "\n";
      }
    }
    return out;
  }

  void build_report(const std::vector<StepRecord>& all, ExecuteResult& result) const {
    trace::Timeline& tl = result.timeline;
    std::vector<schedule::DeviceActivity> devices;
    for (int g = 0; g < layout_.ranks(); ++g) {
      const StepRecord& rec = all[static_cast<std::size_t>(g)];
      const topology::Device& device = cluster_.device(cluster_.gpus().at(static_cast<std::size_t>(g)));
      const std::string process = fmt::format("node{}", device.node);
      const std::string local = device.name.substr(device.name.find('/') + 1);
      const auto first_lane = static_cast<std::uint32_t>(tl.lanes.size());
      // One lane per Role: in-layer collectives run inside the compute spans and have none of their own.
      const auto threads = schedule::device_lane_threads(local);
      for (int role = 0; role <= static_cast<int>(Role::Collective); ++role) {
        tl.lanes.push_back({process, threads[static_cast<std::size_t>(role)]});
      }
      schedule::DeviceActivity d;
      d.id = device.name;
      d.stage = layout_.coordinate(g, plan::Axis::Pipeline);
      for (const RankSpan& s : rec.spans) {
        trace::Span span;
        span.lane = first_lane + static_cast<std::uint32_t>(s.role);
        span.kind = static_cast<trace::SpanKind>(s.kind);
        span.start_ns = s.start;
        span.end_ns = s.end;
        span.microbatch = s.microbatch;
        span.chunk = s.chunk;
        span.stage = s.stage;
        span.bytes = s.bytes;
        span.op = static_cast<std::int32_t>(s.op);
        tl.spans.push_back(span);
        if (static_cast<Role>(s.role) != Role::Compute) continue;
        d.busy_ns += s.end - s.start;
        if (span.kind != trace::SpanKind::Optimizer) {
          d.pipeline_busy_ns += s.end - s.start;
          if (d.first_start_ns < 0) d.first_start_ns = s.start;
          d.last_end_ns = std::max(d.last_end_ns, s.end);
        }
      }
      d.peak_memory_bytes = rec.peak_memory;
      d.memory_capacity_bytes = cluster_.gpu_kind_of(cluster_.gpus().at(static_cast<std::size_t>(g))).memory.count();
      d.represents_stage = layout_.group(g, plan::Axis::Tensor | plan::Axis::Data).front() == g;
      devices.push_back(std::move(d));
    }
    const auto peak = cluster_.mean_training_peak(model_.dtype_bytes);
    result.report = schedule::build_report(step_seconds(all), std::move(devices), schedule::step_flops(model_, plan_), peak, plan_);
  }

  Backend& backend_;
  const topology::Cluster& cluster_;
  const model::Model& model_;
  plan::Plan plan_;
  ExecuteOptions options_;
  plan::Layout layout_;
  int me_ = 0;             // world rank
  int pipeline_rank_ = 0;  // the stream it runs
  int gather_tag_ = 0;
  std::vector<std::pair<int, int>> loss_ranks_;  ///< by data-parallel rank: the pipeline ranks its routes end on
  double slowdown_ = 1.0;  ///< this rank's GPU's (Device::slowdown), emulated by stretch_since()
  std::chrono::steady_clock::duration overwaited_{};  ///< how late stretch_since()'s waits ended, to take off
  int parameter_tag_ = 0;
  MemoryMeter meter_;
  std::vector<std::vector<Bytes>> gradient_bytes_;         // [rank][chunk]: the dense sections' bytes
  std::vector<std::vector<Bytes>> expert_gradient_bytes_;  // [rank][chunk]: the routed experts'
  schedule::Program program_;
  std::map<plan::AxisSet, std::unique_ptr<Group>> groups_;  // this rank's group over each axis set
  std::unique_ptr<Network> network_;
  std::vector<PendingSend> sends_;
  std::map<std::tuple<bool, int, int>, Buffer> received_;
  std::vector<std::int64_t> reduce_cursor_;
  std::vector<std::int64_t> gather_cursor_;
  std::vector<ElementRange> owned_;
  /// ZeRO 3: the (chunk, group) weights gathered whole for the pass running now.
  std::vector<std::pair<int, std::uint16_t>> whole_;
  bool zero3_ = false;          ///< ZeRO 3: weights gathered before each pass, only a shard kept
  plan::AxisSet shard_axes_;    ///< the group ZeRO shards the dense states over
  plan::AxisSet replica_axes_;  ///< HSDP: the groups holding the other copies of each shard (else empty)
  std::vector<ElementRange> last_scattered_;  ///< what the last bucket reduce-scatter left this rank
  std::set<std::size_t> scattered_;  // sections (Section::index) a reduce-scatter split this step
  std::int64_t ops_run_ = 0;
};

}  // namespace

ExecuteResult execute(Backend& backend, const topology::Cluster& cluster, const model::Model& model,
                      const plan::Plan& plan, const ExecuteOptions& options) {
  Interpreter interpreter(backend, cluster, model, plan, options);
  return interpreter.run();
}

}  // namespace mpsim::executor
