#include "executor/backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/teardown.h"
#include "executor/backend/cuda/device_rules.h"
#include "executor/backend/cuda/kernels.h"
#include "executor/backend/cuda/message_rules.h"

namespace mpsim::executor {
namespace {

using cuda::ColumnMajorGemm;

#define MPSIM_CUDA_FAIL(what) ::mpsim::executor::cuda::throw_backend_error(__FILE__, __LINE__, (what))

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_empty(MatrixView m) noexcept { return m.rows == 0 || m.cols == 0; }

bool same_shape(MatrixView a, MatrixView b) noexcept { return a.rows == b.rows && a.cols == b.cols; }

std::string shape(MatrixView m) { return fmt::format("{}x{}", m.rows, m.cols); }

void require_same_shape(const char* op, MatrixView a, MatrixView b) {
  if (!same_shape(a, b)) MPSIM_CUDA_FAIL(fmt::format("{}: shapes disagree ({} and {})", op, shape(a), shape(b)));
}

int to_int(std::int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    MPSIM_CUDA_FAIL(fmt::format("gemm: {} = {} is out of cuBLAS's int range", what, value));
  return static_cast<int>(value);
}

/// This rank's place among the ranks MPI runs on its node (collective over the world).
cuda::NodePlacement node_placement() {
  int world_rank = 0;
  MPSIM_MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPI_Comm node = MPI_COMM_NULL;
  MPSIM_MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node));
  cuda::NodePlacement placement;
  MPSIM_MPI_TRY(MPI_Comm_rank(node, &placement.local_rank));
  MPSIM_MPI_TRY(MPI_Comm_size(node, &placement.local_ranks));
  MPSIM_MPI_TRY(MPI_Comm_free(&node));
  return placement;
}

/// Every communicator is non-blocking: its creation, and the enqueue of its operations, return at
/// once (possibly with ncclInProgress) and the backend polls ncclCommGetAsyncError against the peer
/// timeout, so no NCCL call can hold the host past it.
ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

class CudaBackend;

/// A group's communicator; it must not outlive the backend that made it (its destructor asks the
/// backend to close it).
class CudaGroup final : public Group {
 public:
  /// comm is null on ranks outside the group (rank -1), as in the CPU backend.
  CudaGroup(CudaBackend& backend, ncclComm_t comm, int size, int rank)
      : backend_(backend), comm_(comm), size_(size), rank_(rank) {}
  /// Closing needs every member; while an error unwinds the stack, a member may be gone (teardown.h).
  ~CudaGroup() override;
  CudaGroup(const CudaGroup&) = delete;
  CudaGroup& operator=(const CudaGroup&) = delete;
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  /// Null outside the group, and after a timeout aborted the communicator.
  [[nodiscard]] ncclComm_t& comm() noexcept { return comm_; }

 private:
  CudaBackend& backend_;
  ncclComm_t comm_;
  int size_;
  int rank_;
};

class CudaSend final : public SendHandle {
 public:
  CudaSend(CudaBackend& backend, cudaEvent_t done, int peer, int tag, std::size_t count)
      : backend_(backend), done_(done), peer_(peer), tag_(tag), count_(count) {}
  ~CudaSend() override {
    // A send nobody waited for still completes once its receiver takes it; the event is freed
    // when it has been reached.
    if (done_ != nullptr) (void)cudaEventDestroy(done_);
  }
  CudaSend(const CudaSend&) = delete;
  CudaSend& operator=(const CudaSend&) = delete;
  void wait() override;
  [[nodiscard]] bool done() override;

 private:
  CudaBackend& backend_;
  cudaEvent_t done_;  // null for an empty message
  int peer_;
  int tag_;
  std::size_t count_;
};

class CudaBackend final : public Backend, private TeardownSteps {
 public:
  explicit CudaBackend(const BackendOptions& options) : options_(options) {
    // Before the first CUDA and NCCL call of this module (message_rules.h says why each is needed).
    cuda::apply_environment_defaults(cuda::kStartupEnvironment);
    MPSIM_MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    MPSIM_MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    select_device();
    MPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&staging_done_, cudaEventDisableTiming));
    void* pinned = nullptr;
    MPSIM_CUDA_TRY(cudaMallocHost(&pinned, kPinnedIndices * sizeof(std::int32_t)));
    staging_host_ = static_cast<std::int32_t*>(pinned);
    MPSIM_CUDA_TRY(cudaMallocHost(&pinned, kEnvelopesPerBlock * cuda::kEnvelopeWords * sizeof(std::int64_t)));
    envelopes_host_ = static_cast<std::int64_t*>(pinned);
    // Freed memory stays in the stream-ordered pool instead of going back to the driver at each
    // synchronisation: layers allocate and release per microbatch.
    cudaMemPool_t pool = nullptr;
    MPSIM_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device_));
    std::uint64_t keep_all = UINT64_MAX;
    MPSIM_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    cuda::preload_kernels();
    MPSIM_CUBLAS_TRY(cublasCreate(&blas_));
    MPSIM_CUBLAS_TRY(cublasSetStream(blas_, stream_));
    // cuBLAS's workspace, allocated now rather than lazily at a first product in mid-step (where a
    // device-wide allocation would wait on NCCL kernels that wait on peers).
    MPSIM_CUDA_TRY(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
    MPSIM_CUBLAS_TRY(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
    // Plain fp32 products (no TF32), like the CPU backend's.
    MPSIM_CUBLAS_TRY(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
    warm_up_gemms();
    init_nccl();
  }

  // After a failure only the communicators are aborted (teardown.h): every other step can wait on a
  // peer that is gone, and the process ends next.
  ~CudaBackend() override { tear_down(*this, failing(failed_)); }

  // --- identity -------------------------------------------------------------------------------
  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] int world_rank() const noexcept override { return rank_; }
  [[nodiscard]] int world_size() const noexcept override { return size_; }
  /// Tags are checked against the message envelope; the interpreter's tags fit 32 bits.
  [[nodiscard]] std::int64_t max_tag() const override { return std::numeric_limits<std::int32_t>::max(); }

  // --- memory ---------------------------------------------------------------------------------
  [[nodiscard]] float* allocate(std::size_t count) override {
    // Like the CPU backend, count 0 still yields a distinct pointer.
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
    void* p = nullptr;
    MPSIM_CUDA_TRY(cudaMallocAsync(&p, bytes, stream_));
    MPSIM_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, stream_));
    auto* data = static_cast<float*>(p);
    allocations_.insert(data);
    return data;
  }
  void release(float* data) noexcept override {
    // Pointers this backend did not allocate are ignored, as in the CPU backend.
    if (allocations_.erase(data) == 0) return;
    // A send reading `data` may still run on its peer's stream: the free waits for the sends issued so far.
    for (cudaStream_t stream : send_streams_) {
      if (stream == nullptr) continue;
      (void)cudaEventRecord(ready_, stream);
      (void)cudaStreamWaitEvent(stream_, ready_, 0);
    }
    (void)cudaFreeAsync(data, stream_);
  }
  void upload(std::span<const float> host, float* device) override {
    if (host.empty()) return;
    // From pageable memory the copy is staged before cudaMemcpyAsync returns: `host` may be reused.
    MPSIM_CUDA_TRY(cudaMemcpyAsync(device, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream_));
  }
  void download(const float* device, std::span<float> host) override {
    if (host.empty()) return;
    // A copy to pageable memory holds the host until the stream reaches it: the stream is drained
    // first, under the peer timeout, so the copy itself waits for no peer.
    await_drain();
    MPSIM_CUDA_TRY(cudaMemcpyAsync(host.data(), device, host.size_bytes(), cudaMemcpyDeviceToHost, stream_));
    MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  void copy(MatrixView from, MatrixView to) override {
    require_same_shape("copy", from, to);
    if (is_empty(from)) return;
    constexpr auto kFloat = sizeof(float);
    MPSIM_CUDA_TRY(cudaMemcpy2DAsync(to.data, static_cast<std::size_t>(to.ld) * kFloat, from.data,
                                     static_cast<std::size_t>(from.ld) * kFloat,
                                     static_cast<std::size_t>(from.cols) * kFloat, static_cast<std::size_t>(from.rows),
                                     cudaMemcpyDeviceToDevice, stream_));
  }
  void fill(MatrixView m, float value) override {
    if (is_empty(m)) return;
    cuda::launch_fill(stream_, m, value);
    MPSIM_CUDA_TRY_LAUNCH();
  }

  // --- math -----------------------------------------------------------------------------------
  void gemm(Transpose ta, Transpose tb, float alpha, MatrixView a, MatrixView b, float beta, MatrixView c) override {
    if (const std::string error = cuda::gemm_shape_error(ta, tb, a, b, c); !error.empty()) MPSIM_CUDA_FAIL(error);
    if (is_empty(c)) return;
    // beta == 0 leaves what c held unread (NaN included), as cuBLAS and the CPU backend both do.
    const ColumnMajorGemm call = cuda::to_column_major(ta, tb, a, b, c);
    MPSIM_CUBLAS_TRY(cublasSgemm(blas_, call.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 call.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N, to_int(call.m, "m"),
                                 to_int(call.n, "n"), to_int(call.k, "k"), &alpha, call.first,
                                 to_int(std::max<std::int64_t>(call.ld_first, 1), "ld of b"), call.second,
                                 to_int(std::max<std::int64_t>(call.ld_second, 1), "ld of a"), &beta, call.c,
                                 to_int(std::max<std::int64_t>(call.ldc, 1), "ld of c")));
  }
  void axpy(float alpha, MatrixView x, MatrixView y) override {
    require_same_shape("axpy", x, y);
    if (is_empty(y)) return;
    cuda::launch_axpy(stream_, alpha, x, y);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void add_row_vector(const float* bias, MatrixView y) override {
    if (is_empty(y)) return;
    cuda::launch_add_row_vector(stream_, bias, y);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void sum_rows(MatrixView dy, float beta, float* grad) override {
    if (dy.cols == 0) return;
    cuda::launch_sum_rows(stream_, dy, beta, grad);  // with no rows, grad = beta * grad
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void gelu_forward(MatrixView x, MatrixView y) override {
    require_same_shape("gelu_forward", x, y);
    if (is_empty(x)) return;
    cuda::launch_gelu_forward(stream_, x, y);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void gelu_backward(MatrixView x, MatrixView dy, MatrixView dx) override {
    require_same_shape("gelu_backward", x, dy);
    require_same_shape("gelu_backward", x, dx);
    if (is_empty(x)) return;
    cuda::launch_gelu_backward(stream_, x, dy, dx);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void layer_norm_forward(MatrixView x, const float* gamma, const float* beta, float epsilon, MatrixView y, float* mean,
                          float* rstd) override {
    require_same_shape("layer_norm_forward", x, y);
    if (is_empty(x)) return;
    cuda::launch_layer_norm_forward(stream_, x, gamma, beta, epsilon, y, mean, rstd);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void layer_norm_backward(MatrixView dy, MatrixView x, const float* gamma, const float* mean, const float* rstd,
                           MatrixView dx, float* dgamma, float* dbeta) override {
    require_same_shape("layer_norm_backward", x, dy);
    require_same_shape("layer_norm_backward", x, dx);
    if (is_empty(x)) return;
    cuda::launch_layer_norm_backward(stream_, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void softmax_forward(MatrixView x, float scale, bool causal, MatrixView y) override {
    require_same_shape("softmax_forward", x, y);
    if (is_empty(x)) return;
    cuda::launch_softmax_forward(stream_, x, scale, causal, y);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void softmax_backward(MatrixView y, MatrixView dy, float scale, MatrixView dx) override {
    require_same_shape("softmax_backward", y, dy);
    require_same_shape("softmax_backward", y, dx);
    if (is_empty(y)) return;
    cuda::launch_softmax_backward(stream_, y, dy, scale, dx);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void softmax_forward_lse(MatrixView x, float scale, bool causal, MatrixView y, float* lse) override {
    require_same_shape("softmax_forward_lse", x, y);
    if (is_empty(x)) return;
    cuda::launch_softmax_forward_lse(stream_, x, scale, causal, y, lse);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void softmax_from_lse(MatrixView x, float scale, bool causal, const float* lse, MatrixView y) override {
    require_same_shape("softmax_from_lse", x, y);
    if (is_empty(x)) return;
    cuda::launch_softmax_from_lse(stream_, x, scale, causal, lse, y);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void merge_attention(MatrixView out, float* lse, MatrixView part, const float* part_lse) override {
    require_same_shape("merge_attention", out, part);
    if (is_empty(out)) return;
    cuda::launch_merge_attention(stream_, out, lse, part, part_lse);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void row_dot(MatrixView a, MatrixView b, float* out) override {
    require_same_shape("row_dot", a, b);
    if (a.rows == 0) return;
    cuda::launch_row_dot(stream_, a, b, out);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void softmax_backward_rows(MatrixView y, MatrixView dy, float scale, const float* row_sum, MatrixView dx) override {
    require_same_shape("softmax_backward_rows", y, dy);
    require_same_shape("softmax_backward_rows", y, dx);
    if (is_empty(y)) return;
    cuda::launch_softmax_backward_rows(stream_, y, dy, scale, row_sum, dx);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void embedding_forward(MatrixView table, std::span<const std::int32_t> tokens, MatrixView out) override {
    check_rows_per_index("embedding_forward", out, tokens.size(), table.cols);
    check_indices("embedding_forward: token", tokens, table.rows);
    if (is_empty(out)) return;
    const std::int32_t* device_tokens = stage(tokens);
    cuda::launch_embedding_forward(stream_, table, device_tokens, out);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void embedding_backward(MatrixView dout, std::span<const std::int32_t> tokens, MatrixView dtable) override {
    check_rows_per_index("embedding_backward", dout, tokens.size(), dtable.cols);
    check_indices("embedding_backward: token", tokens, dtable.rows);
    if (is_empty(dout)) return;
    const std::int32_t* device_tokens = stage(tokens);
    cuda::launch_embedding_backward(stream_, dout, device_tokens, dtable);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  double cross_entropy(MatrixView logits, std::span<const std::int32_t> labels, float scale,
                       MatrixView dlogits) override {
    require_same_shape("cross_entropy", logits, dlogits);
    check_rows_per_index("cross_entropy", logits, labels.size(), logits.cols);
    check_indices("cross_entropy: label", labels, logits.cols);
    if (logits.rows == 0) return 0.0;  // no rows, no loss (the mean of nothing is taken as 0)
    const std::int32_t* device_labels = stage(labels);
    const auto rows = static_cast<std::size_t>(logits.rows);
    if (row_loss_capacity_ < rows) {
      if (row_loss_ != nullptr) MPSIM_CUDA_TRY(cudaFreeAsync(row_loss_, stream_));
      row_loss_ = nullptr;
      void* p = nullptr;
      MPSIM_CUDA_TRY(cudaMallocAsync(&p, rows * sizeof(float), stream_));
      row_loss_ = static_cast<float*>(p);
      row_loss_capacity_ = rows;
    }
    cuda::launch_cross_entropy(stream_, logits, device_labels, scale, dlogits, row_loss_);
    MPSIM_CUDA_TRY_LAUNCH();
    std::vector<float> losses(rows);
    download(row_loss_, losses);
    double total = 0;
    for (const float loss : losses) total += loss;
    return total / static_cast<double>(logits.rows);
  }
  void sgd_step(float* param, const float* grad, std::size_t count, float learning_rate) override {
    if (count == 0) return;
    cuda::launch_sgd_step(stream_, param, grad, count, learning_rate);
    MPSIM_CUDA_TRY_LAUNCH();
  }
  void adam_step(float* param, const float* grad, float* m, float* v, std::size_t count,
                 const AdamHyper& hyper) override {
    if (count == 0) return;
    const double bias1 = 1.0 - std::pow(static_cast<double>(hyper.beta1), hyper.step);
    const double bias2 = 1.0 - std::pow(static_cast<double>(hyper.beta2), hyper.step);
    cuda::launch_adam_step(stream_, param, grad, m, v, count, hyper, static_cast<float>(bias1),
                           static_cast<float>(bias2));
    MPSIM_CUDA_TRY_LAUNCH();
  }

  // --- communication --------------------------------------------------------------------------
  [[nodiscard]] std::unique_ptr<Group> make_group(std::span<const int> world_ranks) override {
    if (world_ranks.empty()) MPSIM_CUDA_FAIL("make_group: empty list of ranks");
    std::vector<int> sorted(world_ranks.begin(), world_ranks.end());
    std::sort(sorted.begin(), sorted.end());
    if (sorted.front() < 0 || sorted.back() >= size_ ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      MPSIM_CUDA_FAIL(fmt::format("make_group: ranks [{}] are not distinct ranks of a world of {}",
                                  fmt::join(world_ranks, ", "), size_));
    }
    const auto it = std::find(world_ranks.begin(), world_ranks.end(), rank_);
    const int index = it == world_ranks.end() ? -1 : static_cast<int>(it - world_ranks.begin());
    // Collective over the world: members share one colour and are ranked by their place in the
    // list; the others take no part in the new communicator (theirs stays null).
    ncclComm_t comm = nullptr;
    ncclConfig_t config = nonblocking_config();
    MPSIM_NCCL_TRY_ASYNC(
        ncclCommSplit(world_, index >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, std::max(index, 0), &comm, &config));
    // A split in progress may report on the parent or on the new communicator: both are polled.
    settle({&world_, &comm},
           [&] { return fmt::format("making a group of {} ranks did not complete", world_ranks.size()); });
    auto group =
        std::make_unique<CudaGroup>(*this, index >= 0 ? comm : nullptr, static_cast<int>(world_ranks.size()), index);
    if (index >= 0) {
      // One small all-reduce now, waited for under the peer timeout: NCCL loads its kernels and
      // allocates for the group here, at start-up (with NCCL_RUNTIME_CONNECT=0 the split has already
      // connected every algorithm's channels), and a member that cannot be reached is an error now
      // rather than in the middle of a step.
      float* scratch = allocate(1);
      all_reduce_sum(*group, scratch, 1);
      release(scratch);
      await_drain();
    }
    return group;
  }

  /// One NCCL group on the pair's communicator: the envelope (tag, count) and the floats, which NCCL
  /// delivers in order (point-to-point calls to one peer within a group run in issue order). The
  /// receiver posts both at once with the tag and count it expects and checks the envelope later
  /// (message_rules.h), so neither side waits on the host.
  [[nodiscard]] std::unique_ptr<SendHandle> send(const float* data, std::size_t count, int peer, int tag) override {
    check_peer("send to", peer);
    const std::size_t channel = channel_of(peer, tag);
    ncclComm_t& comm = pair_comm(to_peer_, peer, channel, "send to");
    // The peer's send stream starts once the work issued so far (which produced `data`) is done;
    // the main stream goes on without waiting for the receiver. Everything below is ordered on
    // the send stream, the envelope's memory included, so the host never waits here.
    cudaStream_t stream = send_stream(channel);
    MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
    MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream, ready_, 0));
    void* envelope = nullptr;
    MPSIM_CUDA_TRY(cudaMallocAsync(&envelope, cuda::kEnvelopeWords * sizeof(std::int64_t), stream));
    cuda::launch_write_header(stream, static_cast<std::int64_t*>(envelope), tag, static_cast<std::int64_t>(count));
    MPSIM_CUDA_TRY_LAUNCH();
    MPSIM_NCCL_TRY(ncclGroupStart());
    MPSIM_NCCL_TRY(ncclSend(envelope, cuda::kEnvelopeWords, ncclInt64, kReceiverRank, comm, stream));
    if (count > 0) MPSIM_NCCL_TRY(ncclSend(data, count, ncclFloat, kReceiverRank, comm, stream));
    MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
    settle({&comm}, [&] { return fmt::format("enqueueing a send to rank {} ({} floats, tag {})", peer, count, tag); });
    MPSIM_CUDA_TRY(cudaFreeAsync(envelope, stream));
    cudaEvent_t done = nullptr;
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto handle = std::make_unique<CudaSend>(*this, done, peer, tag, count);  // owns `done` from here
    MPSIM_CUDA_TRY(cudaEventRecord(done, stream));
    sends_since_mark_.on_send(static_cast<int>(channel));
    return handle;
  }
  void host_send(std::span<const float> data, int peer, int tag) override {
    check_peer("send to", peer);
    MPI_Request request = MPI_REQUEST_NULL;
    MPSIM_MPI_TRY(MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &request));
    wait_host(request, peer, "no receive at", data.size(), tag);
  }
  void host_recv(std::span<float> data, int peer, int tag) override {
    check_peer("recv from", peer);
    MPI_Request request = MPI_REQUEST_NULL;
    MPSIM_MPI_TRY(MPI_Irecv(data.data(), static_cast<int>(data.size()), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &request));
    wait_host(request, peer, "no message from", data.size(), tag);
  }

  /// Issues the receive on the main stream and returns: the floats are there for the work issued
  /// after it (stream order), and the host waits only when it must (download, synchronize), under the
  /// peer timeout, where an envelope that is not the one expected is a one-line error.
  void recv(float* data, std::size_t count, int peer, int tag) override {
    check_peer("recv from", peer);
    sends_since_mark_.on_receive();
    ncclComm_t& comm = pair_comm(from_peer_, peer, channel_of(peer, tag), "recv from");
    limit_run_ahead();
    std::int64_t* envelope = envelope_slot();
    MPSIM_NCCL_TRY(ncclGroupStart());
    MPSIM_NCCL_TRY(ncclRecv(envelope, cuda::kEnvelopeWords, ncclInt64, kSenderRank, comm, stream_));
    if (count > 0) MPSIM_NCCL_TRY(ncclRecv(data, count, ncclFloat, kSenderRank, comm, stream_));
    MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
    std::string text = fmt::format("no message from rank {} ({} floats, tag {})", peer, count, tag);
    settle({&comm}, [&] { return text; });
    expected_.push_back({peer, tag, count});
    push_pending(comm, std::move(text));
  }
  void all_reduce_sum(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "all-reduce");
    if (count == 0) return;
    limit_run_ahead();
    MPSIM_NCCL_TRY_ASYNC(ncclAllReduce(data, data, count, ncclFloat, ncclSum, g.comm(), stream_));
    enqueued(g.comm(), collective_text("all-reduce", g, count));
  }
  void reduce_scatter_sum(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "reduce-scatter");
    const auto parts = static_cast<std::size_t>(g.size());
    if (count % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("reduce-scatter of {} floats over {} ranks: not divisible", count, parts));
    }
    if (count == 0) return;
    limit_run_ahead();
    const std::size_t slice = count / parts;
    // NCCL's in-place form: this rank's slice lands at data + rank * slice.
    MPSIM_NCCL_TRY_ASYNC(ncclReduceScatter(data, data + static_cast<std::size_t>(g.rank()) * slice, slice, ncclFloat,
                                           ncclSum, g.comm(), stream_));
    enqueued(g.comm(), collective_text("reduce-scatter", g, count));
  }
  void all_gather(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "all-gather");
    const auto parts = static_cast<std::size_t>(g.size());
    if (count % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("all-gather of {} floats over {} ranks: not divisible", count, parts));
    }
    if (count == 0) return;
    limit_run_ahead();
    const std::size_t slice = count / parts;
    // NCCL's in-place form: this rank's slice is read from data + rank * slice.
    MPSIM_NCCL_TRY_ASYNC(
        ncclAllGather(data + static_cast<std::size_t>(g.rank()) * slice, data, slice, ncclFloat, g.comm(), stream_));
    enqueued(g.comm(), collective_text("all-gather", g, count));
  }
  void all_to_all(Group& group, const float* send, std::span<const std::size_t> send_counts, float* recv,
                  std::span<const std::size_t> recv_counts) override {
    CudaGroup& g = member(group, "all-to-all");
    const auto parts = static_cast<std::size_t>(g.size());
    if (send_counts.size() != parts || recv_counts.size() != parts) {
      MPSIM_CUDA_FAIL(fmt::format("all-to-all with {} and {} counts over {} ranks", send_counts.size(),
                                  recv_counts.size(), parts));
    }
    limit_run_ahead();
    // One NCCL group of a send and a receive per peer: NCCL starts them together, so no pair of
    // ranks waits on the other's order (its own block is a send to itself, which NCCL allows).
    std::size_t sent = 0, received = 0;
    MPSIM_NCCL_TRY(ncclGroupStart());
    for (std::size_t j = 0; j < parts; ++j) {
      if (send_counts[j] > 0) {
        MPSIM_NCCL_TRY(ncclSend(send + sent, send_counts[j], ncclFloat, static_cast<int>(j), g.comm(), stream_));
      }
      if (recv_counts[j] > 0) {
        MPSIM_NCCL_TRY(ncclRecv(recv + received, recv_counts[j], ncclFloat, static_cast<int>(j), g.comm(), stream_));
      }
      sent += send_counts[j];
      received += recv_counts[j];
    }
    MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
    enqueued(g.comm(), collective_text("all-to-all", g, sent));
  }
  void all_to_all_counts(Group& group, std::span<const std::int64_t> send, std::span<std::int64_t> recv) override {
    CudaGroup& g = member(group, "all-to-all of counts");
    const auto parts = static_cast<std::size_t>(g.size());
    if (send.size() != recv.size() || send.size() % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("all-to-all of {} counts into {} over {} ranks", send.size(), recv.size(), parts));
    }
    if (send.empty()) return;
    limit_run_ahead();
    // NCCL moves device memory only: the counts go through a staging buffer, as int64.
    const std::size_t block = send.size() / parts;
    void* staging = nullptr;
    MPSIM_CUDA_TRY(cudaMallocAsync(&staging, 2 * send.size_bytes(), stream_));
    auto* out = static_cast<std::int64_t*>(staging);
    std::int64_t* in = out + send.size();
    MPSIM_CUDA_TRY(cudaMemcpyAsync(out, send.data(), send.size_bytes(), cudaMemcpyHostToDevice, stream_));
    MPSIM_NCCL_TRY(ncclGroupStart());
    for (std::size_t j = 0; j < parts; ++j) {
      MPSIM_NCCL_TRY(ncclSend(out + j * block, block, ncclInt64, static_cast<int>(j), g.comm(), stream_));
      MPSIM_NCCL_TRY(ncclRecv(in + j * block, block, ncclInt64, static_cast<int>(j), g.comm(), stream_));
    }
    MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
    enqueued(g.comm(), collective_text("all-to-all of counts", g, send.size()));
    // The host needs the counts: it waits here, under the peer timeout, and then copies.
    await_drain();
    MPSIM_CUDA_TRY(cudaMemcpyAsync(recv.data(), in, recv.size_bytes(), cudaMemcpyDeviceToHost, stream_));
    MPSIM_CUDA_TRY(cudaFreeAsync(staging, stream_));
    MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  void barrier() override {
    // The device's work first, so ranks leave the barrier with their streams drained: the marks
    // of the step that follows start together.
    synchronize();
    MPI_Request request = MPI_REQUEST_NULL;
    MPSIM_MPI_TRY(MPI_Ibarrier(MPI_COMM_WORLD, &request));
    poll_until(
        [&] {
          int done = 0;
          MPSIM_MPI_TRY(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
          return done != 0;
        },
        {}, [&] { return fmt::format("barrier over {} ranks did not complete", size_); });
  }

  // --- time -----------------------------------------------------------------------------------
  [[nodiscard]] int record_mark() override {
    std::optional<int> send_channel = sends_since_mark_.take();
    if (mark_count_ == 0) {
      // The first mark anchors the device's clock to the host's: with the stream drained (it is,
      // right after a barrier) the event is reached at once, so host time now is its time.
      await_drain();
      anchor_ns_ = steady_now_ns();
      send_channel.reset();
    }
    if (mark_count_ == marks_.size()) {
      cudaEvent_t event = nullptr;
      MPSIM_CUDA_TRY(cudaEventCreate(&event));
      marks_.push_back(event);
      mark_channels_.push_back(-1);
    }
    cudaEvent_t mark = marks_[mark_count_];
    mark_channels_[mark_count_] = send_channel.value_or(-1);
    if (send_channel) {
      // Right after one send: on its stream, once the send and the work issued so far are done, so
      // the send's span covers its transfer (SendsSinceMark). The send stream waits for nothing a
      // later send on it would not wait for anyway.
      cudaStream_t stream = send_streams_[static_cast<std::size_t>(*send_channel)];
      MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
      MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream, ready_, 0));
      MPSIM_CUDA_TRY(cudaEventRecord(mark, stream));
    } else {
      MPSIM_CUDA_TRY(cudaEventRecord(mark, stream_));
    }
    return static_cast<int>(mark_count_++);
  }
  /// Waits for the main stream under the peer timeout, then checks the envelopes of the receives
  /// issued since the last check.
  void synchronize() override { await_drain(); }
  [[nodiscard]] std::vector<std::int64_t> mark_times_ns() override {
    synchronize();
    std::vector<std::int64_t> times;
    times.reserve(mark_count_);
    for (std::size_t i = 0; i < mark_count_; ++i) {
      // A mark on a send stream is reached when its send is received.
      if (const int channel = mark_channels_[i]; channel >= 0) {
        poll_until([&] { return query(marks_[i]); }, {&to_peer_[static_cast<std::size_t>(channel)]},
                   [&] { return fmt::format("send to rank {} was not received", channel / kOrderedChannels); });
      }
      float ms = 0;
      MPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, marks_[0], marks_[i]));
      times.push_back(anchor_ns_ + std::llround(static_cast<double>(ms) * 1e6));
    }
    return times;
  }
  void reset_marks() override {
    mark_count_ = 0;
    (void)sends_since_mark_.take();
  }

  /// Waits, under the peer timeout, for the send whose completion `done` records.
  /// Whether a send's event has been reached (the buffer may be reused).
  bool send_reached(cudaEvent_t done) { return query(done); }
  void await_send(cudaEvent_t done, int peer, int tag, std::size_t count) {
    poll_until([&] { return query(done); }, {&to_peer_[channel_of(peer, tag)]},
               [&] { return fmt::format("send to rank {} ({} floats, tag {}) was not received", peer, count, tag); });
  }

  /// A group's communicator is closing: operations still listed as pending on it stop naming it,
  /// and it is finalised (clean run) or aborted (failure), as teardown.h decides.
  void close_group(ncclComm_t& comm) noexcept {
    for (PendingOp& op : pending_) {
      if (op.comm == &comm) op.comm = nullptr;
    }
    if (failing(failed_)) {
      (void)ncclCommAbort(comm);
      comm = nullptr;
      return;
    }
    finalize_and_destroy({&comm});
  }

 private:
  // Ranks inside a two-rank point-to-point communicator: the sender is 0, the receiver 1.
  static constexpr int kSenderRank = 0;
  static constexpr int kReceiverRank = 1;
  /// Tokens or labels of one microbatch fit easily (a million ints, 4 MiB).
  static constexpr std::size_t kPinnedIndices = std::size_t{1} << 20;
  /// What cuBLAS asks for on Hopper (32 MiB); more than enough before it.
  static constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;
  /// Envelopes of receives are kept on the device in blocks of this many until they are checked.
  static constexpr std::size_t kEnvelopesPerBlock = 1024;
  /// How many receives and collectives may be issued ahead of the device. The host then waits,
  /// polled under the peer timeout, for the oldest: the device always has two communication steps
  /// and the work between them queued, and a peer that stops answering is named within the timeout
  /// instead of the host blocking on a full CUDA launch queue behind a stalled NCCL kernel.
  static constexpr std::size_t kCommOpsAhead = 2;

  /// A receive or collective issued on the main stream and not yet known to be done.
  struct PendingOp {
    cudaEvent_t done = nullptr;  ///< recorded right after it
    ncclComm_t* comm = nullptr;  ///< its communicator (aborted on a timeout); null once closed
    std::string text;            ///< what a timeout says, before " within N s"
  };

  void select_device() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      MPSIM_CUDA_FAIL(fmt::format("no CUDA device visible to this process ({})",
                                  status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount = 0"));
    }
    const cuda::DeviceChoice choice = cuda::device_for_rank(node_placement(), count);
    if (!choice.error.empty()) MPSIM_CUDA_FAIL(choice.error);
    device_ = choice.device;
    MPSIM_CUDA_TRY(cudaSetDevice(device_));
  }

  /// One small product of each transpose combination the layers use, now: cuBLAS initialises its
  /// kernels and heuristics at start-up rather than at a first product in mid-step, where loading
  /// could wait for the whole device (message_rules.h). Products of other shapes may pick other
  /// kernels; CUDA_MODULE_LOADING=EAGER loads those too when it applies.
  void warm_up_gemms() {
    constexpr std::int64_t kSide = 64;
    constexpr auto kFloats = static_cast<std::size_t>(kSide * kSide);
    float* a = allocate(kFloats);
    float* b = allocate(kFloats);
    float* c = allocate(kFloats);
    const auto square = [&](float* data) { return MatrixView{data, kSide, kSide, kSide}; };
    for (const Transpose ta : {Transpose::No, Transpose::Yes}) {
      for (const Transpose tb : {Transpose::No, Transpose::Yes}) {
        gemm(ta, tb, 1.0f, square(a), square(b), 0.0f, square(c));
      }
    }
    release(a);
    release(b);
    release(c);
    MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));  // nothing of NCCL's runs yet
  }

  /// The world communicator (parent of the groups), then one two-rank communicator per direction and
  /// ordered channel (backend.h: activations, gradients) between this rank and each of its peers
  /// (BackendOptions::peers; all other ranks when empty) for point-to-point, all connected before the
  /// first step. Every one is non-blocking
  /// (nonblocking_config()) and waited for under the peer timeout.
  ///
  /// Why a communicator per direction and pair: NCCL runs the operations of one communicator in
  /// issue order, and a send completes only once its receiver takes it. Sharing one communicator
  /// would tie a send to every later operation of the rank (stage i sending activations while
  /// stage i+1 sends gradients back is then a deadlock); separate ones behave like the CPU
  /// backend's MPI_Isend: a send never holds up this rank's receives, collectives or compute.
  void init_nccl() {
    ncclUniqueId world_id{};
    if (rank_ == 0) MPSIM_NCCL_TRY(ncclGetUniqueId(&world_id));
    MPSIM_MPI_TRY(MPI_Bcast(&world_id, static_cast<int>(sizeof world_id), MPI_BYTE, 0, MPI_COMM_WORLD));
    ncclConfig_t config = nonblocking_config();
    MPSIM_NCCL_TRY_ASYNC(ncclCommInitRankConfig(&world_, size_, world_id, rank_, &config));
    settle({&world_}, [&] { return fmt::format("initialising NCCL over {} ranks did not complete", size_); });

    const auto n = static_cast<std::size_t>(size_);
    to_peer_.assign(n * kOrderedChannels, nullptr);
    from_peer_.assign(n * kOrderedChannels, nullptr);
    send_streams_.assign(n * kOrderedChannels, nullptr);
    is_peer_.assign(n, false);
    for (const int peer : options_.peers) {
      if (peer < 0 || peer >= size_ || peer == rank_) {
        MPSIM_CUDA_FAIL(fmt::format("peer {} is not another rank of a world of {}", peer, size_));
      }
      is_peer_[static_cast<std::size_t>(peer)] = true;
    }
    if (options_.peers.empty()) {
      for (std::size_t peer = 0; peer < n; ++peer) is_peer_[peer] = static_cast<int>(peer) != rank_;
    }
    for (std::size_t peer = 0; peer < n; ++peer) {
      if (is_peer_[peer]) peers_.push_back(static_cast<int>(peer));
    }
    (void)envelope_block(0);
    if (size_ == 1) return;
    constexpr int kIdBytes = static_cast<int>(sizeof(ncclUniqueId));
    // Each rank makes the ids of the communicators it sends on and hands each to its receiver, peer
    // by peer in ascending order: every pair meets at the same point of one global order of pairs,
    // so no rank waits on another that is busy with a different pair.
    std::vector<ncclUniqueId> outgoing(n * kOrderedChannels);
    std::vector<ncclUniqueId> incoming(n * kOrderedChannels);
    for (const int peer : peers_) {
      const std::size_t first = slot(peer, 0);
      for (int c = 0; c < kOrderedChannels; ++c) MPSIM_NCCL_TRY(ncclGetUniqueId(&outgoing[first + static_cast<std::size_t>(c)]));
      MPSIM_MPI_TRY(MPI_Sendrecv(&outgoing[first], kIdBytes * kOrderedChannels, MPI_BYTE, peer, 0, &incoming[first],
                                 kIdBytes * kOrderedChannels, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    // One group: NCCL initialises the communicators concurrently, in the background (non-blocking).
    std::vector<ncclComm_t*> pairs;
    MPSIM_NCCL_TRY(ncclGroupStart());
    for (const int peer : peers_) {
      for (int c = 0; c < kOrderedChannels; ++c) {
        const std::size_t p = slot(peer, c);
        MPSIM_NCCL_TRY(ncclCommInitRankConfig(&to_peer_[p], 2, outgoing[p], kSenderRank, &config));
        MPSIM_NCCL_TRY(ncclCommInitRankConfig(&from_peer_[p], 2, incoming[p], kReceiverRank, &config));
        pairs.push_back(&to_peer_[p]);
        pairs.push_back(&from_peer_[p]);
      }
    }
    MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
    settle(pairs, [&] {
      return fmt::format("initialising the point-to-point communicators with ranks [{}] did not complete",
                         fmt::join(peers_, ", "));
    });
    connect_pairs();
  }

  /// NCCL connects a pair at its first message, and that handshake needs both sides. One float each
  /// way per pair (both in one NCCL group), peer by peer in ascending order (one global order of
  /// pairs, as above), waited for under the peer timeout, connects every pair now, so no send or
  /// receive of a step waits for a handshake.
  void connect_pairs() {
    float* scratch = allocate(2);
    for (const std::size_t p : channels()) {
      const int peer = static_cast<int>(p / kOrderedChannels);
      cudaStream_t stream = send_stream(p);
      MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
      MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream, ready_, 0));
      MPSIM_NCCL_TRY(ncclGroupStart());
      MPSIM_NCCL_TRY(ncclSend(scratch, 1, ncclFloat, kReceiverRank, to_peer_[p], stream));
      MPSIM_NCCL_TRY(ncclRecv(scratch + 1, 1, ncclFloat, kSenderRank, from_peer_[p], stream_));
      MPSIM_NCCL_TRY_ASYNC(ncclGroupEnd());
      const auto text = [&] { return fmt::format("connecting with rank {} did not complete", peer); };
      settle({&to_peer_[p], &from_peer_[p]}, text);
      MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream));
      MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream_, ready_, 0));
      push_pending(from_peer_[p], text());
      await_drain();
    }
    release(scratch);
  }

  // --- teardown (teardown.h) ---------------------------------------------------------------
  void abort_channels() noexcept override {
    const auto abort = [](ncclComm_t& comm) {
      if (comm != nullptr) (void)ncclCommAbort(comm);
      comm = nullptr;
    };
    for (ncclComm_t& comm : to_peer_) abort(comm);
    for (ncclComm_t& comm : from_peer_) abort(comm);
    abort(world_);
  }
  void drain() noexcept override {
    // Sends first: a buffer is freed only after the sends reading it are done.
    for (cudaStream_t stream : send_streams_) {
      if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    }
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  }
  void release_memory() noexcept override {
    for (float* data : allocations_) (void)cudaFreeAsync(data, stream_);
    if (staging_device_ != nullptr) (void)cudaFreeAsync(staging_device_, stream_);
    if (row_loss_ != nullptr) (void)cudaFreeAsync(row_loss_, stream_);
    for (std::int64_t* block : envelope_blocks_) (void)cudaFreeAsync(block, stream_);
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
    if (staging_host_ != nullptr) (void)cudaFreeHost(staging_host_);
    if (envelopes_host_ != nullptr) (void)cudaFreeHost(envelopes_host_);
    for (cudaEvent_t event : marks_) (void)cudaEventDestroy(event);
    for (const PendingOp& op : pending_) (void)cudaEventDestroy(op.done);
    for (cudaEvent_t event : spare_events_) (void)cudaEventDestroy(event);
    if (blas_ != nullptr) (void)cublasDestroy(blas_);
    if (blas_workspace_ != nullptr) (void)cudaFree(blas_workspace_);
  }
  void close_channels() noexcept override {
    close_communicators();
    for (cudaStream_t stream : send_streams_) {
      if (stream != nullptr) (void)cudaStreamDestroy(stream);
    }
    if (ready_ != nullptr) (void)cudaEventDestroy(ready_);
    if (staging_done_ != nullptr) (void)cudaEventDestroy(staging_done_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  /// Every communicator is finalised at once (non-blocking: each makes progress in the background,
  /// so no two ranks can wait on each other in opposite orders), then destroyed.
  void close_communicators() noexcept {
    std::vector<ncclComm_t*> comms;
    for (ncclComm_t& comm : to_peer_) comms.push_back(&comm);
    for (ncclComm_t& comm : from_peer_) comms.push_back(&comm);
    comms.push_back(&world_);
    finalize_and_destroy(comms);
  }

  /// ncclCommFinalize flushes a communicator's operations and, for a non-blocking one, returns
  /// ncclInProgress until every member has finalised; ncclCommDestroy then frees it without waiting.
  /// One that has not finished within the peer timeout, or reports an error, is aborted instead.
  void finalize_and_destroy(const std::vector<ncclComm_t*>& comms) noexcept {
    const auto abort = [](ncclComm_t& comm) {
      (void)ncclCommAbort(comm);
      comm = nullptr;
    };
    for (ncclComm_t* comm : comms) {
      if (*comm == nullptr) continue;
      const ncclResult_t started = ncclCommFinalize(*comm);
      if (started != ncclSuccess && started != ncclInProgress) abort(*comm);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.peer_timeout_s);
    for (;;) {
      bool busy = false;
      for (ncclComm_t* comm : comms) {
        if (*comm == nullptr) continue;
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(*comm, &state) != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
          abort(*comm);
        } else if (state == ncclInProgress) {
          busy = true;
        }
      }
      if (!busy) break;
      if (std::chrono::steady_clock::now() > deadline) {
        for (ncclComm_t* comm : comms) {
          if (*comm != nullptr) abort(*comm);
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    for (ncclComm_t* comm : comms) {
      if (*comm == nullptr) continue;
      (void)ncclCommDestroy(*comm);
      *comm = nullptr;
    }
  }

  /// Where ordered channel `channel` (backend.h) to or from `peer` sits in to_peer_, from_peer_ and
  /// send_streams_.
  [[nodiscard]] static std::size_t slot(int peer, int channel) noexcept {
    return static_cast<std::size_t>(peer) * kOrderedChannels + static_cast<std::size_t>(channel);
  }
  /// The slot of the channel a message with `tag` travels on.
  [[nodiscard]] static std::size_t channel_of(int peer, int tag) noexcept { return slot(peer, ordered_channel(tag)); }
  /// Every channel of every peer, ascending (peer by peer: one global order of pairs).
  [[nodiscard]] std::vector<std::size_t> channels() const {
    std::vector<std::size_t> out;
    for (const int peer : peers_) {
      for (int c = 0; c < kOrderedChannels; ++c) out.push_back(slot(peer, c));
    }
    return out;
  }

  cudaStream_t send_stream(std::size_t channel) {
    cudaStream_t& stream = send_streams_[channel];
    if (stream == nullptr) MPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }

  void check_peer(const char* what, int peer) const {
    if (peer < 0 || peer >= size_ || peer == rank_) {
      MPSIM_CUDA_FAIL(fmt::format("{} rank {}: not another rank of a world of {}", what, peer, size_));
    }
  }

  ncclComm_t& pair_comm(std::vector<ncclComm_t>& comms, int peer, std::size_t channel, const char* what) {
    if (!is_peer_[static_cast<std::size_t>(peer)]) {
      MPSIM_CUDA_FAIL(fmt::format("{} rank {}: not one of this rank's peers (BackendOptions::peers), so no channel", what,
                                  peer));
    }
    ncclComm_t& comm = comms[channel];
    if (comm == nullptr)
      MPSIM_CUDA_FAIL(fmt::format("{} rank {}: its communicator was aborted after an error", what, peer));
    return comm;
  }

  /// An MPI request on host memory, waited for against the peer timeout.
  void wait_host(MPI_Request& request, int peer, const char* what, std::size_t count, int tag) {
    poll_until(
        [&] {
          int done = 0;
          MPSIM_MPI_TRY(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
          return done != 0;
        },
        {}, [&] { return fmt::format("{} rank {} ({} floats, tag {}, host)", what, peer, count, tag); });
  }

  CudaGroup& member(Group& group, const char* what) const {
    auto& g = static_cast<CudaGroup&>(group);
    if (g.rank() < 0) MPSIM_CUDA_FAIL(fmt::format("{} over a group this rank is not part of", what));
    if (g.comm() == nullptr) MPSIM_CUDA_FAIL(fmt::format("{} over a group whose communicator was aborted", what));
    return g;
  }

  [[nodiscard]] static std::string collective_text(const char* what, const CudaGroup& g, std::size_t count) {
    return fmt::format("{} of {} floats over {} ranks did not complete (a peer died or stopped answering)", what, count,
                       g.size());
  }

  static void check_rows_per_index(const char* op, MatrixView m, std::size_t indices, std::int64_t cols) {
    if (m.rows != static_cast<std::int64_t>(indices) || m.cols != cols) {
      MPSIM_CUDA_FAIL(fmt::format("{}: {} rows of {} columns expected, the view is {}", op, indices, cols, shape(m)));
    }
  }

  /// The indices live on the host, so a bad one is caught here rather than as a wild device access.
  static void check_indices(const char* what, std::span<const std::int32_t> indices, std::int64_t limit) {
    for (std::size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] < 0 || indices[i] >= limit) {
        MPSIM_CUDA_FAIL(fmt::format("{} {} at row {} is outside [0, {})", what, indices[i], i, limit));
      }
    }
  }

  /// Copies host indices to the device and returns the device copy, valid for the work issued
  /// next on the stream (the next stage() reuses it, in stream order). Small index lists go through
  /// the pinned buffer made at start-up; larger ones are copied from the caller's pageable memory
  /// (cudaMemcpyAsync stages those before returning). No pinned allocation happens after start-up:
  /// one would serialise the device against NCCL kernels still waiting for a peer.
  const std::int32_t* stage(std::span<const std::int32_t> indices) {
    if (staging_device_capacity_ < indices.size()) {
      if (staging_device_ != nullptr) MPSIM_CUDA_TRY(cudaFreeAsync(staging_device_, stream_));
      staging_device_ = nullptr;
      staging_device_capacity_ = 0;
      void* device = nullptr;
      MPSIM_CUDA_TRY(cudaMallocAsync(&device, indices.size_bytes(), stream_));
      staging_device_ = static_cast<std::int32_t*>(device);
      staging_device_capacity_ = indices.size();
    }
    const void* source = indices.data();
    if (indices.size() <= kPinnedIndices) {
      // The previous copy out of the pinned buffer must be done before it is overwritten; it may sit
      // behind a receive, so the wait is polled under the peer timeout.
      await_point(staging_done_);
      std::memcpy(staging_host_, indices.data(), indices.size_bytes());
      source = staging_host_;
    }
    MPSIM_CUDA_TRY(cudaMemcpyAsync(staging_device_, source, indices.size_bytes(), cudaMemcpyHostToDevice, stream_));
    MPSIM_CUDA_TRY(cudaEventRecord(staging_done_, stream_));
    return staging_device_;
  }

  /// True once `event` has been reached; throws on a device error.
  bool query(cudaEvent_t event) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return true;
    if (status == cudaErrorNotReady) return false;
    failed_ = true;
    MPSIM_CUDA_TRY(status);
    return false;
  }

  /// Waits until NCCL has finished what was last asked of `comms` (creating them, splitting, or
  /// enqueueing a group): on a non-blocking communicator such a call may return ncclInProgress, and
  /// until its state (ncclCommGetAsyncError) leaves ncclInProgress nothing else may be issued to it
  /// or to the streams it uses. Usually done at once; polled under the peer timeout.
  template <class Describe>
  void settle(const std::vector<ncclComm_t*>& comms, Describe describe) {
    poll_until(
        [&] {
          for (ncclComm_t* comm : comms) {
            if (*comm == nullptr) continue;
            ncclResult_t state = ncclSuccess;
            MPSIM_NCCL_TRY(ncclCommGetAsyncError(*comm, &state));
            if (state == ncclInProgress) return false;
          }
          return true;
        },
        comms, describe);
  }

  /// After a collective's call: waits for NCCL to have enqueued it, then lists it as pending.
  void enqueued(ncclComm_t& comm, std::string text) {
    settle({&comm}, [&] { return text; });
    push_pending(comm, std::move(text));
  }

  /// Records an event after the operation just issued on the main stream, for the waits that follow.
  void push_pending(ncclComm_t& comm, std::string text) {
    cudaEvent_t done = nullptr;
    if (spare_events_.empty()) {
      MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    } else {
      done = spare_events_.back();
      spare_events_.pop_back();
    }
    pending_.push_back({done, &comm, std::move(text)});
    MPSIM_CUDA_TRY(cudaEventRecord(done, stream_));
  }

  /// Drops the pending operations the device has finished (in stream order, oldest first).
  void retire_reached() {
    while (!pending_.empty() && query(pending_.front().done)) {
      spare_events_.push_back(pending_.front().done);
      pending_.pop_front();
    }
  }

  /// Keeps at most kCommOpsAhead receives and collectives pending before issuing another.
  void limit_run_ahead() {
    retire_reached();
    while (pending_.size() >= kCommOpsAhead) {
      await_point(pending_.front().done);
      retire_reached();
    }
  }

  /// Waits, under the peer timeout, until the main stream reaches `point`. A timeout names the
  /// oldest pending receive or collective (what the stream waits on) and aborts the communicators
  /// of those pending; without one, the sends the stream waits for (release()).
  void await_point(cudaEvent_t point) {
    std::vector<ncclComm_t*> comms;
    for (const PendingOp& op : pending_) {
      if (op.comm != nullptr) comms.push_back(op.comm);
    }
    poll_until([&] { return query(point); }, comms, [&] { return stall_text(); });
  }

  /// Waits for everything issued on the main stream, then checks the envelopes that arrived.
  void await_drain() {
    MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
    await_point(ready_);
    retire_reached();
    check_envelopes();
  }

  [[nodiscard]] std::string stall_text() {
    for (const PendingOp& op : pending_) {
      if (!query(op.done)) return op.text;
    }
    std::vector<int> sending;
    for (std::size_t channel = 0; channel < send_streams_.size(); ++channel) {
      const int peer = static_cast<int>(channel / kOrderedChannels);
      if (send_streams_[channel] != nullptr && cudaStreamQuery(send_streams_[channel]) == cudaErrorNotReady &&
          (sending.empty() || sending.back() != peer)) {
        sending.push_back(peer);
      }
    }
    if (sending.empty()) return "this rank's stream did not finish its work";
    return fmt::format("this rank's stream waits for its sends to ranks [{}], which were not received",
                       fmt::join(sending, ", "));
  }

  /// Block `index` of the receives' envelope slots, made when first needed (stream-ordered memory,
  /// so no device-wide synchronisation) and kept.
  std::int64_t* envelope_block(std::size_t index) {
    while (envelope_blocks_.size() <= index) {
      void* block = nullptr;
      MPSIM_CUDA_TRY(
          cudaMallocAsync(&block, kEnvelopesPerBlock * cuda::kEnvelopeWords * sizeof(std::int64_t), stream_));
      envelope_blocks_.push_back(static_cast<std::int64_t*>(block));
    }
    return envelope_blocks_[index];
  }

  /// Where the next receive's envelope lands: slots in receive order since the last check.
  std::int64_t* envelope_slot() {
    const std::size_t i = expected_.size();
    return envelope_block(i / kEnvelopesPerBlock) + (i % kEnvelopesPerBlock) * cuda::kEnvelopeWords;
  }

  /// Compares each receive's envelope with what it asked for. Runs with the main stream drained, so
  /// the copies wait for no peer. A mismatch is a one-line error; the pair's channel itself is
  /// intact (every message was taken), so nothing is aborted here.
  void check_envelopes() {
    const std::size_t total = expected_.size();
    for (std::size_t first = 0; first < total; first += kEnvelopesPerBlock) {
      const std::size_t n = std::min(kEnvelopesPerBlock, total - first);
      MPSIM_CUDA_TRY(cudaMemcpyAsync(envelopes_host_, envelope_block(first / kEnvelopesPerBlock),
                                     n * cuda::kEnvelopeWords * sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_));
      MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
      const std::string error =
          cuda::first_envelope_mismatch(std::span(expected_).subspan(first, n),
                                        std::span<const std::int64_t>(envelopes_host_, n * cuda::kEnvelopeWords));
      if (!error.empty()) {
        expected_.clear();
        MPSIM_CUDA_FAIL(error);
      }
    }
    expected_.clear();
  }

  /// Polls `done` until it returns true. Past the peer timeout, or when NCCL reports an
  /// asynchronous error on one of `comms`, aborts them all (so their kernels stop) and throws
  /// BackendError with describe(). Sleeps between polls once the wait is not short, like the CPU
  /// backend, so ranks sharing cores leave them to the ones computing.
  template <class Done, class Describe>
  void poll_until(Done done, const std::vector<ncclComm_t*>& comms, Describe describe) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.peer_timeout_s);
    for (int polls = 0;; ++polls) {
      if (done()) return;
      for (ncclComm_t* comm : comms) {
        if (*comm == nullptr) continue;
        ncclResult_t async = ncclSuccess;
        MPSIM_NCCL_TRY(ncclCommGetAsyncError(*comm, &async));
        if (async != ncclSuccess && async != ncclInProgress) {
          fail(comms, fmt::format("{}: NCCL reported {}", describe(), ncclGetErrorString(async)));
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        fail(comms, fmt::format("{} within {:g} s", describe(), options_.peer_timeout_s));
      }
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(polls > 4096 ? 200 : 20));
    }
  }

  [[noreturn]] void fail(const std::vector<ncclComm_t*>& comms, const std::string& what) {
    failed_ = true;
    for (ncclComm_t* comm : comms) {
      if (*comm == nullptr) continue;
      (void)ncclCommAbort(*comm);
      *comm = nullptr;
    }
    MPSIM_CUDA_FAIL(what);
  }

  BackendOptions options_;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  bool failed_ = false;  ///< a wait failed: communicators are aborted, not destroyed
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  ///< reused: "work issued so far" for stream joins and waits
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  ncclComm_t world_ = nullptr;
  std::vector<bool> is_peer_;               ///< [rank]: a pair of communicators joins this rank and it
  std::vector<int> peers_;                  ///< those ranks, ascending
  std::vector<ncclComm_t> to_peer_;         ///< [channel_of]: this rank -> peer (this rank is kSenderRank)
  std::vector<ncclComm_t> from_peer_;       ///< [channel_of]: peer -> this rank (this rank is kReceiverRank)
  std::vector<cudaStream_t> send_streams_;  ///< [channel_of], made when the pairs are connected
  std::deque<PendingOp> pending_;           ///< receives and collectives issued, oldest first
  std::vector<cudaEvent_t> spare_events_;   ///< for pending_, reused
  std::vector<cuda::ExpectedMessage> expected_;  ///< receives since the last envelope check, in order
  std::vector<std::int64_t*> envelope_blocks_;   ///< device; their envelopes, kEnvelopesPerBlock a block
  std::int64_t* envelopes_host_ = nullptr;       ///< pinned, one block: where envelopes are checked
  std::unordered_set<float*> allocations_;
  std::int32_t* staging_host_ = nullptr;  ///< pinned, kPinnedIndices ints
  std::int32_t* staging_device_ = nullptr;
  std::size_t staging_device_capacity_ = 0;
  cudaEvent_t staging_done_ = nullptr;
  float* row_loss_ = nullptr;
  std::size_t row_loss_capacity_ = 0;
  std::vector<cudaEvent_t> marks_;  ///< pool; the first mark_count_ are this step's
  std::vector<int> mark_channels_;  ///< [mark]: the channel (channel_of) whose send stream holds it, or -1
  std::size_t mark_count_ = 0;
  std::int64_t anchor_ns_ = 0;  ///< host steady clock at the first mark
  cuda::SendsSinceMark sends_since_mark_;
};

CudaGroup::~CudaGroup() {
  if (comm_ != nullptr) backend_.close_group(comm_);
}

void CudaSend::wait() {
  if (done_ == nullptr) return;
  backend_.await_send(done_, peer_, tag_, count_);
}

bool CudaSend::done() { return done_ == nullptr || backend_.send_reached(done_); }

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace mpsim::executor
