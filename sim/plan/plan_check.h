#pragma once
/// Checking a plan against the cluster and model it will run on.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/attention_generation.h"

namespace mpsim::topology {
class Cluster;                      // sim/topology/cluster.h
struct GpuKind;                     // sim/topology/gpu_kind.h
enum class DType : std::uint8_t;    // sim/topology/gpu_kind.h
}  // namespace mpsim::topology

namespace mpsim::plan {

/// The precision a model trains in when the plan names none: FP32 for 4-byte models, else BF16.
[[nodiscard]] Precision model_precision(int dtype_bytes) noexcept;
/// The GPU peak a precision's GEMMs run at (MXFP8 uses the FP8 tensor cores).
[[nodiscard]] topology::DType gemm_dtype(Precision p) noexcept;

/// Completes `spec` (data degree, microbatch count, balanced partition) and checks it makes sense
/// for `cluster` and `model`: degrees multiply to the GPU count; micro x microbatches x data =
/// global batch; virtual stages divide the layers of a stage; tensor within a node (one NVLink
/// domain) unless forced; heads divisible by tensor; schedule-specific rules. Throws InputError
/// at the offending field, with a message that says how to fix it.
[[nodiscard]] Plan resolve_plan(const PlanSpec& spec, const topology::Cluster& cluster, const model::Model& model);

/// The GPU kinds of the job's GPUs (cluster.gpus()), each once, in the order they first appear.
[[nodiscard]] std::vector<const topology::GpuKind*> job_gpu_kinds(const topology::Cluster& cluster);
/// The GPU kind (index into cluster.gpu_kinds()) of each pipeline stage of a plan of `degrees` placed by
/// `placement` on cluster.gpus(), in each data-parallel replica, and the first stage whose GPUs within one
/// replica are not all of one kind, with two of its GPUs that differ. Empty when the degrees do not cover
/// the cluster's GPUs.
struct StageGpuKinds {
  struct Mixed {
    int stage = 0;
    int first = 0;  ///< the stage's first GPU in the replica (a rank: an index into cluster.gpus())
    int other = 0;  ///< one of another kind
  };
  std::vector<int> kinds;  ///< by pipeline rank, of data-parallel replica 0
  std::vector<std::vector<int>> replica_kinds;  ///< [data-parallel rank][pipeline rank]
  std::optional<Mixed> mixed;
  /// Whether two replicas hold a stage on different kinds (they run at different speeds).
  [[nodiscard]] bool replicas_differ() const noexcept {
    for (const auto& r : replica_kinds) {
      if (r != kinds) return true;
    }
    return false;
  }
};
[[nodiscard]] StageGpuKinds stage_gpu_kinds(const topology::Cluster& cluster, const Degrees& degrees,
                                            const Placement& placement);
/// On a cluster of several GPU kinds, each pipeline stage's GPUs within a data-parallel replica (every
/// tensor, context and expert rank of it) must be of one kind: a stage's passes are priced by its kind.
/// Replicas may sit on different kinds (replica_microbatches gives the faster ones more of the batch).
/// Why not, or nothing.
[[nodiscard]] std::optional<std::string> mixed_stage_error(const topology::Cluster& cluster, const Plan& plan);
/// Replicas on different kinds run at different speeds, so they are simulated apart: ZeRO 3's per-layer
/// gathers and the expert all-to-alls, which span the replicas, are not modelled then. Why not, or nothing.
[[nodiscard]] std::optional<std::string> replica_kinds_error(const StageGpuKinds& stages, const Degrees& degrees,
                                                             int zero);
/// What replica_microbatches must satisfy in a plan of `p`'s degrees and schedule: one count per
/// data-parallel replica, summing to microbatches x data, each a microbatch count the schedule runs
/// (v_schedule_error, interleaved_group_error); no ZeRO 3 and no expert parallelism when they differ
/// (ZeRO 3's per-layer gathers and the expert all-to-alls span the replicas, which would have to run
/// the same microbatches). The plan check and the planner both ask this. Why not, or nothing.
[[nodiscard]] std::optional<std::string> replica_share_error(const Plan& p, const std::vector<int>& shares);
/// Whether one replica of `p` may run `microbatches` (the count rules of replica_share_error: the V
/// schedules' minimum and even count, interleaved 1F1B's microbatch groups). Why not, or nothing.
[[nodiscard]] std::optional<std::string> replica_count_error(const Plan& p, int microbatches);


/// Megatron's rule for interleaved 1F1B's microbatch groups of `group_size` (N): one group (N >= m), or
/// N >= p with the microbatches a multiple of N or leaving a last group of at least p; smaller groups
/// (or last groups) make the warm-up deadlock. Why not, or nothing. The plan check, the schedule
/// generator and the planner all ask this.
[[nodiscard]] std::optional<std::string> interleaved_group_error(int microbatches, int pipeline, int group_size);
/// Whether `gpu` has a rate measured for `generation` of attention kernels. Why not, naming the
/// `setting` to leave out, or nothing. The plan check and `mpsim plan --attention-kernel` both ask this.
[[nodiscard]] std::optional<std::string> attention_rate_error(const topology::GpuKind& gpu,
                                                              topology::AttentionGeneration generation,
                                                              std::string_view setting);
/// A rule a schedule's shape breaks: the plan field at fault and why.
struct ShapeRuleError {
  std::string field;
  std::string message;
};
/// The V schedules' rules (is_v_shaped): two chunks per rank, and at least minimum_microbatches. The
/// plan check and the schedule generators both ask this.
[[nodiscard]] std::optional<ShapeRuleError> v_schedule_error(ScheduleKind kind, int pipeline, int virtual_stages,
                                                             int microbatches);
/// Whether `pipeline` x `virtual_stages` stages fit `layers` partitionable layers: at most one stage
/// per layer (plus `end_stages`, the stages an explicit partition may leave without one), and with
/// virtual stages and no explicit partition an even split. Why not, or nothing.
[[nodiscard]] std::optional<std::string> stage_count_error(int layers, int pipeline, int virtual_stages,
                                                           bool explicit_partition, int end_stages = 0);
/// The schedule parameters a spec implies, as resolve_plan() completes them: Megatron's
/// microbatch_group_size_per_vp_stage (default: the pipeline size; 1 for other schedules) and SageMaker's
/// active microbatches (default: pipeline + 2; 3 for other schedules, where it is unused).
[[nodiscard]] int microbatch_group_size_of(const PlanSpec& spec) noexcept;
[[nodiscard]] int active_microbatches_of(const PlanSpec& spec) noexcept;
/// zb-auto's memory limit, in microbatches' activations: the spec's, or the pipeline size (ZB-1p).
[[nodiscard]] int zb_memory_limit_of(const PlanSpec& spec) noexcept;

/// The layers a partition cuts: transformer blocks when the model has them, else every layer.
[[nodiscard]] int partitionable_layer_count(const model::Model& model);
/// Stages an explicit partition may leave without a block (0 to 2): the first when layers come before
/// the first block (the embedding alone), the last when layers follow the last one (the output head
/// alone), as Megatron's account_for_embedding/loss_in_pipeline_split and layouts such as
/// "Et|(tt|)*30L" place them.
[[nodiscard]] int end_stages_without_blocks(const model::Model& model);

/// Half-open range of indices into Model::layers.
struct LayerRange {
  int first = 0;
  int last = 0;
};

/// The layers of each virtual stage of a complete plan (plan.partition cuts the partitionable
/// layers; the embedding joins the first virtual stage and the output head the last). With a
/// bidirectional schedule the partition cuts p stages and virtual stage p + k repeats stage k.
[[nodiscard]] std::vector<LayerRange> virtual_stage_layers(const Plan& plan, const model::Model& model);

/// Layer boundaries of `stages` stages over `layers` layers, as even as possible (the first
/// stages take the remainder). The planner's cost-balanced partitioner replaces this.
[[nodiscard]] std::vector<int> even_partition(int layers, int stages);

}  // namespace mpsim::plan
