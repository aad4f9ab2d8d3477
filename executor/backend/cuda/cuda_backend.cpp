#include "executor/backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <limits>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/teardown.h"
#include "executor/backend/cuda/device_rules.h"
#include "executor/backend/cuda/kernels.h"

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

class CudaGroup final : public Group {
 public:
  /// comm is null on ranks outside the group (rank -1), as in the CPU backend.
  CudaGroup(ncclComm_t comm, int size, int rank) : comm_(comm), size_(size), rank_(rank) {}
  ~CudaGroup() override {
    // Destroying needs every member; while an error unwinds the stack, a member may be gone.
    if (comm_ != nullptr) (void)(failing(false) ? ncclCommAbort(comm_) : ncclCommDestroy(comm_));
  }
  CudaGroup(const CudaGroup&) = delete;
  CudaGroup& operator=(const CudaGroup&) = delete;
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  /// Null outside the group, and after a timeout aborted the communicator.
  [[nodiscard]] ncclComm_t& comm() noexcept { return comm_; }

 private:
  ncclComm_t comm_;
  int size_;
  int rank_;
};

class CudaBackend;

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
    MPSIM_MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    MPSIM_MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    select_device();
    MPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&staging_done_, cudaEventDisableTiming));
    void* pinned = nullptr;
    MPSIM_CUDA_TRY(cudaMallocHost(&pinned, kPinnedIndices * sizeof(std::int32_t)));
    staging_host_ = static_cast<std::int32_t*>(pinned);
    MPSIM_CUDA_TRY(cudaMallocHost(&pinned, kHeaderWords * sizeof(std::int64_t)));
    header_host_ = static_cast<std::int64_t*>(pinned);
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
    init_nccl();
  }

  // After a failure only the communicators are aborted (teardown.h): every other step can wait on a
  // peer that is gone, and the process ends next.
  ~CudaBackend() override { tear_down(*this, failing(failed_)); }

  // --- identity -------------------------------------------------------------------------------
  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] int world_rank() const noexcept override { return rank_; }
  [[nodiscard]] int world_size() const noexcept override { return size_; }
  /// Tags travel in the message header as 32-bit integers.
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
    // list; the others take no part in the new communicator.
    ncclComm_t comm = nullptr;
    MPSIM_NCCL_TRY(ncclCommSplit(world_, index >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, std::max(index, 0), &comm, nullptr));
    auto group = std::make_unique<CudaGroup>(index >= 0 ? comm : nullptr, static_cast<int>(world_ranks.size()), index);
    if (index >= 0) {
      // One small all-reduce now: NCCL sets up the group's connections (and allocates for them)
      // here, at start-up, rather than in the middle of a step while sends are in flight.
      float* scratch = allocate(1);
      all_reduce_sum(*group, scratch, 1);
      release(scratch);
    }
    return group;
  }

  /// Each message is an envelope (tag, count: two int64) followed, when count > 0, by the floats.
  /// The envelope lets recv() match by tag like MPI does, although NCCL delivers a pair's
  /// messages strictly in order: a message whose tag is not the one awaited is parked on the
  /// device until a recv() asks for it.
  [[nodiscard]] std::unique_ptr<SendHandle> send(const float* data, std::size_t count, int peer, int tag) override {
    check_peer("send to", peer);
    ncclComm_t comm = pair_comm(to_peer_, peer, "send to");
    // The peer's send stream starts once the work issued so far (which produced `data`) is done;
    // the main stream goes on without waiting for the receiver. Everything below is ordered on
    // the send stream, the envelope's memory included, so the host never waits here.
    cudaStream_t stream = send_stream(peer);
    MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
    MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream, ready_, 0));
    void* header = nullptr;
    MPSIM_CUDA_TRY(cudaMallocAsync(&header, kHeaderWords * sizeof(std::int64_t), stream));
    cuda::launch_write_header(stream, static_cast<std::int64_t*>(header), tag, static_cast<std::int64_t>(count));
    MPSIM_CUDA_TRY_LAUNCH();
    MPSIM_NCCL_TRY(ncclGroupStart());
    MPSIM_NCCL_TRY(ncclSend(header, kHeaderWords, ncclInt64, kReceiverRank, comm, stream));
    MPSIM_NCCL_TRY(ncclGroupEnd());
    if (count > 0) {
      MPSIM_NCCL_TRY(ncclGroupStart());
      MPSIM_NCCL_TRY(ncclSend(data, count, ncclFloat, kReceiverRank, comm, stream));
      MPSIM_NCCL_TRY(ncclGroupEnd());
    }
    MPSIM_CUDA_TRY(cudaFreeAsync(header, stream));
    cudaEvent_t done = nullptr;
    MPSIM_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto handle = std::make_unique<CudaSend>(*this, done, peer, tag, count);  // owns `done` from here
    MPSIM_CUDA_TRY(cudaEventRecord(done, stream));
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

  void recv(float* data, std::size_t count, int peer, int tag) override {
    check_peer("recv from", peer);
    const auto describe = [&] { return fmt::format("no message from rank {} ({} floats, tag {})", peer, count, tag); };
    std::vector<Parked>& parked = parked_[static_cast<std::size_t>(peer)];
    // Among a pair's messages with one tag the first sent is the first received (as in MPI).
    const auto match = std::find_if(parked.begin(), parked.end(), [&](const Parked& p) { return p.tag == tag; });
    if (match != parked.end()) {
      const Parked message = *match;
      parked.erase(match);
      take(message.count, count, peer, tag);
      if (message.count > 0) {
        MPSIM_CUDA_TRY(
            cudaMemcpyAsync(data, message.data, message.count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
        MPSIM_CUDA_TRY(cudaFreeAsync(message.data, stream_));
      }
      return;
    }
    for (;;) {
      ncclComm_t& comm = pair_comm(from_peer_, peer, "recv from");
      MPSIM_NCCL_TRY(ncclGroupStart());
      MPSIM_NCCL_TRY(ncclRecv(header_device_, kHeaderWords, ncclInt64, kSenderRank, comm, stream_));
      MPSIM_NCCL_TRY(ncclGroupEnd());
      MPSIM_CUDA_TRY(cudaMemcpyAsync(header_host_, header_device_, kHeaderWords * sizeof(std::int64_t),
                                     cudaMemcpyDeviceToHost, stream_));
      await_stream(comm, describe);
      const auto arrived_tag = static_cast<int>(header_host_[0]);
      const auto arrived_count = static_cast<std::size_t>(header_host_[1]);
      float* target = data;
      if (arrived_tag == tag) {
        take(arrived_count, count, peer, tag);
      } else {
        target = nullptr;  // an empty message is parked without memory
        if (arrived_count > 0) {
          void* p = nullptr;
          MPSIM_CUDA_TRY(cudaMallocAsync(&p, arrived_count * sizeof(float), stream_));
          target = static_cast<float*>(p);
        }
        parked.push_back({arrived_tag, arrived_count, target});
      }
      if (arrived_count > 0) {
        MPSIM_NCCL_TRY(ncclGroupStart());
        MPSIM_NCCL_TRY(ncclRecv(target, arrived_count, ncclFloat, kSenderRank, comm, stream_));
        MPSIM_NCCL_TRY(ncclGroupEnd());
      }
      if (arrived_tag == tag) {
        if (arrived_count > 0) await_stream(comm, describe);
        return;
      }
    }
  }
  void all_reduce_sum(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "all-reduce");
    if (count == 0) return;
    MPSIM_NCCL_TRY(ncclAllReduce(data, data, count, ncclFloat, ncclSum, g.comm(), stream_));
    await_stream(g.comm(), [&] { return collective_text("all-reduce", g, count); });
  }
  void reduce_scatter_sum(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "reduce-scatter");
    const auto parts = static_cast<std::size_t>(g.size());
    if (count % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("reduce-scatter of {} floats over {} ranks: not divisible", count, parts));
    }
    if (count == 0) return;
    const std::size_t slice = count / parts;
    // NCCL's in-place form: this rank's slice lands at data + rank * slice.
    MPSIM_NCCL_TRY(ncclReduceScatter(data, data + static_cast<std::size_t>(g.rank()) * slice, slice, ncclFloat, ncclSum,
                                     g.comm(), stream_));
    await_stream(g.comm(), [&] { return collective_text("reduce-scatter", g, count); });
  }
  void all_gather(Group& group, float* data, std::size_t count) override {
    CudaGroup& g = member(group, "all-gather");
    const auto parts = static_cast<std::size_t>(g.size());
    if (count % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("all-gather of {} floats over {} ranks: not divisible", count, parts));
    }
    if (count == 0) return;
    const std::size_t slice = count / parts;
    // NCCL's in-place form: this rank's slice is read from data + rank * slice.
    MPSIM_NCCL_TRY(
        ncclAllGather(data + static_cast<std::size_t>(g.rank()) * slice, data, slice, ncclFloat, g.comm(), stream_));
    await_stream(g.comm(), [&] { return collective_text("all-gather", g, count); });
  }
  void all_to_all(Group& group, const float* send, std::span<const std::size_t> send_counts, float* recv,
                  std::span<const std::size_t> recv_counts) override {
    CudaGroup& g = member(group, "all-to-all");
    const auto parts = static_cast<std::size_t>(g.size());
    if (send_counts.size() != parts || recv_counts.size() != parts) {
      MPSIM_CUDA_FAIL(fmt::format("all-to-all with {} and {} counts over {} ranks", send_counts.size(),
                                  recv_counts.size(), parts));
    }
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
    MPSIM_NCCL_TRY(ncclGroupEnd());
    await_stream(g.comm(), [&] { return collective_text("all-to-all", g, sent); });
  }
  void all_to_all_counts(Group& group, std::span<const std::int64_t> send, std::span<std::int64_t> recv) override {
    CudaGroup& g = member(group, "all-to-all of counts");
    const auto parts = static_cast<std::size_t>(g.size());
    if (send.size() != recv.size() || send.size() % parts != 0) {
      MPSIM_CUDA_FAIL(fmt::format("all-to-all of {} counts into {} over {} ranks", send.size(), recv.size(), parts));
    }
    if (send.empty()) return;
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
    MPSIM_NCCL_TRY(ncclGroupEnd());
    await_stream(g.comm(), [&] { return collective_text("all-to-all of counts", g, send.size()); });
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
        nullptr, [&] { return fmt::format("barrier over {} ranks did not complete", size_); });
  }

  // --- time -----------------------------------------------------------------------------------
  [[nodiscard]] int record_mark() override {
    if (mark_count_ == 0) {
      // The first mark anchors the device's clock to the host's: with the stream drained (it is,
      // right after a barrier) the event is reached at once, so host time now is its time.
      MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
      anchor_ns_ = steady_now_ns();
    }
    if (mark_count_ == marks_.size()) {
      cudaEvent_t event = nullptr;
      MPSIM_CUDA_TRY(cudaEventCreate(&event));
      marks_.push_back(event);
    }
    MPSIM_CUDA_TRY(cudaEventRecord(marks_[mark_count_], stream_));
    return static_cast<int>(mark_count_++);
  }
  void synchronize() override { MPSIM_CUDA_TRY(cudaStreamSynchronize(stream_)); }
  [[nodiscard]] std::vector<std::int64_t> mark_times_ns() override {
    synchronize();
    std::vector<std::int64_t> times;
    times.reserve(mark_count_);
    for (std::size_t i = 0; i < mark_count_; ++i) {
      float ms = 0;
      MPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, marks_[0], marks_[i]));
      times.push_back(anchor_ns_ + std::llround(static_cast<double>(ms) * 1e6));
    }
    return times;
  }
  void reset_marks() override { mark_count_ = 0; }

  /// Waits, under the peer timeout, for the send whose completion `done` records.
  void await_send(cudaEvent_t done, int peer, int tag, std::size_t count) {
    poll_until([&] { return query(done); }, &to_peer_[static_cast<std::size_t>(peer)],
               [&] { return fmt::format("send to rank {} ({} floats, tag {}) was not received", peer, count, tag); });
  }

 private:
  // Ranks inside a two-rank point-to-point communicator: the sender is 0, the receiver 1.
  static constexpr int kSenderRank = 0;
  static constexpr int kReceiverRank = 1;
  /// Tokens or labels of one microbatch fit easily (a million ints, 4 MiB).
  static constexpr std::size_t kPinnedIndices = std::size_t{1} << 20;
  /// What cuBLAS asks for on Hopper (32 MiB); more than enough before it.
  static constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;
  /// A point-to-point envelope: tag, count.
  static constexpr std::size_t kHeaderWords = 2;

  /// A message that arrived before the recv() that wants it, kept in device memory.
  struct Parked {
    int tag = 0;
    std::size_t count = 0;
    float* data = nullptr;
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

  /// The world communicator (parent of the groups), then one two-rank communicator per direction
  /// between this rank and each of its peers (BackendOptions::peers; all other ranks when empty) for
  /// point-to-point, all connected before the first step.
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
    MPSIM_NCCL_TRY(ncclCommInitRank(&world_, size_, world_id, rank_));

    const auto n = static_cast<std::size_t>(size_);
    to_peer_.assign(n, nullptr);
    from_peer_.assign(n, nullptr);
    send_streams_.assign(n, nullptr);
    parked_.assign(n, {});
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
    void* header = nullptr;
    MPSIM_CUDA_TRY(cudaMallocAsync(&header, kHeaderWords * sizeof(std::int64_t), stream_));
    header_device_ = static_cast<std::int64_t*>(header);
    if (size_ == 1) return;
    constexpr int kIdBytes = static_cast<int>(sizeof(ncclUniqueId));
    // Each rank makes the ids of the communicators it sends on and hands each to its receiver, peer
    // by peer in ascending order: every pair meets at the same point of one global order of pairs,
    // so no rank waits on another that is busy with a different pair.
    std::vector<ncclUniqueId> outgoing(n);
    std::vector<ncclUniqueId> incoming(n);
    for (const int peer : peers_) {
      const auto p = static_cast<std::size_t>(peer);
      MPSIM_NCCL_TRY(ncclGetUniqueId(&outgoing[p]));
      MPSIM_MPI_TRY(MPI_Sendrecv(&outgoing[p], kIdBytes, MPI_BYTE, peer, 0, &incoming[p], kIdBytes, MPI_BYTE, peer, 0,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    // One group: NCCL initialises the communicators concurrently.
    MPSIM_NCCL_TRY(ncclGroupStart());
    for (const int peer : peers_) {
      const auto p = static_cast<std::size_t>(peer);
      MPSIM_NCCL_TRY(ncclCommInitRank(&to_peer_[p], 2, outgoing[p], kSenderRank));
      MPSIM_NCCL_TRY(ncclCommInitRank(&from_peer_[p], 2, incoming[p], kReceiverRank));
    }
    MPSIM_NCCL_TRY(ncclGroupEnd());
    connect_pairs();
  }

  /// NCCL connects a pair at its first message, and that handshake blocks until both sides reach
  /// it. One float each way per pair (both in one NCCL group), peer by peer in ascending order (one
  /// global order of pairs, as above), connects every pair now, so no send of a step can block.
  void connect_pairs() {
    float* scratch = allocate(2);
    for (const int peer : peers_) {
      const auto p = static_cast<std::size_t>(peer);
      cudaStream_t stream = send_stream(peer);
      MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
      MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream, ready_, 0));
      MPSIM_NCCL_TRY(ncclGroupStart());
      MPSIM_NCCL_TRY(ncclSend(scratch, 1, ncclFloat, kReceiverRank, to_peer_[p], stream));
      MPSIM_NCCL_TRY(ncclRecv(scratch + 1, 1, ncclFloat, kSenderRank, from_peer_[p], stream_));
      MPSIM_NCCL_TRY(ncclGroupEnd());
      MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream));
      MPSIM_CUDA_TRY(cudaStreamWaitEvent(stream_, ready_, 0));
      await_stream(from_peer_[p], [&] { return fmt::format("connecting with rank {} did not complete", peer); });
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
    if (header_device_ != nullptr) (void)cudaFreeAsync(header_device_, stream_);
    for (const auto& messages : parked_) {
      for (const Parked& message : messages) {
        if (message.data != nullptr) (void)cudaFreeAsync(message.data, stream_);
      }
    }
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
    if (staging_host_ != nullptr) (void)cudaFreeHost(staging_host_);
    if (header_host_ != nullptr) (void)cudaFreeHost(header_host_);
    for (cudaEvent_t event : marks_) (void)cudaEventDestroy(event);
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

  void close_communicators() noexcept {
    // Pairs are destroyed in one global order (lower rank's direction first) so no two ranks wait
    // on each other in opposite orders.
    const auto close = [](ncclComm_t& comm) {
      if (comm == nullptr) return;
      (void)ncclCommDestroy(comm);
      comm = nullptr;
    };
    for (int lo = 0; lo < size_; ++lo) {
      for (int hi = lo + 1; hi < size_; ++hi) {
        if (lo != rank_ && hi != rank_) continue;
        const auto other = static_cast<std::size_t>(lo == rank_ ? hi : lo);
        if (lo == rank_) {
          close(to_peer_[other]);
          close(from_peer_[other]);
        } else {
          close(from_peer_[other]);
          close(to_peer_[other]);
        }
      }
    }
    close(world_);
  }

  cudaStream_t send_stream(int peer) {
    cudaStream_t& stream = send_streams_[static_cast<std::size_t>(peer)];
    if (stream == nullptr) MPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }

  /// A message of `arrived` floats fits a recv of `room` (fewer fill its start, as with MPI).
  static void take(std::size_t arrived, std::size_t room, int peer, int tag) {
    if (arrived > room) {
      MPSIM_CUDA_FAIL(
          fmt::format("message from rank {} with tag {} has {} floats, the recv takes {}", peer, tag, arrived, room));
    }
  }

  void check_peer(const char* what, int peer) const {
    if (peer < 0 || peer >= size_ || peer == rank_) {
      MPSIM_CUDA_FAIL(fmt::format("{} rank {}: not another rank of a world of {}", what, peer, size_));
    }
  }

  ncclComm_t& pair_comm(std::vector<ncclComm_t>& comms, int peer, const char* what) {
    if (!is_peer_[static_cast<std::size_t>(peer)]) {
      MPSIM_CUDA_FAIL(fmt::format("{} rank {}: not one of this rank's peers (BackendOptions::peers), so no channel", what,
                                  peer));
    }
    ncclComm_t& comm = comms[static_cast<std::size_t>(peer)];
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
        nullptr, [&] { return fmt::format("{} rank {} ({} floats, tag {}, host)", what, peer, count, tag); });
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
      // The previous copy out of the pinned buffer must be done before it is overwritten.
      MPSIM_CUDA_TRY(cudaEventSynchronize(staging_done_));
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

  /// Waits, under the peer timeout, for everything issued so far on the main stream; `comm` is the
  /// communicator whose operation it waits on.
  template <class Describe>
  void await_stream(ncclComm_t& comm, Describe describe) {
    MPSIM_CUDA_TRY(cudaEventRecord(ready_, stream_));
    poll_until([&] { return query(ready_); }, &comm, describe);
  }

  /// Polls `done` until it returns true. Past the peer timeout, or when NCCL reports an
  /// asynchronous error on *comm, aborts *comm (so its kernels stop) and throws BackendError with
  /// describe(). Sleeps between polls once the wait is not short, like the CPU backend, so ranks
  /// sharing cores leave them to the ones computing.
  template <class Done, class Describe>
  void poll_until(Done done, ncclComm_t* comm, Describe describe) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.peer_timeout_s);
    for (int polls = 0;; ++polls) {
      if (done()) return;
      if (comm != nullptr && *comm != nullptr) {
        ncclResult_t async = ncclSuccess;
        MPSIM_NCCL_TRY(ncclCommGetAsyncError(*comm, &async));
        if (async != ncclSuccess && async != ncclInProgress) {
          fail(comm, fmt::format("{}: NCCL reported {}", describe(), ncclGetErrorString(async)));
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        fail(comm, fmt::format("{} within {:g} s", describe(), options_.peer_timeout_s));
      }
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(polls > 4096 ? 200 : 20));
    }
  }

  [[noreturn]] void fail(ncclComm_t* comm, const std::string& what) {
    failed_ = true;
    if (comm != nullptr && *comm != nullptr) {
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
  std::vector<bool> is_peer_;                ///< [rank]: a pair of communicators joins this rank and it
  std::vector<int> peers_;                   ///< those ranks, ascending
  std::vector<ncclComm_t> to_peer_;          ///< [peer]: this rank -> peer (this rank is kSenderRank)
  std::vector<ncclComm_t> from_peer_;        ///< [peer]: peer -> this rank (this rank is kReceiverRank)
  std::vector<cudaStream_t> send_streams_;   ///< [peer], made when the pairs are connected
  std::vector<std::vector<Parked>> parked_;  ///< [peer], in arrival order
  std::int64_t* header_device_ = nullptr;    ///< where a recv's envelope lands
  std::int64_t* header_host_ = nullptr;      ///< pinned; the envelope read on the host
  std::unordered_set<float*> allocations_;
  std::int32_t* staging_host_ = nullptr;  ///< pinned, kPinnedIndices ints
  std::int32_t* staging_device_ = nullptr;
  std::size_t staging_device_capacity_ = 0;
  cudaEvent_t staging_done_ = nullptr;
  float* row_loss_ = nullptr;
  std::size_t row_loss_capacity_ = 0;
  std::vector<cudaEvent_t> marks_;  ///< pool; the first mark_count_ are this step's
  std::size_t mark_count_ = 0;
  std::int64_t anchor_ns_ = 0;  ///< host steady clock at the first mark
};

void CudaSend::wait() {
  if (done_ == nullptr) return;
  backend_.await_send(done_, peer_, tag_, count_);
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace mpsim::executor
