#pragma once
/// Pure rules of the CUDA backend's point-to-point messages and start-up, kept free of CUDA headers so
/// they are tested on any machine (tests/unit/executor/message_rules_test.cpp).
///
/// A message is one NCCL group on the pair's communicator: an envelope (tag, count: two int64) and,
/// when count > 0, the floats. The receiver posts both at once, with the count it expects, so a
/// receive costs no host round trip; the envelopes land in device memory and are compared with what
/// the receives expected the next time the host waits for the stream anyway (envelope_mismatch()).
/// This needs a channel's messages to be received in the order they were sent: the backend opens one
/// communicator per direction and ordered channel (backend.h's ordered_channel: activations and
/// gradients), whose order every schedule keeps (tests/unit/executor/message_order_test.cpp).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

namespace mpsim::executor::cuda {

/// Words (int64) of a message's envelope: tag, then count.
inline constexpr std::size_t kEnvelopeWords = 2;

/// What a receive asked for.
struct ExpectedMessage {
  int peer = 0;
  int tag = 0;
  std::size_t count = 0;
};

/// Empty when the envelope that arrived is the one `expected` asked for, else a one-line error.
[[nodiscard]] inline std::string envelope_mismatch(const ExpectedMessage& expected, std::int64_t arrived_tag,
                                                   std::int64_t arrived_count) {
  if (arrived_tag == expected.tag && arrived_count == static_cast<std::int64_t>(expected.count)) return {};
  return fmt::format(
      "message from rank {} out of order: the recv for tag {} ({} floats) got tag {} ({} floats); the CUDA backend "
      "delivers a channel's messages in the order they were sent, so both sides must issue them in the same order",
      expected.peer, expected.tag, expected.count, arrived_tag, arrived_count);
}

/// The first mismatch among receives and the envelopes that arrived for them (kEnvelopeWords each,
/// in the same order), or empty.
[[nodiscard]] inline std::string first_envelope_mismatch(std::span<const ExpectedMessage> expected,
                                                         std::span<const std::int64_t> envelopes) {
  const std::size_t checked = std::min(expected.size(), envelopes.size() / kEnvelopeWords);
  for (std::size_t i = 0; i < checked; ++i) {
    std::string error =
        envelope_mismatch(expected[i], envelopes[i * kEnvelopeWords], envelopes[i * kEnvelopeWords + 1]);
    if (!error.empty()) return error;
  }
  return {};
}

/// Where the mark recorded after a send goes. A send runs on its peer's send stream, so a mark on
/// the compute stream right after it would give the send a span of zero; when exactly one send was
/// issued since the previous mark, the mark is recorded on that send's stream (after the send and
/// after the compute stream's work so far), so the send's span covers its transfer. With several
/// sends between two marks the mark stays on the compute stream: joining several send streams
/// would make one peer's sends wait for another's. So does a receive between the marks: then the
/// span is not a send's but an op's that exchanges inside it (the context-parallel ring sends and
/// receives within a forward pass), whose end is its compute's, not its send's.
class SendsSinceMark {
 public:
  void on_send(int peer) noexcept {
    ++sends_;
    peer_ = peer;
  }
  void on_receive() noexcept { received_ = true; }
  /// The peer whose send stream takes the next mark, if any; starts counting again.
  [[nodiscard]] std::optional<int> take() noexcept {
    const std::optional<int> peer = sends_ == 1 && !received_ ? std::optional<int>(peer_) : std::nullopt;
    sends_ = 0;
    received_ = false;
    return peer;
  }

 private:
  int sends_ = 0;
  int peer_ = -1;
  bool received_ = false;
};

/// A process-wide setting the backend needs before CUDA or NCCL first read it.
struct EnvironmentDefault {
  const char* name;
  const char* value;
};

/// - CUDA_MODULE_LOADING=EAGER: CUDA loads kernels lazily by default, and loading one may synchronise
///   the whole context: a kernel first launched while an NCCL kernel waits for a peer would wait for
///   that peer (CUDA programming guide, "Lazy Loading"). Read when CUDA initialises, so it only takes
///   effect when this process has not used CUDA before the backend is made.
/// - NCCL_RUNTIME_CONNECT=0: since NCCL 2.22 a communicator connects an algorithm's channels at its
///   first collective that uses it, which would put a handshake with every peer in the middle of a
///   step; 0 connects them when the communicator is made. nccl.h 2.28 has no ncclConfig_t field for
///   it, so it is set in the environment before the first NCCL call.
/// Values already set are kept: a user can still choose otherwise.
inline constexpr std::array<EnvironmentDefault, 2> kStartupEnvironment{{
    {"CUDA_MODULE_LOADING", "EAGER"},
    {"NCCL_RUNTIME_CONNECT", "0"},
}};

/// Sets each variable that is not set yet (setenv without overwriting).
inline void apply_environment_defaults(std::span<const EnvironmentDefault> defaults) {
  for (const EnvironmentDefault& d : defaults) ::setenv(d.name, d.value, /*overwrite=*/0);
}

}  // namespace mpsim::executor::cuda
