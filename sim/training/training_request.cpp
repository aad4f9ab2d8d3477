#include "sim/training/training_request.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "sim/core/input_error.h"

namespace mpsim::training {
namespace {

[[noreturn]] void bad_flag(const std::string& flag, const std::string& value, const std::string& message) {
  throw InputError({flag + " " + value, 0, 0}, "", message);
}

}  // namespace

double parse_token_count(const std::string& text) {
  std::string digits = text;
  double scale = 1;
  if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back())) != 0) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
      default:
        bad_flag("--tokens", text, "expected a token count such as 15T, 300B or 2.5e12 (suffixes K, M, B, T)");
    }
    digits.pop_back();
  }
  double value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
    bad_flag("--tokens", text, "expected a token count such as 15T, 300B or 2.5e12 (suffixes K, M, B, T)");
  }
  if (!(value > 0) || !std::isfinite(value * scale)) bad_flag("--tokens", text, "the token count must be positive");
  return value * scale;
}

std::optional<TrainingEstimate> estimate_request(const TrainingRequest& request, const TrainingStep& step) {
  if (request.tokens.empty()) {
    if (request.gpu_hour_price) throw InputError({"--gpu-hour-price", 0, 0}, "", "a price needs --tokens to cost");
    return std::nullopt;
  }
  TrainingAssumptions assumptions;
  assumptions.gpu_hour_price = request.gpu_hour_price;
  if (request.gpu_hours_per_interruption) assumptions.gpu_hours_per_interruption = *request.gpu_hours_per_interruption;
  if (!request.restart.empty()) {
    const auto t = parse_time(request.restart);
    if (!t.ok()) bad_flag("--restart-time", request.restart, t.error);
    assumptions.restart = t.value;
  }
  if (!request.checkpoint_bandwidth.empty()) {
    const auto b = parse_bandwidth(request.checkpoint_bandwidth);
    if (!b.ok()) bad_flag("--checkpoint-bandwidth", request.checkpoint_bandwidth, b.error);
    if (b.value.in_bytes_per_sec() <= 0)
      bad_flag("--checkpoint-bandwidth", request.checkpoint_bandwidth, "must be positive");
    assumptions.checkpoint_bandwidth_per_gpu = b.value;
  }
  if (step.seq_len <= 0) {
    bad_flag("--tokens", request.tokens,
             fmt::format("model '{}' has no sequence length (seq_len), so its tokens per step are unknown",
                         step.model_name));
  }
  TrainingJob job;
  job.tokens = parse_token_count(request.tokens);
  job.tokens_per_step = step.global_batch * step.seq_len;
  job.step_time = step.step_time;
  job.gpus = step.gpus;
  job.busy_fraction = step.busy_fraction;
  job.gpu_tdp = step.gpu_tdp;
  job.checkpoint_bytes = step.checkpoint_bytes;
  return estimate_training(job, assumptions);
}

}  // namespace mpsim::training
