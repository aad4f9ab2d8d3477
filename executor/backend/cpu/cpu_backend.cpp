#include "executor/backend/cpu/cpu_backend.h"

#include <mpi.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_map>

#include <Eigen/Dense>

#include "executor/backend/teardown.h"
#include <fmt/format.h>

namespace mpsim::executor {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>>;

MatMap map(MatrixView m) { return {m.data, m.rows, m.cols, Eigen::OuterStride<>(m.ld)}; }

float* row(MatrixView m, std::int64_t r) { return m.data + r * m.ld; }

/// Columns row r of `x` keeps under softmax_forward's causal rule (backend.h).
std::int64_t kept_columns(MatrixView x, std::int64_t r, bool causal) {
  return causal ? std::min(r + 1 + std::max<std::int64_t>(0, x.cols - x.rows), x.cols) : x.cols;
}

/// Throws BackendError naming the call and its MPI error string.
void mpi_check(int code, const char* what, int rank) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw BackendError(fmt::format("rank {}: {} failed: {}", rank, what, std::string(text, static_cast<std::size_t>(length))));
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

class CpuGroup final : public Group {
 public:
  CpuGroup(MPI_Comm comm, int size, int rank) : comm_(comm), size_(size), rank_(rank) {}
  ~CpuGroup() override {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  CpuGroup(const CpuGroup&) = delete;
  CpuGroup& operator=(const CpuGroup&) = delete;
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] MPI_Comm comm() const noexcept { return comm_; }

 private:
  MPI_Comm comm_;
  int size_;
  int rank_;
};

/// Freed buffers stay with the process for the next allocation, as a GPU framework's caching
/// allocator keeps device memory. glibc would otherwise map each large buffer afresh and unmap it on
/// free, so a pass pays page faults on every activation it writes whenever the buffers of the last
/// pass were all freed first (the profiler's repetitions; not a schedule, where other microbatches'
/// buffers stay live): the profiled forward of cpu-gpt-small's blocks took 6.6 ms that way against
/// 5.7 ms with memory kept, and a schedule's forward passes 5.7 ms either way.
void keep_freed_memory() noexcept {
#if defined(__GLIBC__)
  constexpr int kNeverMapped = 1 << 30;    // allocations below 1 GiB come from the heap ...
  constexpr int kNeverTrimmed = 1 << 30;   // ... and freed heap memory is not given back below 1 GiB
  mallopt(M_MMAP_THRESHOLD, kNeverMapped);
  mallopt(M_TRIM_THRESHOLD, kNeverTrimmed);
#endif
}

class CpuBackend;

class CpuSend final : public SendHandle {
 public:
  CpuSend(CpuBackend& backend, MPI_Request request, int peer, int tag)
      : backend_(backend), request_(request), peer_(peer), tag_(tag) {}
  ~CpuSend() override;
  CpuSend(const CpuSend&) = delete;
  CpuSend& operator=(const CpuSend&) = delete;
  void wait() override;
  [[nodiscard]] bool done() override;

 private:
  CpuBackend& backend_;
  MPI_Request request_;
  int peer_;
  int tag_;
};

class CpuBackend final : public Backend, private TeardownSteps {
 public:
  explicit CpuBackend(const BackendOptions& options) : options_(options) {
    keep_freed_memory();
    int initialized = 0;
    MPI_Initialized(&initialized);
    mpi_ = initialized != 0;
    if (mpi_) {
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
    }
  }
  ~CpuBackend() override { tear_down(*this, failing(failed_)); }

  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] int world_rank() const noexcept override { return rank_; }
  [[nodiscard]] int world_size() const noexcept override { return size_; }
  [[nodiscard]] std::int64_t max_tag() const override {
    int* bound = nullptr;
    int found = 0;
    mpi_check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found), "MPI_Comm_get_attr", -1);
    return found != 0 && bound != nullptr ? *bound : 32767;  // the standard's guaranteed minimum
  }

  [[nodiscard]] float* allocate(std::size_t count) override {
    // calloc gives the zero fill; count 0 still yields a distinct pointer.
    void* p = std::calloc(std::max<std::size_t>(count, 1), sizeof(float));
    if (p == nullptr) throw BackendError(fmt::format("rank {}: out of host memory ({} floats)", rank_, count));
    auto* data = static_cast<float*>(p);
    buffers_.emplace(data, p);
    return data;
  }
  void release(float* data) noexcept override {
    const auto it = buffers_.find(data);
    if (it == buffers_.end()) return;
    std::free(it->second);
    buffers_.erase(it);
  }
  void upload(std::span<const float> host, float* device) override {
    std::copy(host.begin(), host.end(), device);
  }
  void download(const float* device, std::span<float> host) override {
    std::copy(device, device + host.size(), host.begin());
  }
  void copy(MatrixView from, MatrixView to) override { map(to) = map(from); }
  void fill(MatrixView m, float value) override { map(m).setConstant(value); }

  void gemm(Transpose ta, Transpose tb, float alpha, MatrixView a, MatrixView b, float beta, MatrixView c) override {
    MatMap cm = map(c);
    const MatMap am = map(a);
    const MatMap bm = map(b);
    if (beta == 0.0f) {
      cm.setZero();  // beta = 0 ignores what c held, NaN included
    } else if (beta != 1.0f) {
      cm *= beta;
    }
    const bool at = ta == Transpose::Yes;
    const bool bt = tb == Transpose::Yes;
    if (!at && !bt) cm.noalias() += alpha * (am * bm);
    if (at && !bt) cm.noalias() += alpha * (am.transpose() * bm);
    if (!at && bt) cm.noalias() += alpha * (am * bm.transpose());
    if (at && bt) cm.noalias() += alpha * (am.transpose() * bm.transpose());
  }
  void axpy(float alpha, MatrixView x, MatrixView y) override { map(y) += alpha * map(x); }
  void add_row_vector(const float* bias, MatrixView y) override {
    for (std::int64_t r = 0; r < y.rows; ++r) {
      float* yr = row(y, r);
      for (std::int64_t c = 0; c < y.cols; ++c) yr[c] += bias[c];
    }
  }
  void sum_rows(MatrixView dy, float beta, float* grad) override {
    for (std::int64_t c = 0; c < dy.cols; ++c) grad[c] = beta == 0.0f ? 0.0f : beta * grad[c];
    for (std::int64_t r = 0; r < dy.rows; ++r) {
      const float* d = row(dy, r);
      for (std::int64_t c = 0; c < dy.cols; ++c) grad[c] += d[c];
    }
  }
  void gelu_forward(MatrixView x, MatrixView y) override {
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      float* yr = row(y, r);
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const float v = xr[c];
        yr[c] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
      }
    }
  }
  void gelu_backward(MatrixView x, MatrixView dy, MatrixView dx) override {
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      const float* dyr = row(dy, r);
      float* dxr = row(dx, r);
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const float v = xr[c];
        const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
        const float t = std::tanh(u);
        const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
        dxr[c] = dyr[c] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
      }
    }
  }
  void layer_norm_forward(MatrixView x, const float* gamma, const float* beta, float epsilon, MatrixView y, float* mean,
                          float* rstd) override {
    const auto n = static_cast<double>(x.cols);
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      double sum = 0;
      for (std::int64_t c = 0; c < x.cols; ++c) sum += xr[c];
      const double mu = sum / n;
      double var = 0;
      for (std::int64_t c = 0; c < x.cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
      const double rs = 1.0 / std::sqrt(var / n + epsilon);
      mean[r] = static_cast<float>(mu);
      rstd[r] = static_cast<float>(rs);
      float* yr = row(y, r);
      for (std::int64_t c = 0; c < x.cols; ++c) {
        yr[c] = static_cast<float>((xr[c] - mu) * rs) * gamma[c] + beta[c];
      }
    }
  }
  void layer_norm_backward(MatrixView dy, MatrixView x, const float* gamma, const float* mean, const float* rstd,
                           MatrixView dx, float* dgamma, float* dbeta) override {
    const auto n = static_cast<double>(x.cols);
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      const float* dyr = row(dy, r);
      float* dxr = row(dx, r);
      double sum_g = 0;
      double sum_gx = 0;
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const double xhat = (xr[c] - mean[r]) * rstd[r];
        const double g = static_cast<double>(dyr[c]) * gamma[c];
        sum_g += g;
        sum_gx += g * xhat;
        dgamma[c] += static_cast<float>(dyr[c] * xhat);
        dbeta[c] += dyr[c];
      }
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const double xhat = (xr[c] - mean[r]) * rstd[r];
        const double g = static_cast<double>(dyr[c]) * gamma[c];
        dxr[c] = static_cast<float>(rstd[r] * (g - sum_g / n - xhat * sum_gx / n));
      }
    }
  }
  void softmax_forward(MatrixView x, float scale, bool causal, MatrixView y) override {
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      float* yr = row(y, r);
      const std::int64_t keep = causal ? std::min(r + 1 + std::max<std::int64_t>(0, x.cols - x.rows), x.cols) : x.cols;
      float top = -INFINITY;
      for (std::int64_t c = 0; c < keep; ++c) top = std::max(top, scale * xr[c]);
      double sum = 0;
      for (std::int64_t c = 0; c < keep; ++c) {
        const float e = std::exp(scale * xr[c] - top);
        yr[c] = e;
        sum += e;
      }
      const auto inv = static_cast<float>(1.0 / sum);
      for (std::int64_t c = 0; c < keep; ++c) yr[c] *= inv;
      for (std::int64_t c = keep; c < x.cols; ++c) yr[c] = 0.0f;
    }
  }
  void softmax_backward(MatrixView y, MatrixView dy, float scale, MatrixView dx) override {
    for (std::int64_t r = 0; r < y.rows; ++r) {
      const float* yr = row(y, r);
      const float* dyr = row(dy, r);
      float* dxr = row(dx, r);
      double dot = 0;
      for (std::int64_t c = 0; c < y.cols; ++c) dot += static_cast<double>(dyr[c]) * yr[c];
      for (std::int64_t c = 0; c < y.cols; ++c) dxr[c] = scale * yr[c] * (dyr[c] - static_cast<float>(dot));
    }
  }
  void softmax_forward_lse(MatrixView x, float scale, bool causal, MatrixView y, float* lse) override {
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      const std::int64_t keep = kept_columns(x, r, causal);
      float top = -INFINITY;
      for (std::int64_t c = 0; c < keep; ++c) top = std::max(top, scale * xr[c]);
      double sum = 0;
      for (std::int64_t c = 0; c < keep; ++c) sum += std::exp(scale * xr[c] - top);
      lse[r] = top + static_cast<float>(std::log(sum));
    }
    softmax_from_lse(x, scale, causal, lse, y);
  }
  void softmax_from_lse(MatrixView x, float scale, bool causal, const float* lse, MatrixView y) override {
    for (std::int64_t r = 0; r < x.rows; ++r) {
      const float* xr = row(x, r);
      float* yr = row(y, r);
      const std::int64_t keep = kept_columns(x, r, causal);
      for (std::int64_t c = 0; c < x.cols; ++c) yr[c] = c < keep ? std::exp(scale * xr[c] - lse[r]) : 0.0f;
    }
  }
  void merge_attention(MatrixView out, float* lse, MatrixView part, const float* part_lse) override {
    for (std::int64_t r = 0; r < out.rows; ++r) {
      const float top = std::max(lse[r], part_lse[r]);
      const float merged = top + std::log(std::exp(lse[r] - top) + std::exp(part_lse[r] - top));
      const float keep = std::exp(lse[r] - merged);
      const float take = std::exp(part_lse[r] - merged);
      float* o = row(out, r);
      const float* p = row(part, r);
      for (std::int64_t c = 0; c < out.cols; ++c) o[c] = keep * o[c] + take * p[c];
      lse[r] = merged;
    }
  }
  void row_dot(MatrixView a, MatrixView b, float* out) override {
    for (std::int64_t r = 0; r < a.rows; ++r) {
      const float* ar = row(a, r);
      const float* br = row(b, r);
      double dot = 0;
      for (std::int64_t c = 0; c < a.cols; ++c) dot += static_cast<double>(ar[c]) * br[c];
      out[r] = static_cast<float>(dot);
    }
  }
  void softmax_backward_rows(MatrixView y, MatrixView dy, float scale, const float* row_sum, MatrixView dx) override {
    for (std::int64_t r = 0; r < y.rows; ++r) {
      const float* yr = row(y, r);
      const float* dyr = row(dy, r);
      float* dxr = row(dx, r);
      for (std::int64_t c = 0; c < y.cols; ++c) dxr[c] = scale * yr[c] * (dyr[c] - row_sum[r]);
    }
  }
  void embedding_forward(MatrixView table, std::span<const std::int32_t> tokens, MatrixView out) override {
    for (std::size_t r = 0; r < tokens.size(); ++r) {
      const float* t = row(table, tokens[r]);
      float* o = row(out, static_cast<std::int64_t>(r));
      for (std::int64_t c = 0; c < out.cols; ++c) o[c] += t[c];
    }
  }
  void embedding_backward(MatrixView dout, std::span<const std::int32_t> tokens, MatrixView dtable) override {
    for (std::size_t r = 0; r < tokens.size(); ++r) {
      const float* d = row(dout, static_cast<std::int64_t>(r));
      float* t = row(dtable, tokens[r]);
      for (std::int64_t c = 0; c < dout.cols; ++c) t[c] += d[c];
    }
  }
  double cross_entropy(MatrixView logits, std::span<const std::int32_t> labels, float scale,
                       MatrixView dlogits) override {
    double total = 0;
    const auto rows = static_cast<double>(logits.rows);
    for (std::int64_t r = 0; r < logits.rows; ++r) {
      const float* x = row(logits, r);
      float* d = row(dlogits, r);
      const float top = *std::max_element(x, x + logits.cols);
      double sum = 0;
      for (std::int64_t c = 0; c < logits.cols; ++c) sum += std::exp(static_cast<double>(x[c] - top));
      const double log_sum = std::log(sum) + top;
      const auto label = labels[static_cast<std::size_t>(r)];
      total += log_sum - x[label];
      for (std::int64_t c = 0; c < logits.cols; ++c) {
        const double p = std::exp(static_cast<double>(x[c]) - log_sum);
        d[c] = static_cast<float>(scale * (p - (c == label ? 1.0 : 0.0)) / rows);
      }
    }
    return total / rows;
  }
  void sgd_step(float* param, const float* grad, std::size_t count, float learning_rate) override {
    for (std::size_t i = 0; i < count; ++i) param[i] -= learning_rate * grad[i];
  }
  void adam_step(float* param, const float* grad, float* m, float* v, std::size_t count,
                 const AdamHyper& hyper) override {
    const double c1 = 1.0 - std::pow(static_cast<double>(hyper.beta1), hyper.step);
    const double c2 = 1.0 - std::pow(static_cast<double>(hyper.beta2), hyper.step);
    for (std::size_t i = 0; i < count; ++i) {
      m[i] = hyper.beta1 * m[i] + (1.0f - hyper.beta1) * grad[i];
      v[i] = hyper.beta2 * v[i] + (1.0f - hyper.beta2) * grad[i] * grad[i];
      const double mh = m[i] / c1;
      const double vh = v[i] / c2;
      param[i] -= static_cast<float>(hyper.learning_rate * mh / (std::sqrt(vh) + hyper.epsilon));
    }
  }

  [[nodiscard]] std::unique_ptr<Group> make_group(std::span<const int> world_ranks) override {
    require_mpi("make_group");
    MPI_Group world_group = MPI_GROUP_NULL;
    MPI_Group sub = MPI_GROUP_NULL;
    mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", rank_);
    mpi_check(MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &sub),
              "MPI_Group_incl", rank_);
    MPI_Comm comm = MPI_COMM_NULL;
    // Collective over the world (every rank passes the same list); non-members get MPI_COMM_NULL.
    mpi_check(MPI_Comm_create(MPI_COMM_WORLD, sub, &comm), "MPI_Comm_create", rank_);
    MPI_Group_free(&sub);
    MPI_Group_free(&world_group);
    const auto it = std::find(world_ranks.begin(), world_ranks.end(), rank_);
    const int index = it == world_ranks.end() ? -1 : static_cast<int>(it - world_ranks.begin());
    return std::make_unique<CpuGroup>(comm, static_cast<int>(world_ranks.size()), index);
  }

  [[nodiscard]] std::unique_ptr<SendHandle> send(const float* data, std::size_t count, int peer, int tag) override {
    require_mpi("send");
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Isend(data, static_cast<int>(count), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &request), "MPI_Isend",
              rank_);
    return std::make_unique<CpuSend>(*this, request, peer, tag);
  }
  void recv(float* data, std::size_t count, int peer, int tag) override {
    require_mpi("recv");
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Irecv(data, static_cast<int>(count), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &request), "MPI_Irecv",
              rank_);
    wait(request, [&] { return fmt::format("no message from rank {}", peer); }, tag);
  }
  // Host memory is this backend's memory: the same messages.
  void host_send(std::span<const float> data, int peer, int tag) override {
    send(data.data(), data.size(), peer, tag)->wait();
  }
  void host_recv(std::span<float> data, int peer, int tag) override { recv(data.data(), data.size(), peer, tag); }
  void all_reduce_sum(Group& group, float* data, std::size_t count) override {
    auto& g = member(group, "all-reduce");
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, g.comm(), &request),
              "MPI_Iallreduce", rank_);
    wait(request, [&] { return collective_text("all-reduce", g); }, -1);
  }
  void reduce_scatter_sum(Group& group, float* data, std::size_t count) override {
    auto& g = member(group, "reduce-scatter");
    const std::size_t slice = count / static_cast<std::size_t>(g.size());
    std::vector<float> mine(slice);
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Ireduce_scatter_block(data, mine.data(), static_cast<int>(slice), MPI_FLOAT, MPI_SUM, g.comm(),
                                        &request),
              "MPI_Ireduce_scatter_block", rank_);
    wait(request, [&] { return collective_text("reduce-scatter", g); }, -1);
    std::copy(mine.begin(), mine.end(), data + static_cast<std::size_t>(g.rank()) * slice);
  }
  void all_gather(Group& group, float* data, std::size_t count) override {
    auto& g = member(group, "all-gather");
    const std::size_t slice = count / static_cast<std::size_t>(g.size());
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, static_cast<int>(slice), MPI_FLOAT, g.comm(),
                             &request),
              "MPI_Iallgather", rank_);
    wait(request, [&] { return collective_text("all-gather", g); }, -1);
  }
  void all_to_all(Group& group, const float* send, std::span<const std::size_t> send_counts, float* recv,
                  std::span<const std::size_t> recv_counts) override {
    auto& g = member(group, "all-to-all");
    const std::vector<int> sends = as_ints(send_counts, g, "all-to-all");
    const std::vector<int> recvs = as_ints(recv_counts, g, "all-to-all");
    const std::vector<int> send_at = offsets(sends);
    const std::vector<int> recv_at = offsets(recvs);
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Ialltoallv(send, sends.data(), send_at.data(), MPI_FLOAT, recv, recvs.data(), recv_at.data(),
                             MPI_FLOAT, g.comm(), &request),
              "MPI_Ialltoallv", rank_);
    wait(request, [&] { return collective_text("all-to-all", g); }, -1);
  }
  void all_to_all_counts(Group& group, std::span<const std::int64_t> send, std::span<std::int64_t> recv) override {
    auto& g = member(group, "all-to-all of counts");
    const auto size = static_cast<std::size_t>(g.size());
    if (send.size() != recv.size() || send.size() % size != 0) {
      throw BackendError(fmt::format("rank {}: all-to-all of {} counts into {} over {} ranks", rank_, send.size(),
                                     recv.size(), size));
    }
    const int block = static_cast<int>(send.size() / size);
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Ialltoall(send.data(), block, MPI_INT64_T, recv.data(), block, MPI_INT64_T, g.comm(), &request),
              "MPI_Ialltoall", rank_);
    wait(request, [&] { return collective_text("all-to-all of counts", g); }, -1);
  }
  void barrier() override {
    if (!mpi_) return;  // a world of one
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier", rank_);
    wait(request, [&] { return fmt::format("barrier over {} ranks did not complete", size_); }, -1);
  }

  [[nodiscard]] int record_mark() override {
    marks_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count());
    return static_cast<int>(marks_.size() - 1);
  }
  void synchronize() override {}  // host calls complete on return
  [[nodiscard]] std::vector<std::int64_t> mark_times_ns() override { return marks_; }
  void reset_marks() override { marks_.clear(); }

  /// Polls `request` until it completes or the peer timeout passes. Sleeps between polls once the
  /// request has not completed quickly, so ranks sharing few cores leave them to the ones computing.
  template <class Describe>
  void wait(MPI_Request& request, Describe describe, int tag) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.peer_timeout_s);
    for (int polls = 0;; ++polls) {
      int done = 0;
      mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", rank_);
      if (done != 0) return;
      if (std::chrono::steady_clock::now() > deadline) {
        failed_ = true;
        throw BackendError(fmt::format("rank {}: {} within {:g} s{}", rank_, describe(), options_.peer_timeout_s,
                                       tag >= 0 ? fmt::format(" (tag {})", tag) : std::string()));
      }
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(polls > 4096 ? 200 : 20));
    }
  }

 private:
  void require_mpi(const char* what) const {
    if (!mpi_) throw BackendError(fmt::format("rank 0: {} needs MPI, which is not initialised", what));
  }
  CpuGroup& member(Group& group, const char* what) const {
    auto& g = static_cast<CpuGroup&>(group);
    if (g.comm() == MPI_COMM_NULL) {
      throw BackendError(fmt::format("rank {}: {} over a group this rank is not part of", rank_, what));
    }
    return g;
  }
  /// MPI's counts are ints: one per group rank, each below 2^31 floats.
  [[nodiscard]] std::vector<int> as_ints(std::span<const std::size_t> counts, const CpuGroup& g, const char* what) const {
    if (counts.size() != static_cast<std::size_t>(g.size())) {
      throw BackendError(fmt::format("rank {}: {} with {} counts over {} ranks", rank_, what, counts.size(), g.size()));
    }
    std::vector<int> out;
    out.reserve(counts.size());
    for (const std::size_t c : counts) {
      if (c > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        throw BackendError(fmt::format("rank {}: {} of {} floats to one rank exceeds MPI's int counts", rank_, what, c));
      }
      out.push_back(static_cast<int>(c));
    }
    return out;
  }
  [[nodiscard]] static std::vector<int> offsets(const std::vector<int>& counts) {
    std::vector<int> out(counts.size(), 0);
    for (std::size_t j = 1; j < counts.size(); ++j) out[j] = out[j - 1] + counts[j - 1];
    return out;
  }
  [[nodiscard]] std::string collective_text(const char* what, const CpuGroup& g) const {
    return fmt::format("{} over {} ranks did not complete (a peer died or stopped answering)", what, g.size());
  }

  BackendOptions options_;
  // Teardown (teardown.h). MPI requests need no stopping: MPI_Abort ends them with the job.
  void abort_channels() noexcept override {}
  void drain() noexcept override {}
  void release_memory() noexcept override {
    for (auto& [data, buffer] : buffers_) std::free(buffer);
    buffers_.clear();
  }
  void close_channels() noexcept override {}

  bool mpi_ = false;  // false: math only (unit tests), a world of one rank
  bool failed_ = false;  // a wait timed out, or abandon(): tear down as failed
  int rank_ = 0;
  int size_ = 1;
  std::unordered_map<float*, void*> buffers_;
  std::vector<std::int64_t> marks_;
};

CpuSend::~CpuSend() {
  // A send nobody waited for is cancelled-by-completion: by the end of a step its receiver has it.
  if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
}

void CpuSend::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  backend_.wait(request_, [&] { return fmt::format("send to rank {} was not received", peer_); }, tag_);
}

bool CpuSend::done() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int flag = 0;
  mpi_check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test", backend_.world_rank());
  return flag != 0;
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) { return std::make_unique<CpuBackend>(options); }

}  // namespace mpsim::executor
