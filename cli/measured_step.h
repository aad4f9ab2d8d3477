#pragma once
/// Reading a step: what `simulate --trace` / `--json` and `execute` write, and the measured runs of
/// the frameworks (PyTorch profiler traces per rank, Megatron-LM / NeMo step-time logs). For compare
/// and calibrate.
#include <optional>
#include <string>
#include <vector>

#include "interop/trace/framework_trace.h"
#include "sim/trace/compare.h"

namespace mpsim::cli {

/// A trace (Chrome trace with the report under "mpsim", as `simulate --trace` and `execute --trace`
/// write), or a bare report (`simulate --json`), which has no timeline. Throws InputError naming the file.
[[nodiscard]] trace::StepRecord load_step(const std::string& path);

/// The measured side: a framework's run (a PyTorch profiler trace per rank, or a step-time log), or
/// what load_step() reads. `predicted` names the devices a Kineto rank maps to (its GPUs per node,
/// unless `gpus_per_node` is given, and its stages). With `kernels`, PyTorch profiler traces also give
/// their ranks' kernels by class there, with `memory` their ranks' allocator peaks (left empty
/// otherwise). Throws InputError naming the file.
[[nodiscard]] trace::StepRecord load_measured_step(const std::vector<std::string>& measured,
                                                   std::optional<int> gpus_per_node, const trace::Report& predicted,
                                                   interop::TraceKernels* kernels = nullptr,
                                                   std::vector<interop::RankMemory>* memory = nullptr);

/// The predicted GPU of a framework's global rank `rank`: the one named node<rank / g>/gpu<rank % g>, g
/// the prediction's GPUs per node, as a Kineto trace's rank meets its GPU (launchers number ranks node
/// by node; `gpus_per_node` overrides g). Nothing when the prediction names no such GPU.
[[nodiscard]] const trace::DeviceReport* predicted_device_of_rank(const trace::Report& predicted, int rank,
                                                                  std::optional<int> gpus_per_node = {});

/// The step log `measured` names (one Megatron-LM / NeMo log file), or nothing when it names a trace, a
/// report or PyTorch profiler traces. Throws InputError naming the file.
[[nodiscard]] std::optional<interop::StepLog> load_step_log(const std::vector<std::string>& measured);

}  // namespace mpsim::cli
