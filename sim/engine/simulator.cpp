#include "sim/engine/simulator.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <tuple>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "sim/engine/activity_recorder.h"
#include "sim/engine/collective_tuning.h"
#include "sim/engine/compute_contention.h"
#include "sim/engine/pair_slots.h"
#include "sim/engine/event_queue.h"
#include "sim/engine/network_model.h"
#include "sim/engine/path_set.h"
#include "sim/engine/replica_classes.h"
#include "sim/engine/timeline_recorder.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/replica_share.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/message.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/program.h"
#include "sim/schedule/report_builder.h"
#include "sim/schedule/report_parts.h"
#include "sim/schedule/stash.h"
#include "sim/schedule/validate.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::engine {
namespace {

using schedule::Op;
using schedule::OpKind;
using topology::DeviceId;

using schedule::CommStream;
using schedule::MessageId;

/// A group's devices, one list per group.
using DeviceGroups = std::vector<std::vector<DeviceId>>;

/// What the data-parallel replicas of one class run: the program of their microbatch count, priced on
/// their GPUs' kinds. Replicas with the same count on the same kinds share a class.
struct ReplicaWork {
  const schedule::Program* program = nullptr;
  const CostModel* costs = nullptr;
};

class Simulation {
 public:
  /// `work`: by class of replicas, the first the class of replica 0; `class_of_replica`: by data-parallel
  /// rank (empty: one class).
  Simulation(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
             std::vector<ReplicaWork> work, std::vector<int> class_of_replica, const EngineOptions& options)
      : cluster_(cluster),
        model_(model),
        plan_(plan),
        program_(*work.front().program),
        costs_(*work.front().costs),
        work_(std::move(work)),
        class_of_replica_(std::move(class_of_replica)),
        options_(options),
        layout_(plan),
        network_(make_network_model(cluster)),
        activity_(options.record_memory_timeline) {
    if (options.routes != nullptr && &options.routes->cluster() == &cluster) shared_routes_ = options.routes;
    // A layer's data-parallel collective runs inside one actor's pass; with replicas unfolded no
    // actor stands for the whole data-parallel group.
    if (!options.fold_replicas && plan.zero >= 3 && plan.degrees[plan::Axis::Data] > 1) {
      throw std::invalid_argument("ZeRO 3's per-layer gathers are simulated with folded replicas: drop --unfold");
    }
    if (class_of_replica_.empty()) class_of_replica_.assign(static_cast<std::size_t>(plan.degrees[plan::Axis::Data]), 0);
    if (work_.size() > 1 && (plan.zero >= 3 || plan.degrees[plan::Axis::Expert] > 1)) {
      throw std::invalid_argument(
          "replicas that run apart (uneven shares, different GPU kinds) do not combine with zero 3 or expert parallelism");
    }
    token_routing_ = token_routing(model, plan);
  }

  Prediction run();

 private:
  struct Actor {
    int rank = 0;
    int replica = 0;   // the replica slot: a data-parallel replica, or with folding a class of them
    int work = 0;      // its class (work_)
    std::vector<int> members;  // global ranks the actor stands for
    std::size_t cursor = 0;
    bool computing = false;       // a compute op or a blocking in-layer collective holds the stream
    bool compute_ended = false;   // the compute op's own time is over; it waits for overlapped collectives
    std::int64_t busy_since = 0;
    std::int64_t compute_until = 0;  // when the compute op it started last ends
    std::int64_t communication_since = -1;  // the held stream waits on in-layer collectives since; -1: not
    std::optional<std::int64_t> waiting_for;  // the message (message_number) a Recv blocks on
    std::int64_t waiting_since = 0;
    std::unordered_set<std::int64_t> arrived;
    int collectives_issued = 0;   // gradient stream
    int collectives_done = 0;
    int layer_outstanding = 0;    // in-layer collectives issued and not finished
    std::deque<std::size_t> layer_queue;  // in-layer collectives waiting for the layer stream
    bool layer_busy = false;
    std::int64_t memory = 0;
    std::int64_t working_memory = 0;  ///< held beyond `memory` until the running pass ends (schedule::working_bytes)
    std::int64_t activation_peak = 0;  ///< the largest memory + working_memory at a pass other than the optimizer step
    bool pipeline_op = false;          // the op holding the stream is F, B, I or W
    // The slowest member's slowdown (a what-if): the lockstep group, and folded replicas waiting at the
    // gradient sync, go at its pace. The report names that member for the actor.
    double slowdown = 1.0;
    int shown_member = 0;  // global rank of the member the report names
  };
  /// The links a set of concurrent transfers loads, and the largest latency of their routes.
  struct TransferSet {
    std::vector<Usage> usage;
    TimeNs latency;
    std::array<double, 2> collective_cap{};  ///< PathSet::collective_cap
    std::uint32_t id = 0;  ///< its set in the flow network (NetworkModel::use_usage_sets)
  };
  /// A collective's phases and the transfer set of each.
  struct Phases {
    std::vector<CollectiveRound> rounds;
    std::vector<const TransferSet*> transfers;
    std::vector<BytesPerSec> caps;  // per phase: the rate a transfer of it reaches at most (collective_tuning.h)
    double idle_ns = 0;  // idle_time_ns(*this), asked per op by the step floor and the F&B pairs' slots
  };
  /// One collective instance: a gradient-stream op shared by the actors of its pipeline rank, or an
  /// in-layer op of one actor.
  struct Collective {
    int rank = 0;
    int actor = -1;            // in-layer: the actor; gradient stream: -1 (every actor of the rank)
    std::size_t op_index = 0;  // in-layer: in the actor's stream; gradient stream: its ordinal on the rank
    const Op* op = nullptr;    // the op (a gradient-stream op is alike in every class's stream)
    int arrived = 0;
    const Phases* phases = nullptr;
    std::size_t round = 0;
    std::int64_t start_ns = 0;
  };
  struct PointToPoint {
    int to_actor;
    std::int64_t message;  // message_number
    std::int64_t issued_ns;
    int from_actor;
    std::size_t op_index;  // of the Send in the sender's stream
  };
  struct CollectivePayload {
    std::size_t collective;
  };
  using Payload = std::variant<PointToPoint, CollectivePayload>;

  struct ComputeDone {
    int actor;
  };
  struct FlowActivate {
    std::size_t pending;  // index into pending_flows_
  };
  struct FlowDone {
    NetworkModel::FlowId flow;
    std::uint32_t version;
  };
  using Event = std::variant<ComputeDone, FlowActivate, FlowDone>;

  struct PendingFlow {
    const TransferSet* transfers;  // owned by transfer_sets_
    Bytes bytes;
    BytesPerSec cap;
    Payload payload;
  };
  struct LiveFlow {
    Payload payload;
    std::int64_t activated;
    const std::vector<Usage>* usage;
    Bytes bytes;
  };

  int actor_index(int rank, int replica) const { return rank * replicas_ + replica; }
  const schedule::Program& program_of(const Actor& a) const { return *work_[static_cast<std::size_t>(a.work)].program; }
  const std::vector<Op>& stream_of(const Actor& a) const {
    return program_of(a).streams[static_cast<std::size_t>(a.rank)];
  }
  const CostModel& costs_of(const Actor& a) const { return *work_[static_cast<std::size_t>(a.work)].costs; }
  std::int64_t message_number(const Actor& a, const Op& op) const {
    const schedule::PipelineShape& shape = program_of(a).shape;
    return schedule::message_number(shape, schedule::message_of(shape, a.rank, op));
  }
  DeviceId gpu(int global_rank) const { return cluster_.gpus().at(static_cast<std::size_t>(global_rank)); }
  const topology::Route& route(DeviceId a, DeviceId b);
  const TransferSet& transfer_set(const std::vector<std::pair<DeviceId, DeviceId>>& pairs);
  /// The transfers of `actor`'s sends to pipeline rank `to_rank`.
  const TransferSet& p2p_set(int actor, int to_rank);
  /// The phases of collective `op` of rank `rank`'s stream, run by `actor` (in-layer) or by
  /// every actor of the rank (gradient stream, `actor` < 0).
  const Phases& phases_of(int rank, int actor, const Op& op);
  /// Builds every transfer set the program can use, so that the flow network knows them all before
  /// the first flow (NetworkModel::use_usage_sets). The sets are those the run would build as it goes.
  void declare_transfer_sets();
  /// Starts a transfer set: after `rounds` x its largest route latency, one flow carries `rounds` x `bytes`.
  void start_transfer(const TransferSet& transfers, Bytes bytes, Payload payload, int rounds = 1,
                      BytesPerSec cap = NetworkModel::kUncapped);
  /// The phases of a `kind` collective of `bytes` (`count` back to back) with `algorithm` over `groups`.
  /// With `senders`, only the transfers from those GPUs (see phases_of); with `routing`, an expert
  /// all-to-all's token dispatch (token_dispatch_rounds).
  Phases build_phases(CollectiveKind kind, CollectiveAlgorithm algorithm, const DeviceGroups& groups, Bytes bytes,
                      int count, const std::vector<topology::DeviceId>* senders = nullptr,
                      const TokenRouting* routing = nullptr);
  /// How long `phases` take on idle links: per phase, rounds x (latency + bytes / rate), the rate being
  /// the flow network's for a flow alone on its links (its cap, or its tightest link over its count).
  double idle_time_ns(const Phases& phases) const;
  /// What an F&B pair's slots leave of its expert all-to-alls (Megatron-Core's combined 1F1B and the
  /// schedules with pairs of their own): per pair of MoE blocks, the backward's combine beside the forward's attention half,
  /// the forward's dispatch beside the backward's MLP half, the backward's dispatch beside the
  /// forward's MLP half and the forward's combine beside the backward's attention half, each slot as
  /// long as the longer of its two, the compute on the SMs the all-to-all leaves while it runs
  /// (contended_slot_extra); blocks without a partner expose both their all-to-alls. The all-to-alls
  /// are timed on idle links; their flows still run beside the pair, which ends when they have too.
  TimeNs pair_exposure(const Actor& actor, int index, const Op& op, std::size_t op_index);
  void advance(int actor);
  void start_compute(Actor& actor, const Op& op, std::size_t op_index);
  /// The stream of `actor` is free again: accounts its busy time and issues the next ops.
  void release(Actor& actor);
  void on_flow_done(NetworkModel::FlowId flow);
  void deliver(const PointToPoint& message);
  void report_link_use(const LiveFlow& flow);
  void try_start_collective(int rank);
  void try_start_layer_collective(Actor& actor);
  /// Starts collective `id`'s first phase; false when it moves nothing.
  bool start_collective(std::size_t id);
  void finish_collective(std::size_t id);
  void finish_layer_collective(std::size_t id);
  void reschedule(const std::vector<NetworkModel::FlowId>& flows);
  /// A compute op's own duration on `actor`: without contention, slowdown or an F&B pair's exposure.
  TimeNs compute_duration(const Actor& actor, const Op& op) const;
  /// An OpEvent for op `op_index` of `actor`'s rank from `start` to now.
  OpEvent event_of(int actor, std::size_t op_index, std::int64_t start, int stage, std::int64_t bytes) const;
  template <typename Call>
  void notify(Call call) {
    for (Observer* o : observers_) call(*o);
  }
  trace::Report build_report() const;
  /// What each actor's compute stream still holds from each op of its rank's stream on:
  /// remaining_compute_[actor][i] sums, from op i to the end, the uncontended durations of its compute
  /// ops (F&B pairs without their exposure) and the idle-link times of its blocking in-layer
  /// collectives (idle_time_ns: their flows never go faster than alone on the network).
  void count_remaining_compute();
  /// A lower bound on the step from where the run stands: every actor's stream still runs what
  /// remaining_compute_ counts, one op at a time, none before now nor before the pass it runs ends,
  /// and the step ends no earlier than its last op (ActivityRecorder::step_ns).
  std::int64_t step_floor() const;
  /// A lower bound on the step from the traffic alone: the bytes every declared transfer of the
  /// program puts on a link direction, over its capacity, for the busiest direction (the network
  /// never carries more than a direction's capacity). After declare_transfer_sets().
  std::int64_t traffic_floor();

  const topology::Cluster& cluster_;
  const model::Model& model_;
  const plan::Plan& plan_;
  std::optional<TokenRouting> token_routing_;  // the expert all-to-alls' routing under a flex dispatcher
  const schedule::Program& program_;  // class 0's: the shape every class shares but its microbatches
  const CostModel& costs_;            // class 0's
  std::vector<ReplicaWork> work_;
  std::vector<int> class_of_replica_;  // by data-parallel rank
  std::vector<int> slot_of_replica_;   // by data-parallel rank: its actors' replica slot
  std::vector<std::vector<std::vector<std::size_t>>> gradient_ops_;  // [class][rank][ordinal]: op index
  const EngineOptions& options_;
  plan::Layout layout_;
  std::unique_ptr<NetworkModel> network_;  // the one way to the network
  EventQueue<Event> queue_;
  std::int64_t now_ = 0;
  std::uint64_t events_ = 0;
  int replicas_ = 1;  // simulated data-parallel replicas (1 when folded)
  std::vector<Actor> actors_;
  std::vector<std::vector<int>> rank_members_;                 // by pipeline rank: every global rank of it
  std::vector<std::vector<std::size_t>> collectives_of_rank_;  // gradient-stream collective ids by rank, in stream order
  std::vector<Collective> collectives_;
  std::vector<std::size_t> free_layer_collectives_;  // ids of finished in-layer collectives, for reuse
  std::vector<bool> collective_busy_;             // by rank
  std::vector<std::size_t> next_collective_;      // by rank: index into collectives_of_rank_
  std::vector<PendingFlow> pending_flows_;
  std::vector<std::vector<std::int64_t>> remaining_compute_;  // count_remaining_compute()
  std::vector<std::size_t> free_pending_;  // slots of pending_flows_ whose flow has started
  std::unordered_map<NetworkModel::FlowId, LiveFlow> live_flows_;
  std::optional<topology::RouteFinder> routes_finder_;  // made on first use, unless routes are shared
  SharedRoutes* shared_routes_ = nullptr;
  std::deque<topology::Route> own_routes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, const topology::Route*> routes_;
  std::map<std::vector<std::pair<DeviceId, DeviceId>>, TransferSet> transfer_sets_;
  std::vector<const TransferSet*> transfer_set_by_id_;
  bool sets_declared_ = false;
  std::map<std::pair<int, int>, const TransferSet*> p2p_sets_;  // (from actor, to rank)
  // Collective phases by (members, kind, axes, bytes, count); members: an actor (in-layer, >= 0) or
  // every GPU of pipeline rank r (gradient stream, -1 - r).
  std::map<std::tuple<int, OpKind, std::uint8_t, std::int64_t, int>, Phases> phases_;
  ActivityRecorder activity_;
  std::optional<TimelineRecorder> timeline_;
  std::vector<Observer*> observers_;
};

const topology::Route& Simulation::route(DeviceId a, DeviceId b) {
  const auto key = std::make_pair(a.value, b.value);
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    const topology::Route* found = nullptr;
    if (shared_routes_ != nullptr) {
      found = shared_routes_->route(a, b);
    } else {
      if (!routes_finder_) routes_finder_.emplace(cluster_);
      if (auto r = routes_finder_->route(a, b)) found = &own_routes_.emplace_back(std::move(*r));
    }
    if (found == nullptr) {
      throw std::logic_error(fmt::format("no route {} -> {}", cluster_.device(a).name, cluster_.device(b).name));
    }
    it = routes_.emplace(key, found).first;
  }
  return *it->second;
}

OpEvent Simulation::event_of(int actor, std::size_t op_index, std::int64_t start, int stage, std::int64_t bytes) const {
  const Actor& a = actors_[static_cast<std::size_t>(actor)];
  return OpEvent{actor, a.rank, op_index, &stream_of(a)[op_index], start, now_, stage, bytes};
}

const Simulation::TransferSet& Simulation::transfer_set(const std::vector<std::pair<DeviceId, DeviceId>>& pairs) {
  auto cached = transfer_sets_.find(pairs);
  if (cached == transfer_sets_.end()) {
    PathSet own;
    const PathSet& paths =
        shared_routes_ != nullptr
            ? shared_routes_->path_set(pairs)
            : (own = make_path_set(cluster_, pairs,
                                   [this](DeviceId a, DeviceId b) -> const topology::Route& { return route(a, b); }));
    TransferSet set;
    set.usage = paths.usage;
    set.latency = paths.latency;
    set.collective_cap = paths.collective_cap;
    if (sets_declared_) throw std::logic_error("simulator: a transfer set the program did not declare");
    set.id = static_cast<std::uint32_t>(transfer_set_by_id_.size());
    cached = transfer_sets_.emplace(pairs, std::move(set)).first;
    transfer_set_by_id_.push_back(&cached->second);
  }
  return cached->second;
}

void Simulation::start_transfer(const TransferSet& transfers, Bytes bytes, Payload payload, int rounds,
                                BytesPerSec cap) {
  PendingFlow pending;
  pending.transfers = &transfers;
  pending.cap = cap;
  pending.bytes = bytes * rounds;
  pending.payload = std::move(payload);
  std::size_t slot = pending_flows_.size();
  if (free_pending_.empty()) {
    pending_flows_.push_back(std::move(pending));
  } else {
    slot = free_pending_.back();
    free_pending_.pop_back();
    pending_flows_[slot] = std::move(pending);
  }
  queue_.push(TimeNs::ns(now_) + transfers.latency * rounds, FlowActivate{slot});
}

void Simulation::reschedule(const std::vector<NetworkModel::FlowId>& flows) {
  for (const auto f : flows) queue_.push(network_->completion(f), FlowDone{f, network_->version(f)});
}

TimeNs Simulation::compute_duration(const Actor& actor, const Op& op) const {
  const RankCost& rc = costs_of(actor).ranks[static_cast<std::size_t>(actor.rank)];
  switch (op.kind) {
    case OpKind::Forward: return rc.chunks[op.chunk].forward;
    case OpKind::Backward: return rc.chunks[op.chunk].backward;
    case OpKind::BackwardInput: return rc.chunks[op.chunk].backward_input;
    case OpKind::BackwardWeight: return rc.chunks[op.chunk].backward_weight;
    case OpKind::ForwardBackward:  // the two passes back to back; their communication runs beside them
      return rc.chunks[op.chunk].forward + rc.chunks[op.backward_chunk].backward;
    case OpKind::OptimizerStep: return rc.optimizer_step;
    case OpKind::SendActivation:
    case OpKind::RecvActivation:
    case OpKind::SendGrad:
    case OpKind::RecvGrad:
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::AllToAll: break;
  }
  throw std::logic_error("not a compute op");
}

void Simulation::start_compute(Actor& actor, const Op& op, std::size_t op_index) {
  TimeNs duration = compute_duration(actor, op);
  // NCCL kernels of a gradient-stream collective in flight beside the pass hold some of the GPU's
  // SMs for the whole pass (compute_contention.h).
  const bool shared = actor.collectives_issued > actor.collectives_done;
  if (shared && op.kind != OpKind::OptimizerStep) {
    duration = contended_compute(duration, cluster_.gpu_kind_of(gpu(actor.members.front())));
  }
  if (actor.slowdown != 1.0) {
    duration = TimeNs::seconds(duration.to_seconds() * actor.slowdown);
  }
  const int index = static_cast<int>(&actor - actors_.data());
  if (op.kind == OpKind::ForwardBackward) duration += pair_exposure(actor, index, op, op_index);
  // Memory: the stashes a pass adds or frees (schedule/stash.h), at the pass's start, an F&B pair's
  // two passes in schedule::memory_order, each with its working memory on top; the last one's stays
  // until the op ends.
  for (const Op& pass : schedule::memory_order(op, program_.shape.kind)) {
    const ChunkCost& cc = costs_of(actor).chunk(actor.rank, pass.kind == OpKind::OptimizerStep ? 0 : pass.chunk);
    const schedule::StashChange change = schedule::stash_change(pass.kind);
    actor.memory += change.full * cc.stashed.count() + change.after_input * cc.stashed_after_input.count();
    actor.working_memory =
        pass.kind == OpKind::OptimizerStep
            ? costs_of(actor).ranks[static_cast<std::size_t>(actor.rank)].static_memory.optimizer_step_working.count()
            : schedule::working_bytes(pass.kind, cc.forward_working.count(), cc.backward_working.count(),
                                      cc.stashed_after_input.count());
    if (pass.kind != OpKind::OptimizerStep) {
      actor.activation_peak = std::max(actor.activation_peak, actor.memory + actor.working_memory);
    }
    notify([&](Observer& o) { o.memory_changed(index, now_, actor.memory + actor.working_memory); });
  }
  actor.computing = true;
  actor.compute_ended = false;
  actor.busy_since = now_;
  actor.compute_until = now_ + duration.base();
  actor.pipeline_op = op.kind != OpKind::OptimizerStep;
  OpEvent e = event_of(index, op_index, now_, schedule::virtual_stage(program_.shape, actor.rank, op.chunk), 0);
  e.end_ns = now_ + duration.base();
  notify([&](Observer& o) { o.compute_ran(e); });
  queue_.push(TimeNs::ns(now_) + duration, ComputeDone{index});
}

TimeNs Simulation::pair_exposure(const Actor& actor, int index, const Op& op, std::size_t op_index) {
  const RankCost& rc = costs_of(actor).ranks[static_cast<std::size_t>(actor.rank)];
  const ChunkCost& f = rc.chunks[op.chunk];
  const ChunkCost& b = rc.chunks[op.backward_chunk];
  if (f.moe_blocks == 0 && b.moe_blocks == 0) return TimeNs{};
  // One expert all-to-all of each pass on idle links: the pair's in-layer collectives stand just
  // before it in the stream, each pass's tagged with its microbatch and chunk.
  TimeNs forward_a2a, backward_a2a;
  const auto& stream = stream_of(actor);
  for (std::size_t i = op_index; i-- > 0;) {
    const Op& c = stream[i];
    if (!schedule::is_collective(c.kind) || !schedule::is_in_layer(c.stream)) break;
    if (c.kind != OpKind::AllToAll || c.group != plan::AxisSet(plan::Axis::Expert)) continue;
    const TimeNs one = TimeNs::ns(static_cast<std::int64_t>(phases_of(actor.rank, index, c).idle_ns /
                                                            std::max<double>(1, c.count)));
    if (c.microbatch == op.microbatch && c.chunk == op.chunk) forward_a2a = one;
    if (c.microbatch == op.backward_microbatch && c.chunk == op.backward_chunk) backward_a2a = one;
  }
  const topology::GpuKind& kind = cluster_.gpu_kind_of(gpu(actor.members.front()));
  const int sms = dispatcher_sms(plan_.dispatcher, plan_.flex_dispatcher_sms);
  const int paired = std::min(f.moe_blocks, b.moe_blocks);
  const TimeNs per_pair =
      forward_slots_extra(f, backward_a2a, sms, kind) + backward_slots_extra(b, forward_a2a, sms, kind);
  return per_pair * paired + forward_a2a * (2 * (f.moe_blocks - paired)) + backward_a2a * (2 * (b.moe_blocks - paired));
}

void Simulation::release(Actor& actor) {
  actor.computing = false;
  actor.compute_ended = false;
  const int index = static_cast<int>(&actor - actors_.data());
  if (actor.working_memory != 0) {
    actor.working_memory = 0;
    notify([&](Observer& o) { o.memory_changed(index, now_, actor.memory); });
  }
  notify([&](Observer& o) { o.stream_held(index, actor.busy_since, now_, actor.pipeline_op); });
  if (actor.communication_since >= 0) {
    notify([&](Observer& o) { o.communication_waited(index, actor.communication_since, now_); });
    actor.communication_since = -1;
  }
  advance(index);
}

/// Issues the actor's ops until one blocks (a compute op or a blocking in-layer collective running, a
/// Recv waiting, an OptimizerStep waiting for collectives).
void Simulation::advance(int index) {
  Actor& actor = actors_[static_cast<std::size_t>(index)];
  const auto& stream = stream_of(actor);
  while (!actor.computing && actor.cursor < stream.size()) {
    const Op& op = stream[actor.cursor];
    switch (op.kind) {
      case OpKind::Forward:
      case OpKind::Backward:
      case OpKind::BackwardInput:
      case OpKind::BackwardWeight:
      case OpKind::ForwardBackward:
        start_compute(actor, op, actor.cursor++);
        break;
      case OpKind::OptimizerStep:
        if (actor.collectives_done < actor.collectives_issued) return;  // waits for its gradient sync
        start_compute(actor, op, actor.cursor++);
        break;
      case OpKind::SendActivation:
      case OpKind::SendGrad: {
        ++actor.cursor;
        const auto to_rank = static_cast<int>(op.peer);
        const ChunkCost& cc = costs_of(actor).chunk(actor.rank, op.chunk);
        start_transfer(p2p_set(index, to_rank), cc.activation_send,
                       PointToPoint{actor_index(to_rank, actor.replica), message_number(actor, op), now_, index,
                                    actor.cursor - 1});
        break;
      }
      case OpKind::RecvActivation:
      case OpKind::RecvGrad: {
        const MessageId id = schedule::message_of(program_of(actor).shape, actor.rank, op);
        const std::int64_t message = schedule::message_number(program_of(actor).shape, id);
        if (actor.arrived.erase(message) == 0) {
          if (actor.waiting_for != message) actor.waiting_since = now_;
          actor.waiting_for = message;
          return;
        }
        if (actor.waiting_for == message && now_ > actor.waiting_since) {
          const OpEvent e = event_of(index, actor.cursor, actor.waiting_since, id.receiving_stage, 0);
          notify([&](Observer& o) { o.recv_waited(e); });
        }
        actor.waiting_for.reset();
        ++actor.cursor;
        break;
      }
      case OpKind::AllReduce:
      case OpKind::ReduceScatter:
      case OpKind::AllGather:
      case OpKind::AllToAll: {
        if (schedule::is_in_layer(op.stream)) {
          Collective c;
          c.rank = actor.rank;
          c.actor = index;
          c.op_index = actor.cursor;
          c.op = &op;
          std::size_t id = collectives_.size();
          if (free_layer_collectives_.empty()) {
            collectives_.push_back(c);
          } else {
            id = free_layer_collectives_.back();
            free_layer_collectives_.pop_back();
            collectives_[id] = c;
          }
          ++actor.cursor;
          ++actor.layer_outstanding;
          actor.layer_queue.push_back(id);
          if (op.stream == CommStream::Blocking) {
            // The compute stream waits for it, as for a compute op.
            actor.computing = true;
            actor.compute_ended = true;
            actor.busy_since = now_;
            actor.communication_since = now_;
          }
          try_start_layer_collective(actor);
          break;
        }
        const auto k = static_cast<std::size_t>(actor.collectives_issued++);
        ++actor.cursor;
        const std::size_t id = collectives_of_rank_[static_cast<std::size_t>(actor.rank)].at(k);
        ++collectives_[id].arrived;
        try_start_collective(actor.rank);
        break;
      }
    }
  }
  if (actor.cursor >= stream.size() && !actor.computing) notify([&](Observer& o) { o.actor_idle(index, now_); });
}

const Simulation::TransferSet& Simulation::p2p_set(int index, int to_rank) {
  auto& set = p2p_sets_[{index, to_rank}];
  if (set == nullptr) {
    // Every GPU the actor stands for sends to its peer with the same coordinates on the next rank.
    const Actor& actor = actors_[static_cast<std::size_t>(index)];
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    for (const int m : actor.members) pairs.emplace_back(gpu(m), gpu(layout_.with(m, plan::Axis::Pipeline, to_rank)));
    set = &transfer_set(pairs);
  }
  return *set;
}

void Simulation::declare_transfer_sets() {
  for (std::size_t index = 0; index < actors_.size(); ++index) {
    const int rank = actors_[index].rank;
    const auto& stream = stream_of(actors_[index]);
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (op.kind == OpKind::SendActivation || op.kind == OpKind::SendGrad) {
        (void)p2p_set(static_cast<int>(index), static_cast<int>(op.peer));
      } else if (schedule::is_collective(op.kind)) {
        (void)phases_of(rank, schedule::is_in_layer(op.stream) ? static_cast<int>(index) : -1, op);
      }
    }
  }
  std::vector<std::span<const Usage>> sets;
  sets.reserve(transfer_set_by_id_.size());
  for (const TransferSet* t : transfer_set_by_id_) sets.emplace_back(t->usage);
  network_->use_usage_sets(sets);
  sets_declared_ = true;
}

bool Simulation::start_collective(std::size_t id) {
  Collective& c = collectives_[id];
  c.start_ns = now_;
  c.phases = &phases_of(c.rank, c.actor, *c.op);
  c.round = 0;
  if (c.phases->rounds.empty()) return false;
  const CollectiveRound& first = c.phases->rounds.front();
  start_transfer(*c.phases->transfers.front(), first.bytes, CollectivePayload{id}, first.rounds, c.phases->caps.front());
  return true;
}

const Simulation::Phases& Simulation::phases_of(int rank, int actor, const Op& op) {
  // Every group of the GPUs the collective's actors stand for runs it at once (one per tensor rank
  // for a data-parallel reduction, one per replica for a tensor all-reduce of folded replicas).
  const int scope = actor < 0 ? -1 - rank : actor;
  const auto key = std::make_tuple(scope, op.kind, op.group.bits(), op.bytes.count(), static_cast<int>(op.count));
  auto found = phases_.find(key);
  if (found == phases_.end()) {
    const std::vector<int>& members =
        actor < 0 ? rank_members_[static_cast<std::size_t>(rank)] : actors_[static_cast<std::size_t>(actor)].members;
    const DeviceGroups groups = device_groups(cluster_, layout_, members, op.group);
    const CollectiveKind kind = collective_kind(op.kind);
    const int count = static_cast<int>(op.count);
    // A reduction between mirrored pipeline ranks (a bidirectional schedule's two copies of a stage) spans two
    // actors, and each runs it: each moves only its own GPUs' sends, so that the links carry the
    // collective once. The mirrored ranks run the same order, so both halves start together.
    std::vector<topology::DeviceId> own;
    if (op.group.contains(plan::Axis::PipelineMirror)) {
      for (const int m : members) own.push_back(cluster_.gpus().at(static_cast<std::size_t>(m)));
      std::sort(own.begin(), own.end());
    }
    const std::vector<topology::DeviceId>* senders = own.empty() ? nullptr : &own;
    const TokenRouting* routing = expert_routing(token_routing_, kind, op.group);
    CollectiveAlgorithm algorithm = options_.collective;
    Phases phases;
    if (algorithm != CollectiveAlgorithm::Auto) {
      phases = build_phases(kind, algorithm, groups, op.bytes, count, senders, routing);
    } else {
      // NCCL's tuner: the candidate that is fastest on idle links; the first on a tie. It chooses for
      // the whole collective, also where this actor moves only its share.
      double best = 0;
      for (const CollectiveAlgorithm a : auto_candidates(cluster_, kind, groups)) {
        Phases candidate = build_phases(kind, a, groups, op.bytes, count, nullptr, routing);
        const double t = candidate.idle_ns;
        if (phases.rounds.empty() || t < best) {
          best = t;
          algorithm = a;
          phases = std::move(candidate);
        }
      }
    }
    if (senders != nullptr && options_.collective == CollectiveAlgorithm::Auto && algorithm != CollectiveAlgorithm::Auto) {
      phases = build_phases(kind, algorithm, groups, op.bytes, count, senders, routing);
    }
    found = phases_.emplace(key, std::move(phases)).first;
  }
  return found->second;
}

Simulation::Phases Simulation::build_phases(CollectiveKind kind, CollectiveAlgorithm algorithm, const DeviceGroups& groups,
                                           Bytes bytes, int count, const std::vector<topology::DeviceId>* senders,
                                           const TokenRouting* routing) {
  Phases phases;
  phases.rounds = collective_rounds(cluster_, kind, algorithm, groups, bytes, routing);
  if (senders != nullptr) {
    for (CollectiveRound& r : phases.rounds) {
      std::erase_if(r.transfers, [&](const auto& t) { return !std::binary_search(senders->begin(), senders->end(), t.first); });
    }
    std::erase_if(phases.rounds, [](const CollectiveRound& r) { return r.transfers.empty(); });
  }
  for (CollectiveRound& r : phases.rounds) {
    r.rounds *= count;  // `count` collectives back to back
    const TransferSet& set = transfer_set(r.transfers);
    phases.transfers.push_back(&set);
    phases.caps.push_back(BytesPerSec::bytes_per_sec(set.collective_cap[r.nvls ? 1 : 0]));
  }
  phases.idle_ns = idle_time_ns(phases);
  return phases;
}

double Simulation::idle_time_ns(const Phases& phases) const {
  double total = 0;
  for (std::size_t i = 0; i < phases.rounds.size(); ++i) {
    const CollectiveRound& r = phases.rounds[i];
    const TransferSet& set = *phases.transfers[i];
    const double rate = network_->rate_alone(set.usage, phases.caps[i].in_bytes_per_sec() * 1e-9);  // bytes per ns
    total += static_cast<double>(r.rounds) *
             (static_cast<double>(set.latency.base()) + static_cast<double>(r.bytes.count()) / rate);
  }
  return total;
}

void Simulation::try_start_collective(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  const auto& ids = collectives_of_rank_[r];
  // A rank's gradient collectives run one at a time, in order, once every replica has issued them.
  while (!collective_busy_[r] && next_collective_[r] < ids.size()) {
    const std::size_t id = ids[next_collective_[r]];
    if (collectives_[id].arrived < replicas_) return;
    if (!start_collective(id)) {
      finish_collective(id);
      continue;
    }
    collective_busy_[r] = true;
  }
}

void Simulation::try_start_layer_collective(Actor& actor) {
  // An actor's in-layer collectives run one at a time, in order.
  while (!actor.layer_busy && !actor.layer_queue.empty()) {
    const std::size_t id = actor.layer_queue.front();
    actor.layer_queue.pop_front();
    if (!start_collective(id)) {
      finish_layer_collective(id);
      continue;
    }
    actor.layer_busy = true;
  }
}

void Simulation::finish_layer_collective(std::size_t id) {
  const Collective& c = collectives_[id];
  Actor& actor = actors_[static_cast<std::size_t>(c.actor)];
  {
    const Op& op = *c.op;
    const OpEvent e = event_of(c.actor, c.op_index, c.start_ns, schedule::virtual_stage(program_.shape, c.rank, op.chunk),
                               op.bytes.count() * op.count);
    notify([&](Observer& o) { o.collective_done(e); });
  }
  actor.layer_busy = false;
  --actor.layer_outstanding;
  free_layer_collectives_.push_back(id);
  // A blocking collective, or a compute op that waited for the collectives beside it, frees the stream.
  if (actor.computing && actor.compute_ended && actor.layer_outstanding == 0) {
    release(actor);
  }
  try_start_layer_collective(actor);
}

void Simulation::finish_collective(std::size_t id) {
  Collective& c = collectives_[id];
  if (c.actor >= 0) {
    finish_layer_collective(id);
    return;
  }
  const auto r = static_cast<std::size_t>(c.rank);
  for (int d = 0; d < replicas_; ++d) {
    const int index = actor_index(c.rank, d);
    const auto work = static_cast<std::size_t>(actors_[static_cast<std::size_t>(index)].work);
    const std::size_t op_index = gradient_ops_[work][r][c.op_index];
    const OpEvent e = event_of(index, op_index, c.start_ns, c.rank, c.op->bytes.count());
    notify([&](Observer& o) {
      o.collective_done(e);
      o.actor_idle(index, now_);
    });
    ++actors_[static_cast<std::size_t>(index)].collectives_done;
  }
  collective_busy_[r] = false;
  ++next_collective_[r];
  const int rank = c.rank;  // advance() may add in-layer collectives and move `c`
  for (int d = 0; d < replicas_; ++d) advance(actor_index(rank, d));
  try_start_collective(rank);
}

Prediction Simulation::run() {
  observers_.push_back(&activity_);
  if (options_.record_timeline) observers_.push_back(&timeline_.emplace(cluster_, options_.timeline_links));
  if (options_.observer != nullptr) observers_.push_back(options_.observer);
  // Replica slots: with folding one per class of replicas (one in all where the replicas run alike),
  // else one per replica.
  const int data = plan_.degrees[plan::Axis::Data];
  if (options_.fold_replicas) {
    slot_of_replica_ = class_of_replica_;
    replicas_ = static_cast<int>(work_.size());
  } else {
    for (int d = 0; d < data; ++d) slot_of_replica_.push_back(d);
    replicas_ = data;
  }
  std::vector<int> class_of_slot(static_cast<std::size_t>(replicas_), 0);
  for (int d = 0; d < data; ++d) {
    class_of_slot[static_cast<std::size_t>(slot_of_replica_[static_cast<std::size_t>(d)])] =
        class_of_replica_[static_cast<std::size_t>(d)];
  }
  const int ranks = program_.shape.stages;
  // Each class's gradient-stream ops by rank, in order: the same collectives (their buckets follow the
  // parameters, not the microbatches) at the places its own program puts them.
  for (const ReplicaWork& w : work_) {
    auto& by_rank = gradient_ops_.emplace_back(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      const auto& stream = w.program->streams[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < stream.size(); ++i) {
        if (schedule::is_collective(stream[i].kind) && !schedule::is_in_layer(stream[i].stream)) {
          by_rank[static_cast<std::size_t>(r)].push_back(i);
        }
      }
      const auto& first = gradient_ops_.front()[static_cast<std::size_t>(r)];
      const auto& mine = by_rank[static_cast<std::size_t>(r)];
      bool alike = first.size() == mine.size();
      for (std::size_t k = 0; alike && k < mine.size(); ++k) {
        const Op& a = program_.streams[static_cast<std::size_t>(r)][first[k]];
        const Op& b = stream[mine[k]];
        alike = a.kind == b.kind && a.group == b.group && a.bytes == b.bytes && a.count == b.count;
      }
      if (!alike) throw std::logic_error(fmt::format("rank {}: the replicas' gradient collectives differ", r));
    }
  }
  actors_.resize(static_cast<std::size_t>(ranks * replicas_));
  rank_members_.resize(static_cast<std::size_t>(ranks));
  collectives_of_rank_.resize(static_cast<std::size_t>(ranks));
  collective_busy_.assign(static_cast<std::size_t>(ranks), false);
  next_collective_.assign(static_cast<std::size_t>(ranks), 0);
  using plan::Axis;
  const plan::AxisSet stage_axes = Axis::Tensor | Axis::Context;  // in lockstep: one actor stands for them
  for (int r = 0; r < ranks; ++r) {
    const int first = layout_.with(0, Axis::Pipeline, r);
    rank_members_[static_cast<std::size_t>(r)] = layout_.group(first, stage_axes | Axis::Data);
    const auto& stream = program_.streams[static_cast<std::size_t>(r)];
    const auto& gradient_ops = gradient_ops_.front()[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < gradient_ops.size(); ++k) {
      collectives_of_rank_[static_cast<std::size_t>(r)].push_back(collectives_.size());
      Collective c;
      c.rank = r;
      c.op_index = k;
      c.op = &stream[gradient_ops[k]];
      collectives_.push_back(c);
    }
    for (int d = 0; d < replicas_; ++d) {
      Actor& a = actors_[static_cast<std::size_t>(actor_index(r, d))];
      a.rank = r;
      a.replica = d;
      a.work = class_of_slot[static_cast<std::size_t>(d)];
      if (options_.fold_replicas) {
        // The GPUs of every replica of the slot's class.
        for (const int m : rank_members_[static_cast<std::size_t>(r)]) {
          if (slot_of_replica_[static_cast<std::size_t>(layout_.coordinate(m, Axis::Data))] == d) a.members.push_back(m);
        }
      } else {
        a.members = layout_.group(layout_.with(first, Axis::Data, d), stage_axes);
      }
      a.memory = costs_of(a).ranks[static_cast<std::size_t>(r)].static_memory.total().count();
      a.activation_peak = a.memory;
      a.shown_member = a.members.front();
      for (const int m : a.members) {
        const double slowdown = cluster_.device(gpu(m)).slowdown;
        if (slowdown > a.slowdown) {
          a.slowdown = slowdown;
          a.shown_member = m;
        }
      }
      const int index = actor_index(r, d);
      notify([&](Observer& o) {
        o.actor_added(index, r, d, gpu(a.shown_member), a.members);
        o.memory_changed(index, 0, a.memory);
      });
    }
  }
  declare_transfer_sets();
  if (options_.step_limit) {
    count_remaining_compute();
    if (traffic_floor() > options_.step_limit->base()) {
      Prediction out;
      out.exceeded_limit = true;
      return out;
    }
  }
  queue_.reserve(1024);
  for (std::size_t i = 0; i < actors_.size(); ++i) advance(static_cast<int>(i));

  // A live event past the limit means the step ends after it: a pass ends at a ComputeDone, and a
  // flow that starts or ends is one a pass waits for. So does a floor past it: what some actor's
  // stream has left to run from now on (step_floor()).
  const std::int64_t limit = options_.step_limit ? options_.step_limit->base() : std::numeric_limits<std::int64_t>::max();
  while (!queue_.empty()) {
    now_ = queue_.next_time().base();
    const Event event = queue_.pop();
    ++events_;
    const auto* flow_done = std::get_if<FlowDone>(&event);
    if (flow_done != nullptr && (!live_flows_.contains(flow_done->flow) || network_->version(flow_done->flow) != flow_done->version)) {
      continue;
    }
    if (now_ > limit || (options_.step_limit && step_floor() > limit)) {
      Prediction out;
      out.events = events_;
      out.flows = network_->flows_started();
      out.exceeded_limit = true;
      return out;
    }
    if (const auto* done = std::get_if<ComputeDone>(&event)) {
      Actor& actor = actors_[static_cast<std::size_t>(done->actor)];
      actor.compute_ended = true;
      // An op with in-layer collectives beside it ends when they do: the stream waits on them meanwhile.
      if (actor.layer_outstanding == 0) {
        release(actor);
      } else {
        actor.communication_since = now_;
      }
    } else if (const auto* activate = std::get_if<FlowActivate>(&event)) {
      PendingFlow& pending = pending_flows_[activate->pending];
      const auto& changed = network_->start(TimeNs::ns(now_), pending.transfers->id, pending.bytes, pending.cap);
      const NetworkModel::FlowId id = static_cast<NetworkModel::FlowId>(network_->flows_started() - 1);
      live_flows_.emplace(id, LiveFlow{std::move(pending.payload), now_, &pending.transfers->usage, pending.bytes});
      free_pending_.push_back(activate->pending);
      reschedule(changed);
    } else {
      on_flow_done(flow_done->flow);  // a live one: stale ones were skipped above
    }
  }

  Prediction out;
  out.events = events_;
  out.flows = network_->flows_started();
  for (const Actor& a : actors_) {
    if (a.cursor < stream_of(a).size() || a.computing) {
      throw std::logic_error(fmt::format("simulation stalled: rank {} replica {} at op {}", a.rank, a.replica, a.cursor));
    }
  }
  out.report = build_report();
  if (timeline_) out.timeline = timeline_->take();
  return out;
}

void Simulation::count_remaining_compute() {
  remaining_compute_.clear();
  for (std::size_t index = 0; index < actors_.size(); ++index) {
    const Actor& actor = actors_[index];
    const int rank = actor.rank;
    const auto& stream = stream_of(actor);
    std::vector<std::int64_t> left(stream.size() + 1, 0);
    for (std::size_t i = stream.size(); i-- > 0;) {
      const Op& op = stream[i];
      std::int64_t own = 0;
      if (schedule::is_compute(op.kind)) {
        own = compute_duration(actor, op).base();
      } else if (schedule::is_collective(op.kind) && op.stream == CommStream::Blocking) {
        // A flow's end is rounded to the nanosecond: a nanosecond per phase of slack.
        const Phases& phases = phases_of(rank, static_cast<int>(index), op);
        const double idle = phases.idle_ns;
        if (idle < 1e18) {  // not over a link of no capacity
          own = std::max<std::int64_t>(0, static_cast<std::int64_t>(idle) - static_cast<std::int64_t>(phases.rounds.size()));
        }
      }
      left[i] = left[i + 1] + own;
    }
    remaining_compute_.push_back(std::move(left));
  }
}

std::int64_t Simulation::traffic_floor() {
  // Bytes per declared transfer set (every transfer of a flow counted by its usage), then per link direction.
  std::vector<double> set_bytes(transfer_set_by_id_.size(), 0.0);
  for (std::size_t index = 0; index < actors_.size(); ++index) {
    const Actor& actor = actors_[index];
    const auto& stream = stream_of(actor);
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (schedule::is_send(op.kind)) {
        const TransferSet& set = p2p_set(static_cast<int>(index), static_cast<int>(op.peer));
        set_bytes[set.id] += static_cast<double>(costs_of(actor).chunk(actor.rank, op.chunk).activation_send.count());
      } else if (schedule::is_collective(op.kind)) {
        const bool in_layer = schedule::is_in_layer(op.stream);
        if (!in_layer && actor.replica != 0) continue;  // one gradient-stream instance per rank
        const Phases& phases = phases_of(actor.rank, in_layer ? static_cast<int>(index) : -1, op);
        for (std::size_t k = 0; k < phases.rounds.size(); ++k) {
          set_bytes[phases.transfers[k]->id] +=
              static_cast<double>(phases.rounds[k].bytes.count()) * static_cast<double>(phases.rounds[k].rounds);
        }
      }
    }
  }
  std::map<ResourceId, double> resource_bytes;
  for (std::size_t id = 0; id < set_bytes.size(); ++id) {
    if (set_bytes[id] == 0) continue;
    for (const Usage& u : transfer_set_by_id_[id]->usage) resource_bytes[u.resource] += set_bytes[id] * u.count;
  }
  double floor = 0;
  for (const auto& [resource, bytes] : resource_bytes) {
    const Usage one{resource, 1};
    const double rate = network_->rate_alone(std::span<const Usage>(&one, 1), std::numeric_limits<double>::infinity());
    if (rate > 0) floor = std::max(floor, bytes / rate);
  }
  // A flow ends when its end, rounded up, is within 1e-6 ns of its bytes (FlowNetwork::completion):
  // a millionth of the floor covers that for up to a million flows per second of step.
  return static_cast<std::int64_t>(floor * (1 - 1e-6));
}

std::int64_t Simulation::step_floor() const {
  std::int64_t floor = now_;
  for (std::size_t index = 0; index < actors_.size(); ++index) {
    const Actor& a = actors_[index];
    const std::int64_t left = remaining_compute_[index][a.cursor];
    floor = std::max(floor, std::max(now_, a.computing ? a.compute_until : now_) + left);
  }
  return floor;
}

void Simulation::on_flow_done(NetworkModel::FlowId flow) {
  auto node = live_flows_.extract(flow);
  const Payload payload = std::move(node.mapped().payload);
  reschedule(network_->finish(TimeNs::ns(now_), flow));
  report_link_use(node.mapped());
  if (const auto* p2p = std::get_if<PointToPoint>(&payload)) {
    const Actor& from = actors_[static_cast<std::size_t>(p2p->from_actor)];
    const int from_rank = from.rank;
    const Op& op = stream_of(from)[p2p->op_index];
    const OpEvent e = event_of(p2p->from_actor, p2p->op_index, p2p->issued_ns,
                               schedule::virtual_stage(program_.shape, from_rank, op.chunk),
                               costs_of(from).chunk(from_rank, op.chunk).activation_send.count());
    notify([&](Observer& o) { o.send_done(e); });
    deliver(*p2p);
    return;
  }
  const std::size_t id = std::get<CollectivePayload>(payload).collective;
  Collective& c = collectives_[id];
  ++c.round;
  if (c.round < c.phases->rounds.size()) {
    const CollectiveRound& round = c.phases->rounds[c.round];
    start_transfer(*c.phases->transfers[c.round], round.bytes, CollectivePayload{id}, round.rounds,
                   c.phases->caps[c.round]);
    return;
  }
  finish_collective(id);
}

/// Every link the flow crossed, from the time it began to move to its end.
void Simulation::report_link_use(const LiveFlow& flow) {
  if (observers_.size() == 1) return;  // only the activity recorder, which does not look at links
  std::size_t previous = SIZE_MAX;
  for (const Usage& u : *flow.usage) {
    const std::size_t link = u.resource / 2;
    if (link == previous) continue;  // both directions of a link share its lane
    previous = link;
    const std::int64_t bytes = flow.bytes.count() * u.count;
    notify([&](Observer& o) { o.link_used(link, flow.activated, now_, bytes); });
  }
}

void Simulation::deliver(const PointToPoint& message) {
  Actor& to = actors_[static_cast<std::size_t>(message.to_actor)];
  to.arrived.insert(message.message);
  if (to.waiting_for == message.message) advance(message.to_actor);
}

trace::Report Simulation::build_report() const {
  // Devices: every GPU of the plan, with the numbers of the actor that stands for it.
  std::vector<schedule::DeviceActivity> devices;
  for (int g = 0; g < layout_.ranks(); ++g) {
    const int stage = layout_.coordinate(g, plan::Axis::Pipeline);
    const int replica = slot_of_replica_[static_cast<std::size_t>(layout_.coordinate(g, plan::Axis::Data))];
    const int index = actor_index(stage, replica);
    const Actor& actor = actors_[static_cast<std::size_t>(index)];
    const ActivityRecorder::Actor& a = activity_.actors()[static_cast<std::size_t>(index)];
    schedule::DeviceActivity d;
    d.id = cluster_.device(gpu(g)).name;
    d.stage = stage;
    d.busy_ns = a.busy_ns;
    d.pipeline_busy_ns = a.pipeline_busy_ns;
    d.communication_wait_ns = a.communication_wait_ns;
    d.first_start_ns = a.first_start_ns;
    d.last_end_ns = a.last_end_ns;
    d.peak_memory_bytes = a.peak_memory_bytes;
    const RankCost& cost = costs_of(actor).ranks[static_cast<std::size_t>(stage)];
    d.memory_capacity_bytes = cost.memory_capacity.count();
    // The activations at their own largest moment and the optimizer step's copies apart (no activation is
    // held while the step runs): the peak is the static part plus the larger.
    const StaticMemory& fixed = cost.static_memory;
    d.memory = {fixed.weights.count(),     fixed.gradients.count(),
                fixed.optimizer.count(),   actor.activation_peak - fixed.total().count(),
                fixed.reserved.count(),    fixed.optimizer_step_working.count()};
    d.represents_stage = actor.replica == 0 && g == actor.shown_member;
    d.memory_timeline = a.memory_timeline.points();
    devices.push_back(std::move(d));
  }
  // Links that carried traffic, in link order.
  std::vector<trace::LinkReport> links;
  const auto& bytes = network_->link_bytes();
  const auto& busy = network_->link_busy_ns();
  for (std::size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] <= 0) continue;
    links.push_back({cluster_.links()[l].name, static_cast<std::int64_t>(bytes[l] + 0.5), static_cast<double>(busy[l]) * 1e-9});
  }
  const auto peak = cluster_.mean_training_peak(model_.dtype_bytes);
  trace::Report report = schedule::build_report(static_cast<double>(activity_.step_ns()) * 1e-9, std::move(devices),
                                                schedule::step_flops(model_, plan_), peak, plan_, std::move(links));
  report.replica_classes = replica_class_reports(class_of_replica_, cluster_, plan_, layout_, report.devices);
  return report;
}

}  // namespace

schedule::Program build_program(const model::Model& model, const plan::Plan& plan, const CostModel& costs,
                                const EngineOptions& options) {
  schedule::GradientSync sync;
  for (const RankCost& rc : costs.ranks) {
    std::vector<Bytes> per_chunk, experts;
    for (const ChunkCost& cc : rc.chunks) {
      per_chunk.push_back(cc.gradient_bytes);
      experts.push_back(cc.expert_gradient_bytes);
    }
    sync.gradient_bytes.push_back(std::move(per_chunk));
    // Experts without replicas (expert data 1) have nothing to reduce.
    if (schedule::reduces_expert_gradients(plan)) sync.expert_gradient_bytes.push_back(std::move(experts));
  }
  sync.bucket_size = options.grad_bucket.count() > 0 ? options.grad_bucket
                                                     : schedule::default_gradient_bucket(plan, model.dtype_bytes);
  sync.overlap = options.overlap_grad_reduce || plan.overlap_grad_reduce;
  return schedule::plan_program(model, plan, std::move(sync), options.compute_program);
}

Prediction simulate(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                    const schedule::Program& program, const CostModel& costs, const EngineOptions& options) {
  if (const auto error = schedule::validate(program)) {
    throw std::logic_error(fmt::format("invalid program: {}", error->message));
  }
  Simulation simulation(cluster, model, plan, {ReplicaWork{&program, &costs}}, {}, options);
  return simulation.run();
}

Prediction simulate(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                    const EngineOptions& options) {
  const plan::Layout layout(plan);
  const ReplicaClasses classes = replica_classes(cluster, plan);
  if (classes.first_replica.size() == 1) {
    const CostModel costs = build_cost_model(cluster, model, plan, layout, options.routes);
    const schedule::Program program = build_program(model, plan, costs, options);
    // An imported order is the user's: it is checked with everything the passes added. A program the
    // engine built from a plan is proven by the schedule tests, so not validated again on every
    // simulation (the planner runs thousands).
    if (options.compute_program != nullptr) return simulate(cluster, model, plan, program, costs, options);
    Simulation simulation(cluster, model, plan, {ReplicaWork{&program, &costs}}, {}, options);
    return simulation.run();
  }
  // Replicas that run apart: each class's program (the schedule's generator asked for its microbatches)
  // priced on its GPUs.
  if (options.compute_program != nullptr) {
    throw std::invalid_argument("an imported schedule is of one microbatch count; it does not run uneven replica shares");
  }
  std::vector<CostModel> costs;
  std::vector<schedule::Program> programs;
  costs.reserve(classes.first_replica.size());
  programs.reserve(classes.first_replica.size());
  for (const int d : classes.first_replica) {
    costs.push_back(build_cost_model(cluster, model, plan, layout, options.routes, d));
    programs.push_back(build_program(model, plan::replica_plan(plan, d), costs.back(), options));
  }
  std::vector<ReplicaWork> work;
  for (std::size_t c = 0; c < programs.size(); ++c) work.push_back({&programs[c], &costs[c]});
  Simulation simulation(cluster, model, plan, std::move(work), classes.of_replica, options);
  return simulation.run();
}

}  // namespace mpsim::engine
