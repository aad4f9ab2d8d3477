#include "interop/trace/framework_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/core/ascii_case.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::interop {
namespace {

/// The collective an NCCL kernel runs, from its name (ncclDevKernel_AllReduce_Sum_bf16_RING_LL,
/// ncclKernel_ReduceScatter_RING_LL_Sum_half, ncclDevKernel_SendRecv, ...).
std::optional<trace::SpanKind> nccl_kind(std::string_view name) {
  if (name.find("nccl") == std::string_view::npos) return std::nullopt;
  const std::string n = ascii_lower(name);
  if (n.find("allreduce") != std::string::npos) return trace::SpanKind::AllReduce;
  if (n.find("reducescatter") != std::string::npos) return trace::SpanKind::ReduceScatter;
  if (n.find("allgather") != std::string::npos) return trace::SpanKind::AllGather;
  if (n.find("alltoall") != std::string::npos) return trace::SpanKind::AllToAll;
  if (n.find("sendrecv") != std::string::npos || n.find("_send") != std::string::npos) return trace::SpanKind::Send;
  if (n.find("_recv") != std::string::npos) return trace::SpanKind::Recv;
  return std::nullopt;
}

/// What a kernel's name tells of its class: the first row whose needles all occur in the lowercased
/// name decides. Order matters: NCCL first; attention before the GEMM rows (FlashAttention-3's kernels
/// are CUTLASS device kernels, cuDNN's attention names say wgmma); FP8 GEMMs before 16-bit ones. The
/// names quoted are real kernels as PyTorch profiler and Nsight tables show them.
struct KernelNameRule {
  std::string_view needle;
  std::string_view also;  ///< a second needle the name must hold too; empty: none
  KernelKind kind;
};
constexpr KernelNameRule kKernelNameRules[] = {
    // NCCL names every kernel it launches so: ncclDevKernel_AllReduce_Sum_bf16_RING_LL,
    // ncclKernel_ReduceScatter_RING_LL_Sum_half, ncclDevKernel_SendRecv.
    {"nccl", "", UnpricedKernel::Nccl},
    // FlashAttention 2 (Tri Dao's, and PyTorch's vendored copy): flash_fwd_kernel<Flash_fwd_kernel_traits<..>>,
    // flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel, flash_bwd_dot_do_o_kernel, pytorch_flash::flash_fwd_kernel;
    // FlashAttention 3: cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<..>>>;
    // cuDNN's SDPA (Transformer Engine's fused attention, PyTorch's cudnn backend):
    // cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x...
    {"flash", "", KernelClass::Attention},
    // cuDNN SDPA kernels whose name lacks "flash" (cudnn_generated_fort_native_sdpa_..._bprop_...).
    {"sdpa", "", KernelClass::Attention},
    // xFormers' / PyTorch's memory-efficient attention (CUTLASS): fmha_cutlassF_bf16_aligned_64x128_rf_sm80,
    // fmha_cutlassB_...; TensorRT-style fmha kernels.
    {"fmha", "", KernelClass::Attention},
    // Kernels that say what they are (e.g. a framework's own attention kernel).
    {"attention", "", KernelClass::Attention},
    // FP8 GEMMs, where the name gives the operand type: cuBLASLt's
    // sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_cgasize1x2x1_..., CUTLASS's
    // cutlass3x_sm90_tensorop_gemm_e4m3_..., DeepGEMM's fp8_gemm_kernel. nvjet names (cuBLAS 12.8+) give
    // only tiles and layout, so an FP8 nvjet GEMM reads as a 16-bit one (see docs/calibration.md).
    {"gemm", "e4m3", KernelClass::Fp8Gemm},
    {"gemm", "e5m2", KernelClass::Fp8Gemm},
    {"gemm", "fp8", KernelClass::Fp8Gemm},
    {"cutlass", "e4m3", KernelClass::Fp8Gemm},
    {"cutlass", "e5m2", KernelClass::Fp8Gemm},
    // cuBLAS's nvjet GEMMs (CUDA 12.8+ on Hopper and Blackwell): nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT,
    // nvjet_tss_64x8_64x16_2x1_v_bz_splitK_TNT.
    {"nvjet", "", KernelClass::Gemm},
    // cuBLAS's and CUTLASS's GEMMs by name: sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_...,
    // ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn, cutlass_80_tensorop_bf16_s16816gemm_...,
    // gemmSN_TN_kernel, gemv kernels of a batch of one.
    {"gemm", "", KernelClass::Gemm},
    {"gemv", "", KernelClass::Gemm},
    // cuBLAS/cuDNN xmma kernels and Hopper warpgroup-MMA kernels not named gemm (sm80_xmma_..., ..._wgmma_...).
    {"xmma", "", KernelClass::Gemm},
    {"wgmma", "", KernelClass::Gemm},
    // CUTLASS device kernels (cutlass::Kernel2<cutlass_80_tensorop_...>, cutlass::device_kernel<GemmUniversal..>),
    // the grouped GEMMs of the routed experts among them. Attention's CUTLASS kernels matched above.
    {"cutlass", "", KernelClass::Gemm},
    // cuBLAS's split-K reduction, run after a splitK GEMM (splitKreduce_kernel): part of that GEMM.
    {"splitkreduce", "", KernelClass::Gemm},
    // PyTorch's elementwise kernels: at::native::vectorized_elementwise_kernel<..>,
    // unrolled_elementwise_kernel, elementwise_kernel_with_index, index_elementwise_kernel.
    {"elementwise", "", KernelClass::MemoryBound},
    // PyTorch's reductions (at::native::reduce_kernel<..>) and TorchInductor's generated pointwise,
    // reduction and persistent-reduction kernels (triton_poi_fused_mul_silu_0, triton_red_fused_..,
    // triton_per_fused_..).
    {"reduce_kernel", "", KernelClass::MemoryBound},
    {"triton_poi", "", KernelClass::MemoryBound},
    {"triton_red", "", KernelClass::MemoryBound},
    {"triton_per", "", KernelClass::MemoryBound},
    // Norms: PyTorch's vectorized_layer_norm_kernel, Apex's cuApplyLayerNorm / cuApplyRMSNorm, Transformer
    // Engine's rmsnorm_fwd_tuned_kernel and layernorm kernels.
    {"norm", "", KernelClass::MemoryBound},
    // Softmax and loss: cunn_SoftMaxForward, Megatron's scaled_masked_softmax_warp_forward, cross-entropy
    // and nll_loss kernels.
    {"softmax", "", KernelClass::MemoryBound},
    {"cross_entropy", "", KernelClass::MemoryBound},
    {"nll_loss", "", KernelClass::MemoryBound},
    // Optimizers: PyTorch's fused/foreach multi_tensor_apply_kernel, Apex's and Transformer Engine's
    // multi_tensor_adam kernels.
    {"multi_tensor", "", KernelClass::MemoryBound},
    // Casts and transposes (Transformer Engine's cast_transpose kernels, the FP8 quantization), copies
    // (CatArrayBatchedCopy, copy_kernel), fills (FillFunctor) and dropout (fused_dropout_kernel).
    {"cast", "", KernelClass::MemoryBound},
    {"transpose", "", KernelClass::MemoryBound},
    {"copy", "", KernelClass::MemoryBound},
    {"fill", "", KernelClass::MemoryBound},
    {"dropout", "", KernelClass::MemoryBound},
};

/// The kind a record_function range stands for, from its name.
std::optional<trace::SpanKind> range_kind(std::string_view name) {
  const std::string n = ascii_lower(name);
  if (n.rfind("optimizer.step", 0) == 0) return trace::SpanKind::Optimizer;
  if (n.find("backward") != std::string::npos) return trace::SpanKind::Backward;
  if (n.find("forward") != std::string::npos) return trace::SpanKind::Forward;
  return std::nullopt;
}

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

/// Total length of the union of `intervals`.
std::int64_t union_length(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::int64_t total = 0;
  std::int64_t covered_to = std::numeric_limits<std::int64_t>::min();
  for (const Interval& i : intervals) {
    const std::int64_t from = std::max(i.start, covered_to);
    if (i.end > from) total += i.end - from;
    covered_to = std::max(covered_to, i.end);
  }
  return total;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

[[noreturn]] void fail(std::string_view source, const std::string& message) {
  throw trace::TraceReadError(fmt::format("{}: {}", source, message));
}

/// A string member of an event, or "" when it is absent or not a string.
std::string string_member(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}
/// A member of an event, or null.
const nlohmann::json& member(const nlohmann::json& event, const char* key) {
  static const nlohmann::json null_value;
  const auto it = event.find(key);
  return it != event.end() ? *it : null_value;
}

/// A number of microseconds (Kineto writes fractional microseconds) as nanoseconds.
std::int64_t microseconds_ns(const nlohmann::json& value, std::string_view source, std::string_view field) {
  if (!value.is_number()) fail(source, fmt::format("{} is not a number", field));
  const double us = value.get<double>();
  if (!std::isfinite(us) || std::abs(us) > 1e15) fail(source, fmt::format("{} is out of range", field));
  return std::llround(us * 1000.0);
}

/// The largest "Total Allocated" and "Total Reserved" of the CUDA memory events ("[memory]", "Device
/// Type" 1) in [window_start, window_end]; nothing when there are none.
std::optional<RankMemory> allocator_peaks(const nlohmann::json& events, std::int64_t window_start,
                                          std::int64_t window_end, std::string_view source) {
  constexpr int kCudaDeviceType = 1;  // c10::DeviceType::CUDA
  std::optional<RankMemory> peaks;
  for (std::size_t index = 0; index < events.size(); ++index) {
    const nlohmann::json& e = events[index];
    if (!e.is_object() || string_member(e, "name") != "[memory]") continue;
    const nlohmann::json& args = member(e, "args");
    const std::string where = fmt::format("traceEvents[{}]", index);
    if (!args.is_object()) fail(source, where + ": a [memory] event without \"args\"");
    const nlohmann::json& device_type = member(args, "Device Type");
    if (!device_type.is_number_integer()) fail(source, where + ".args[\"Device Type\"] is not an integer");
    if (device_type.get<std::int64_t>() != kCudaDeviceType) continue;
    const std::int64_t at = microseconds_ns(member(e, "ts"), source, where + ".ts");
    if (at < window_start || at > window_end) continue;
    const auto bytes = [&](const char* key) {
      const nlohmann::json& v = member(args, key);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        fail(source, fmt::format("{}.args[\"{}\"] is not a byte count", where, key));
      }
      return v.get<std::int64_t>();
    };
    if (!peaks) peaks.emplace();
    peaks->max_allocated_bytes = std::max(peaks->max_allocated_bytes, bytes("Total Allocated"));
    peaks->max_reserved_bytes = std::max(peaks->max_reserved_bytes, bytes("Total Reserved"));
  }
  return peaks;
}

}  // namespace

std::string_view to_string(UnpricedKernel k) noexcept { return k == UnpricedKernel::Nccl ? "nccl" : "other"; }

KernelTime& RankKernels::of(const KernelKind& kind) noexcept {
  if (const auto* c = std::get_if<KernelClass>(&kind)) return by_class[static_cast<std::size_t>(*c)];
  return std::get<UnpricedKernel>(kind) == UnpricedKernel::Nccl ? nccl : other;
}

KernelKind kernel_kind(std::string_view kernel_name) {
  const std::string n = ascii_lower(kernel_name);
  for (const KernelNameRule& rule : kKernelNameRules) {
    if (n.find(rule.needle) != std::string::npos && (rule.also.empty() || n.find(rule.also) != std::string::npos)) {
      return rule.kind;
    }
  }
  return UnpricedKernel::Other;
}

bool is_kineto_trace(std::string_view text) {
  if (text.find("\"traceEvents\"") == std::string_view::npos || text.find("\"mpsim\"") != std::string_view::npos) {
    return false;
  }
  return text.find("\"schemaVersion\"") != std::string_view::npos || text.find("ProfilerStep#") != std::string_view::npos;
}

trace::StepRecord read_kineto_step(const std::vector<KinetoFile>& ranks, int gpus_per_node, int ranks_per_stage,
                                   TraceKernels* kernel_classes, std::vector<RankMemory>* memory) {
  if (ranks.empty()) throw trace::TraceReadError("no trace files");
  if (gpus_per_node < 1) gpus_per_node = 1;
  trace::StepRecord out;
  trace::Timeline timeline;
  std::vector<double> step_durations_s;
  struct RankResult {
    int rank = 0;
    double busy_per_step_s = 0;
    double step_s = 0;
  };
  std::vector<RankResult> results;
  for (std::size_t position = 0; position < ranks.size(); ++position) {
    const KinetoFile& file = ranks[position];
    const nlohmann::json doc = nlohmann::json::parse(file.text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) fail(file.name, "not a JSON object");
    const auto events = doc.find("traceEvents");
    if (events == doc.end() || !events->is_array()) fail(file.name, "no \"traceEvents\" array");
    int rank = static_cast<int>(position);
    if (const auto info = doc.find("distributedInfo"); info != doc.end() && info->is_object()) {
      if (const auto r = info->find("rank"); r != info->end()) {
        if (!r->is_number_integer() || r->get<std::int64_t>() < 0 || r->get<std::int64_t>() > 1'000'000) {
          fail(file.name, "distributedInfo.rank is not a rank");
        }
        rank = static_cast<int>(r->get<std::int64_t>());
      }
    }
    // The steps first: only what runs inside them counts.
    std::vector<Interval> steps;
    for (const auto& e : *events) {
      if (!e.is_object() || string_member(e, "ph") != "X") continue;
      if (string_member(e, "name").rfind("ProfilerStep#", 0) != 0) continue;
      const std::int64_t start = microseconds_ns(member(e, "ts"), file.name, "a ProfilerStep range's \"ts\"");
      const std::int64_t dur = microseconds_ns(member(e, "dur"), file.name, "a ProfilerStep range's \"dur\"");
      if (dur <= 0) fail(file.name, "a ProfilerStep range has no duration");
      steps.push_back({start, start + dur});
    }
    if (steps.empty()) {
      fail(file.name, "no ProfilerStep#N ranges: profile with torch.profiler and call profiler.step() every iteration");
    }
    std::sort(steps.begin(), steps.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
    const std::int64_t window_start = steps.front().start;
    const std::int64_t window_end = steps.back().end;
    std::vector<double> rank_steps;
    for (const Interval& s : steps) rank_steps.push_back(static_cast<double>(s.end - s.start) * 1e-9);
    step_durations_s.insert(step_durations_s.end(), rank_steps.begin(), rank_steps.end());

    const std::string device = fmt::format("node{}/gpu{}", rank / gpus_per_node, rank % gpus_per_node);
    const auto lane = static_cast<std::uint32_t>(timeline.lanes.size());
    timeline.lanes.push_back({fmt::format("node{}", rank / gpus_per_node), device});
    std::vector<Interval> kernels;
    RankKernels classes;
    classes.rank = rank;
    classes.stage = ranks_per_stage > 0 ? rank / ranks_per_stage : -1;
    classes.steps = static_cast<int>(steps.size());
    for (std::size_t index = 0; index < events->size(); ++index) {
      const nlohmann::json& e = (*events)[index];
      if (!e.is_object() || string_member(e, "ph") != "X") continue;
      const std::string cat = string_member(e, "cat");
      if (cat != "kernel" && cat != "gpu_user_annotation") continue;
      const std::string text = string_member(e, "name");
      // A kernel's name is its class: one without is a broken trace, not a kernel to drop.
      const std::string where = fmt::format("traceEvents[{}]", index);
      if (text.empty()) {
        if (cat == "kernel") fail(file.name, where + ": a kernel event without a \"name\" string");
        continue;
      }
      const std::int64_t start = microseconds_ns(member(e, "ts"), file.name, where + ".ts");
      const std::int64_t dur = microseconds_ns(member(e, "dur"), file.name, where + ".dur");
      if (dur < 0) fail(file.name, where + ": \"dur\" is negative");
      const std::int64_t end = start + dur;
      if (end <= window_start || start >= window_end) continue;
      std::optional<trace::SpanKind> kind;
      if (cat == "kernel") {
        const Interval clipped{std::max(start, window_start), std::min(end, window_end)};
        kernels.push_back(clipped);
        kind = nccl_kind(text);
        if (kernel_classes != nullptr) {
          // Only what runs inside a step counts (a kernel between two steps belongs to neither).
          std::int64_t inside = 0;
          for (const Interval& s : steps) inside += std::max<std::int64_t>(0, std::min(end, s.end) - std::max(start, s.start));
          const KernelKind kind_of_kernel = kernel_kind(text);
          KernelTime& time = classes.of(kind_of_kernel);
          ++time.kernels;
          time.seconds += static_cast<double>(inside) * 1e-9;
          if (kind_of_kernel == KernelKind{UnpricedKernel::Other}) {
            KernelTime& named = kernel_classes->other_names[text];
            ++named.kernels;
            named.seconds += static_cast<double>(inside) * 1e-9;
          }
        }
      } else {
        kind = range_kind(text);
      }
      if (kind) {
        trace::Span span;
        span.lane = lane;
        span.kind = *kind;
        span.start_ns = start - window_start;
        span.end_ns = end - window_start;
        timeline.spans.push_back(span);
      }
    }
    if (memory != nullptr) {
      if (auto peaks = allocator_peaks(*events, window_start, window_end, file.name)) {
        peaks->rank = rank;
        memory->push_back(*peaks);
      }
    }
    const double per_step = static_cast<double>(union_length(kernels)) * 1e-9 / static_cast<double>(steps.size());
    results.push_back({rank, per_step, median(rank_steps)});
    if (kernel_classes != nullptr) kernel_classes->ranks.push_back(classes);
  }
  std::sort(results.begin(), results.end(), [](const RankResult& a, const RankResult& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < results.size(); ++i) {
    if (results[i].rank == results[i - 1].rank) {
      throw trace::TraceReadError(fmt::format("two trace files are rank {}", results[i].rank));
    }
  }
  if (kernel_classes != nullptr) {
    std::sort(kernel_classes->ranks.begin(), kernel_classes->ranks.end(),
              [](const RankKernels& a, const RankKernels& b) { return a.rank < b.rank; });
  }
  if (memory != nullptr) {
    std::sort(memory->begin(), memory->end(), [](const RankMemory& a, const RankMemory& b) { return a.rank < b.rank; });
  }
  trace::Report& report = out.report;
  report.step_time_s = median(step_durations_s);
  double idle_total = 0;
  for (const RankResult& r : results) {
    trace::DeviceReport d;
    d.id = fmt::format("node{}/gpu{}", r.rank / gpus_per_node, r.rank % gpus_per_node);
    d.stage = ranks_per_stage > 0 ? r.rank / ranks_per_stage : -1;
    d.busy_s = std::min(r.busy_per_step_s, report.step_time_s);
    d.idle_s = report.step_time_s - d.busy_s;
    d.bubble_fraction = report.step_time_s > 0 ? d.idle_s / report.step_time_s : 0;
    idle_total += d.idle_s;
    report.devices.push_back(d);
  }
  report.bubble_fraction =
      report.step_time_s > 0 ? idle_total / (report.step_time_s * static_cast<double>(results.size())) : 0;
  out.timeline = std::move(timeline);
  return out;
}

bool is_step_time_log(std::string_view text) {
  return text.find("elapsed time per iteration (ms)") != std::string_view::npos ||
         text.find("train_step_timing in s") != std::string_view::npos;
}

StepLog read_step_log(std::string_view text, std::string_view source_name) {
  // Megatron-LM's training_log: "... | elapsed time per iteration (ms): 1234.5 | throughput per GPU
  // (TFLOP/s/GPU): 401.2 | ..." (the throughput when --log-throughput is on); NeMo (Lightning's
  // progress bar and logger): "train_step_timing in s: 1.23" or "train_step_timing in s=1.23".
  // Megatron's report_memory, once per rank that logs: "[Rank 3] (after 10 iterations) memory (MB) |
  // allocated: X | max allocated: Y | reserved: Z | max reserved: W", MB being 2^20 bytes; Megatron-Bridge's
  // "[Rank 3] (after 2 iterations) memory (GB) | mem-allocated-gigabytes: X | ... |
  // mem-max-allocated-gigabytes: Y | ... | mem-max-reserved-gigabytes: W | ...", GB being 10^9 bytes
  // (training/utils/train_utils.py report_memory; which keys it prints is configurable).
  static const std::regex megatron(R"(elapsed time per iteration \(ms\):\s*([0-9]+(?:\.[0-9]+)?))");
  static const std::regex nemo(R"(train_step_timing in s\s*[:=]\s*([0-9]+(?:\.[0-9]+)?))");
  static const std::regex throughput(R"(throughput per GPU \(TFLOP/s/GPU\):\s*([0-9]+(?:\.[0-9]+)?))");
  static const std::regex memory(
      R"(\[Rank ([0-9]+)\] \(after [0-9]+ iterations\) memory \(MB\) \| allocated: [0-9.]+ \| max allocated: )"
      R"(([0-9]+(?:\.[0-9]+)?)(?: \| reserved: [0-9.]+ \| max reserved: ([0-9]+(?:\.[0-9]+)?))?)");
  static const std::regex bridge_memory(R"(\[Rank ([0-9]+)\] \(after [0-9]+ iterations\) memory \(GB\)([^\n]*))");
  static const std::regex bridge_max_allocated(R"(mem-max-allocated-gigabytes:\s*([0-9]+(?:\.[0-9]+)?))");
  static const std::regex bridge_max_reserved(R"(mem-max-reserved-gigabytes:\s*([0-9]+(?:\.[0-9]+)?))");
  const std::string whole(text);
  const auto number = [&](const std::string& digits, std::string_view what) {
    const double v = std::strtod(digits.c_str(), nullptr);  // digits only: no error but overflow
    if (!std::isfinite(v) || v > 1e12) fail(source_name, fmt::format("'{}' is not {}", digits.substr(0, 40), what));
    return v;
  };
  const auto each = [&](const std::regex& pattern, const auto& take) {
    for (std::sregex_iterator it(whole.begin(), whole.end(), pattern), end; it != end; ++it) take(*it);
  };
  std::vector<double> steps;
  each(megatron, [&](const std::smatch& m) { steps.push_back(number(m[1], "a step time") * 1e-3); });
  each(nemo, [&](const std::smatch& m) { steps.push_back(number(m[1], "a step time")); });
  if (steps.empty()) {
    fail(source_name, "no step time: expected Megatron-LM's \"elapsed time per iteration (ms): X\" or NeMo's "
                      "\"train_step_timing in s: X\"");
  }
  StepLog log;
  log.step_time_s = median(steps);
  log.steps = static_cast<int>(steps.size());
  std::vector<double> tflops;
  each(throughput, [&](const std::smatch& m) { tflops.push_back(number(m[1], "a throughput")); });
  if (!tflops.empty()) log.tflops_per_gpu = median(tflops);
  // Keeps the largest max allocated over the lines, with its rank and max reserved.
  const auto take_memory = [&](const std::string& rank, const std::string& max_allocated, const std::string* max_reserved,
                               double unit_bytes) {
    const auto allocated = static_cast<std::int64_t>(number(max_allocated, "a memory size") * unit_bytes);
    if (log.max_allocated_bytes && *log.max_allocated_bytes >= allocated) return;
    log.max_allocated_bytes = allocated;
    log.max_allocated_rank = static_cast<int>(number(rank, "a rank"));
    log.max_reserved_bytes.reset();
    if (max_reserved) log.max_reserved_bytes = static_cast<std::int64_t>(number(*max_reserved, "a memory size") * unit_bytes);
  };
  constexpr double kMegabyte = 1024.0 * 1024.0;  // Megatron-LM's "MB"
  constexpr double kGigabyte = 1e9;              // Megatron-Bridge's "GB"
  each(memory, [&](const std::smatch& m) {
    const std::string reserved = m[3].str();
    take_memory(m[1].str(), m[2].str(), m[3].matched ? &reserved : nullptr, kMegabyte);
  });
  each(bridge_memory, [&](const std::smatch& m) {
    const std::string fields = m[2].str();
    std::smatch allocated, reserved;
    if (!std::regex_search(fields, allocated, bridge_max_allocated)) return;  // the line's keys leave the peak out
    const bool has_reserved = std::regex_search(fields, reserved, bridge_max_reserved);
    const std::string reserved_digits = has_reserved ? reserved[1].str() : std::string();
    take_memory(m[1].str(), allocated[1].str(), has_reserved ? &reserved_digits : nullptr, kGigabyte);
  });
  return log;
}

trace::StepRecord read_step_time_log(std::string_view text, std::string_view source_name) {
  trace::StepRecord out;
  out.report.step_time_s = read_step_log(text, source_name).step_time_s;
  return out;
}

}  // namespace mpsim::interop
