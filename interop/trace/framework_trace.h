#pragma once
/// Measured steps from the frameworks people run, for `mpsim compare`: PyTorch profiler (Kineto)
/// Chrome traces of a Megatron-LM / NeMo / TorchTitan run, one file per rank, and plain step-time
/// logs (Megatron-LM's "elapsed time per iteration (ms)", NeMo's "train_step_timing in s").
///
/// A Kineto trace has the profiler's steps as `ProfilerStep#N` ranges (profiler.step() marks them),
/// the GPU's kernels (cat "kernel": NCCL's collectives by their kernel names), and the
/// record_function ranges the framework adds, projected on the GPU streams (cat
/// "gpu_user_annotation"): forward / backward ranges where the framework names them so, and the
/// optimizer's `Optimizer.step#...` range, which PyTorch's optimizers record.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/trace/compare.h"
#include "sim/trace/kernel_class.h"

namespace mpsim::interop {

/// Whether `text` is a PyTorch profiler trace (traceEvents with "schemaVersion" or kernel and
/// ProfilerStep events, and no mpsim report).
[[nodiscard]] bool is_kineto_trace(std::string_view text);

/// One rank's trace: its text and the name to cite in errors.
struct KinetoFile {
  std::string name;
  std::string text;
};

/// What a trace's kernels are read into by their names (docs/calibration.md, "Reading kernel traces"):
/// the classes a software profile prices with a factor of its own (trace::KernelClass, the cost model's
/// own), NCCL's kernels, and the names no rule knows, which are reported rather than guessed into a class.
using trace::KernelClass;
using trace::kKernelClasses;
enum class UnpricedKernel : std::uint8_t { Nccl, Other };
[[nodiscard]] std::string_view to_string(UnpricedKernel k) noexcept;  ///< "nccl", "other"
using KernelKind = std::variant<KernelClass, UnpricedKernel>;
/// The kind of a kernel by its name (the first rule of the name table that matches; Other when none).
[[nodiscard]] KernelKind kernel_kind(std::string_view kernel_name);

/// Kernels of one class: how many ran and their summed durations (clipped to the profiled steps).
struct KernelTime {
  std::int64_t kernels = 0;
  double seconds = 0;
};
/// One rank's kernels over its profiled steps, by class. Kernels on several streams that overlap are
/// summed, not unioned: each class's time is what its kernels took, as the simulator prices them.
struct RankKernels {
  int rank = 0;
  int stage = -1;  ///< its pipeline stage as the devices' (rank / ranks_per_stage); -1: unknown
  int steps = 0;  ///< profiled steps (ProfilerStep#N ranges)
  std::array<KernelTime, kKernelClasses.size()> by_class{};  ///< by trace::KernelClass
  KernelTime nccl;
  KernelTime other;
  [[nodiscard]] const KernelTime& operator[](KernelClass c) const noexcept { return by_class[static_cast<std::size_t>(c)]; }
  [[nodiscard]] const KernelTime& operator[](UnpricedKernel k) const noexcept { return k == UnpricedKernel::Nccl ? nccl : other; }
  /// The time of the kernels of `kind`.
  [[nodiscard]] KernelTime& of(const KernelKind& kind) noexcept;
};
/// A run's kernels: each rank's, by rank, and the names of class Other with their kernels over all ranks.
struct TraceKernels {
  std::vector<RankKernels> ranks;
  std::map<std::string, KernelTime> other_names;
};

/// One rank's CUDA caching-allocator peaks inside its profiled steps, from the profiler's memory events
/// (`torch.profiler.profile(profile_memory=True)`: "[memory]" instant events whose args give the
/// allocator's "Total Allocated" and "Total Reserved" bytes after each allocation or free on a device,
/// "Device Type" 1 being CUDA). A trace without such events gives none.
struct RankMemory {
  int rank = 0;
  std::int64_t max_allocated_bytes = 0;
  std::int64_t max_reserved_bytes = 0;
};

/// The measured step of a run from its ranks' traces: the step time is the median `ProfilerStep#N`
/// duration over every step of every rank (the ranks wait for each other, so their steps are one
/// step), a device per rank named as the simulator names GPUs (`node<rank / gpus_per_node>/gpu<rank %
/// gpus_per_node>`, the rank from the trace's distributedInfo, else the file's position), its busy
/// time the union of its kernels over the profiled steps divided by their number, and spans of the
/// kinds the trace shows: NCCL all-reduce, reduce-scatter, all-gather, all-to-all and send/receive
/// kernels; forward, backward and optimizer ranges. A rank's pipeline stage is rank / ranks_per_stage
/// (Megatron's rank order tp-cp-ep-dp-pp, where a stage holds tensor x context x data ranks); 0: unknown
/// (-1). With `kernels`, also each rank's kernels by class (what `mpsim calibrate` reads rates from);
/// with `memory`, each rank's allocator peaks (RankMemory) where its trace has memory events, by rank.
/// Throws trace::TraceReadError naming the file, and for a malformed event its index and field.
[[nodiscard]] trace::StepRecord read_kineto_step(const std::vector<KinetoFile>& ranks, int gpus_per_node,
                                                 int ranks_per_stage, TraceKernels* kernels = nullptr,
                                                 std::vector<RankMemory>* memory = nullptr);

/// Whether `text` is a step-time log: a line with Megatron-LM's "elapsed time per iteration (ms):" or
/// NeMo's "train_step_timing in s".
[[nodiscard]] bool is_step_time_log(std::string_view text);
/// What a Megatron-LM / NeMo step log says of its run: the step time and, where its lines give them,
/// the throughput and the memory. Nothing it cannot know (devices, idle time, a timeline).
struct StepLog {
  double step_time_s = 0;  ///< the median over the logged steps
  int steps = 0;           ///< how many step times the log gives
  std::optional<double> tflops_per_gpu;  ///< the median of Megatron's "throughput per GPU (TFLOP/s/GPU)"
  /// The largest "max allocated" of the memory lines (PyTorch's allocator peak on one rank), the rank
  /// that printed it and that line's "max reserved" (the allocator's cache included): Megatron-LM's
  /// "[Rank N] (after K iterations) memory (MB) | ... max allocated: X" (MB of 2^20 bytes) or
  /// Megatron-Bridge's "[Rank N] (after K iterations) memory (GB) | ... mem-max-allocated-gigabytes: X"
  /// (GB of 10^9 bytes, NeMo 2's logs too).
  std::optional<std::int64_t> max_allocated_bytes;
  int max_allocated_rank = -1;
  std::optional<std::int64_t> max_reserved_bytes;
};
/// Reads a step log. Throws trace::TraceReadError when no line gives a step time.
[[nodiscard]] StepLog read_step_log(std::string_view text, std::string_view source_name);
/// The median logged step time (a report with no devices and no timeline). Throws trace::TraceReadError when
/// no line gives a step time.
[[nodiscard]] trace::StepRecord read_step_time_log(std::string_view text, std::string_view source_name);

}  // namespace mpsim::interop
