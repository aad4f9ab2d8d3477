#pragma once
/// The device a rank computes and communicates on. Layers, the interpreter and the profiler are
/// written once against this interface; the CPU backend (Eigen + MPI) and the CUDA backend (cuBLAS,
/// small kernels, NCCL bootstrapped over MPI) implement it, so both run the same code paths.
///
/// Conventions:
/// - fp32, row-major matrices in device memory (host memory for the CPU backend). Layer code never
///   dereferences a device pointer; it moves data with upload()/download().
/// - Calls are issued in order on one device stream and may complete asynchronously; synchronize()
///   waits for all of them. Results of download() are valid on return.
/// - Errors (a failed CUDA/NCCL/MPI call, a peer that does not answer within the timeout) throw
///   BackendError carrying file:line and the rank; the caller aborts the job with that one line.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpsim::executor {

class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A view of a row-major matrix in device memory: element (r, c) is data[r * ld + c].
struct MatrixView {
  float* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;  ///< leading dimension (>= cols); lets layers address one head's columns

  /// Columns [first, first + count) of every row.
  [[nodiscard]] MatrixView columns(std::int64_t first, std::int64_t count) const noexcept {
    return {data + first, rows, count, ld};
  }
  /// Rows [first, first + count).
  [[nodiscard]] MatrixView row_range(std::int64_t first, std::int64_t count) const noexcept {
    return {data + first * ld, count, cols, ld};
  }
};

enum class Transpose : std::uint8_t { No, Yes };

/// A communicator over a subset of the world's ranks (a tensor- or data-parallel group, or the
/// world). Opaque to callers; owned by the backend that made it.
class Group {
 public:
  virtual ~Group() = default;
  [[nodiscard]] virtual int size() const noexcept = 0;
  [[nodiscard]] virtual int rank() const noexcept = 0;  ///< this process's index in the group
};

/// An outstanding point-to-point send; wait() returns when the buffer may be reused.
class SendHandle {
 public:
  virtual ~SendHandle() = default;
  virtual void wait() = 0;
  /// Whether the buffer may be reused now, without waiting (false while unknown).
  [[nodiscard]] virtual bool done() = 0;
};

/// How a backend is made. MPI is initialised by the caller (MPI_Init_thread) before make_backend().
struct BackendOptions {
  double peer_timeout_s = 60;  ///< a recv or collective waiting longer throws BackendError naming the peer
  std::uint64_t seed = 0;      ///< for anything the backend randomises (nothing numeric: data are seeded by the caller)
  /// The world ranks this rank sends to or receives from with send()/recv() (its pipeline neighbours,
  /// point_to_point_peers()); empty: every other rank. A backend may open channels to these only.
  std::vector<int> peers;
};

struct AdamHyper {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  int step = 1;  ///< 1-based, for bias correction
};

/// Point-to-point order: from one rank to another, the messages of one channel are received in the
/// order they are sent. Channels are the tag's low bit, which in the interpreter's tags
/// (schedule::message_number) tells activations from gradients: in every schedule the activations
/// a rank sends its neighbour arrive in the order the neighbour consumes them, and so do the
/// gradients, but the two interleave differently on each side in the V schedules,
/// so one channel for both would not do (tests/unit/executor/message_order_test.cpp checks every
/// generator).
inline constexpr int kOrderedChannels = 2;
[[nodiscard]] constexpr int ordered_channel(int tag) noexcept { return tag & 1; }

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // --- identity -------------------------------------------------------------------------------
  [[nodiscard]] virtual std::string name() const = 0;  ///< "cpu" or "cuda"
  [[nodiscard]] virtual int world_rank() const noexcept = 0;
  [[nodiscard]] virtual int world_size() const noexcept = 0;

  // --- memory ---------------------------------------------------------------------------------
  /// `count` floats of device memory, zero-filled; released by release().
  [[nodiscard]] virtual float* allocate(std::size_t count) = 0;
  virtual void release(float* data) noexcept = 0;
  virtual void upload(std::span<const float> host, float* device) = 0;
  virtual void download(const float* device, std::span<float> host) = 0;
  virtual void copy(MatrixView from, MatrixView to) = 0;  ///< same shape
  virtual void fill(MatrixView m, float value) = 0;

  // --- math (all fp32) ------------------------------------------------------------------------
  /// c = alpha * op(a) * op(b) + beta * c.
  virtual void gemm(Transpose ta, Transpose tb, float alpha, MatrixView a, MatrixView b, float beta,
                    MatrixView c) = 0;
  /// y += alpha * x.
  virtual void axpy(float alpha, MatrixView x, MatrixView y) = 0;
  /// y[r, c] += bias[c] for every row.
  virtual void add_row_vector(const float* bias, MatrixView y) = 0;
  /// grad[c] = beta * grad[c] + sum over rows of dy[r, c].
  virtual void sum_rows(MatrixView dy, float beta, float* grad) = 0;
  /// y = gelu(x) (tanh approximation); dx = dy * gelu'(x).
  virtual void gelu_forward(MatrixView x, MatrixView y) = 0;
  virtual void gelu_backward(MatrixView x, MatrixView dy, MatrixView dx) = 0;
  /// Per row: y = (x - mean) * rstd * gamma + beta; mean and rstd (rows floats each) are saved.
  virtual void layer_norm_forward(MatrixView x, const float* gamma, const float* beta, float epsilon,
                                  MatrixView y, float* mean, float* rstd) = 0;
  /// dx = d(layer norm)/dx applied to dy; dgamma and dbeta are accumulated (+=).
  virtual void layer_norm_backward(MatrixView dy, MatrixView x, const float* gamma, const float* mean,
                                   const float* rstd, MatrixView dx, float* dgamma, float* dbeta) = 0;
  /// Row-wise softmax of scale * x with a causal mask when `causal`: row r keeps columns
  /// <= r + max(0, cols - rows) (a square block keeps columns <= r; with more keys than queries the
  /// queries are the last ones, as FlashAttention aligns the mask); y may alias x.
  virtual void softmax_forward(MatrixView x, float scale, bool causal, MatrixView y) = 0;
  /// dx = scale * y * (dy - rowsum(dy * y)); dx may alias dy.
  virtual void softmax_backward(MatrixView y, MatrixView dy, float scale, MatrixView dx) = 0;
  // Attention over key blocks one at a time (context parallelism's ring, Ulysses): each block's
  // softmax is normalised on its own and the partial outputs are merged by their log-sum-exps; the
  // backward rebuilds a block's probabilities from the whole row's log-sum-exp.
  /// softmax_forward, also storing lse[r] = log of the row's sum of exp(scale * x) over the kept columns.
  virtual void softmax_forward_lse(MatrixView x, float scale, bool causal, MatrixView y, float* lse) = 0;
  /// y = exp(scale * x - lse[r]) on the kept columns (the causal rule of softmax_forward), 0 elsewhere;
  /// y may alias x.
  virtual void softmax_from_lse(MatrixView x, float scale, bool causal, const float* lse, MatrixView y) = 0;
  /// Merges a block's normalised output `part` (log-sum-exp part_lse) into `out` (log-sum-exp lse),
  /// row by row: out = w * out + (1 - w) * part with w = exp(lse - new lse), lse = log(exp(lse) +
  /// exp(part_lse)). An lse of -infinity is an empty row (out is then replaced by part).
  virtual void merge_attention(MatrixView out, float* lse, MatrixView part, const float* part_lse) = 0;
  /// out[r] = sum over columns of a[r, c] * b[r, c].
  virtual void row_dot(MatrixView a, MatrixView b, float* out) = 0;
  /// softmax_backward with the row sums given: dx = scale * y * (dy - row_sum[r]); dx may alias dy.
  virtual void softmax_backward_rows(MatrixView y, MatrixView dy, float scale, const float* row_sum, MatrixView dx) = 0;
  /// out[r] = table[tokens[r]] (+=, so positions can be added to the same output).
  virtual void embedding_forward(MatrixView table, std::span<const std::int32_t> tokens, MatrixView out) = 0;
  /// dtable[tokens[r]] += dout[r].
  virtual void embedding_backward(MatrixView dout, std::span<const std::int32_t> tokens, MatrixView dtable) = 0;
  /// Mean cross-entropy of softmax(logits) against labels, times `scale`; dlogits receives its
  /// gradient (times `scale`); it may be `logits` itself (the gradient written in place, as
  /// Megatron-Core's cross-entropy does). Returns the unscaled mean loss on the host.
  virtual double cross_entropy(MatrixView logits, std::span<const std::int32_t> labels, float scale,
                               MatrixView dlogits) = 0;
  /// In place: param -= lr * grad (sgd) or the Adam update with moments m, v (count floats each).
  virtual void sgd_step(float* param, const float* grad, std::size_t count, float learning_rate) = 0;
  virtual void adam_step(float* param, const float* grad, float* m, float* v, std::size_t count,
                         const AdamHyper& hyper) = 0;

  // --- communication --------------------------------------------------------------------------
  /// Collective over the world: every rank calls it with the same list, in the same order.
  [[nodiscard]] virtual std::unique_ptr<Group> make_group(std::span<const int> world_ranks) = 0;
  /// Starts sending `count` floats to world rank `peer`; messages between a pair are matched by
  /// `tag` (the interpreter's schedule::message_number). A backend may rely on the order rule of
  /// ordered_channel() and deliver in order instead (CUDA: NCCL delivers a communicator's messages in
  /// issue order).
  [[nodiscard]] virtual std::unique_ptr<SendHandle> send(const float* data, std::size_t count, int peer,
                                                          int tag) = 0;
  /// The largest tag send() and recv() accept (MPI: the MPI_TAG_UB attribute, at least 32767).
  [[nodiscard]] virtual std::int64_t max_tag() const = 0;
  /// Blocks until the matching message from `peer` has arrived, or throws BackendError naming the
  /// peer after the backend's timeout.
  virtual void recv(float* data, std::size_t count, int peer, int tag) = 0;
  /// Messages in host memory, with any rank (the executor gathering measured spans and parameters on
  /// rank 0): over MPI, never through the channels of send()/recv(), so those join only the
  /// BackendOptions::peers. host_send returns when `data` may be reused; both wait at most the
  /// backend's timeout and then throw BackendError naming the peer.
  virtual void host_send(std::span<const float> data, int peer, int tag) = 0;
  virtual void host_recv(std::span<float> data, int peer, int tag) = 0;
  /// Sum over the group, in place. reduce_scatter leaves this rank's 1/size slice (count/size floats,
  /// count divisible by size) at data + rank * count / size; all_gather fills data from every rank's
  /// slice at the same place.
  virtual void all_reduce_sum(Group& group, float* data, std::size_t count) = 0;
  virtual void reduce_scatter_sum(Group& group, float* data, std::size_t count) = 0;
  virtual void all_gather(Group& group, float* data, std::size_t count) = 0;
  /// Personalised exchange over the group (expert dispatch and combine): this rank sends
  /// send_counts[j] floats to group rank j and receives recv_counts[j] floats from it. Both buffers
  /// hold the blocks in group-rank order, back to back (block j starts after the counts before it).
  /// Counts may differ per peer and be zero; recv_counts[j] must equal rank j's send_counts[me]
  /// (exchange them first with all_to_all_counts). `send` and `recv` must not overlap.
  virtual void all_to_all(Group& group, const float* send, std::span<const std::size_t> send_counts, float* recv,
                          std::span<const std::size_t> recv_counts) = 0;
  /// The counts' own exchange, on the host: `send` holds group.size() blocks of k values, block j
  /// for group rank j; `recv` (the same size) receives block j from group rank j (its block for this
  /// rank). Exact integers, whatever the backend moves them with.
  virtual void all_to_all_counts(Group& group, std::span<const std::int64_t> send, std::span<std::int64_t> recv) = 0;
  virtual void barrier() = 0;  ///< world

  // --- time -----------------------------------------------------------------------------------
  /// Records a point on the device stream; its time is known after synchronize().
  [[nodiscard]] virtual int record_mark() = 0;
  virtual void synchronize() = 0;
  /// Nanoseconds of every mark recorded since the last reset_marks(), on this rank's steady clock
  /// (the interpreter aligns ranks by starting each step from a barrier).
  [[nodiscard]] virtual std::vector<std::int64_t> mark_times_ns() = 0;
  virtual void reset_marks() = 0;
};

}  // namespace mpsim::executor
