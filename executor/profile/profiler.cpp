#include "executor/profile/profiler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace mpsim::executor::profile {
namespace {

/// Device memory released on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(Backend& backend, std::size_t count)
      : backend_(backend), data_(backend.allocate(count)), count_(count) {}
  ~DeviceBuffer() { backend_.release(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] float* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// The buffer as a rows x cols row-major matrix.
  [[nodiscard]] MatrixView matrix(std::int64_t rows, std::int64_t cols) const noexcept {
    return {data_, rows, cols, cols};
  }

 private:
  Backend& backend_;
  float* data_;
  std::size_t count_;
};

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (const double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Runs `body` `reps` times and returns the seconds of each repetition, from the backend's marks
/// (so a CUDA backend times its stream, not the host's issue).
template <typename Body>
std::vector<double> time_repetitions(Backend& backend, int reps, Body&& body) {
  backend.reset_marks();
  static_cast<void>(backend.record_mark());
  for (int r = 0; r < reps; ++r) {
    body();
    static_cast<void>(backend.record_mark());
  }
  backend.synchronize();
  const std::vector<std::int64_t> marks = backend.mark_times_ns();
  backend.reset_marks();
  std::vector<double> seconds;
  for (std::size_t i = 1; i < marks.size(); ++i) seconds.push_back(static_cast<double>(marks[i] - marks[i - 1]) * 1e-9);
  return seconds;
}

/// Element-wise sum over all ranks of `values`, through the backend's all-reduce.
std::vector<float> sum_over_ranks(Backend& backend, Group& world, std::vector<float> values) {
  if (world.size() == 1 || values.empty()) return values;
  DeviceBuffer buffer(backend, values.size());
  backend.upload(values, buffer.data());
  backend.all_reduce_sum(world, buffer.data(), values.size());
  backend.download(buffer.data(), values);
  return values;
}

/// One value all ranks agree on: the mean over ranks of each rank's `value`.
double mean_over_ranks(Backend& backend, Group& world, double value) {
  const std::vector<float> sum = sum_over_ranks(backend, world, {static_cast<float>(value)});
  return static_cast<double>(sum[0]) / world.size();
}

/// Repetitions so that the body takes about `target_s`, agreed by all ranks (they then run together).
int agreed_repetitions(Backend& backend, Group& world, double one_s, const ProfileOptions& options) {
  const double mean_s = mean_over_ranks(backend, world, one_s);
  const double wanted = mean_s > 0 ? options.seconds_per_measurement / mean_s : options.max_repetitions;
  return std::clamp(static_cast<int>(std::ceil(wanted)), 3, std::max(3, options.max_repetitions));
}

GemmMeasurement measure_gemm(Backend& backend, Group& world, const GemmShape& s, const ProfileOptions& options) {
  const auto count = [](std::int64_t r, std::int64_t c) { return static_cast<std::size_t>(r * c); };
  DeviceBuffer a(backend, count(s.m, s.k));
  DeviceBuffer b(backend, count(s.k, s.n));
  DeviceBuffer c(backend, count(s.m, s.n));
  const MatrixView av = s.ta == Transpose::No ? a.matrix(s.m, s.k) : a.matrix(s.k, s.m);
  const MatrixView bv = s.tb == Transpose::No ? b.matrix(s.k, s.n) : b.matrix(s.n, s.k);
  const MatrixView cv = c.matrix(s.m, s.n);
  backend.fill(av, 0.01f);
  backend.fill(bv, 0.02f);
  const auto gemm = [&] { backend.gemm(s.ta, s.tb, 1.0f, av, bv, 0.0f, cv); };
  backend.barrier();
  const std::vector<double> warmup = time_repetitions(backend, 1, gemm);
  const int reps = agreed_repetitions(backend, world, warmup.at(0), options);
  backend.barrier();
  // The mean, not the median: a short repetition often fits between two preemptions, but a training
  // step does not, so on a shared machine only the mean shows the throughput a step gets.
  const double seconds = mean(time_repetitions(backend, reps, gemm));
  const double rate = seconds > 0 ? s.flops() / seconds : 0;
  return {s, mean_over_ranks(backend, world, rate)};
}

double measure_memory_bandwidth(Backend& backend, Group& world, const ProfileOptions& options) {
  const auto n = static_cast<std::size_t>(options.axpy_floats);
  DeviceBuffer x(backend, n);
  DeviceBuffer y(backend, n);
  const MatrixView xv = x.matrix(1, options.axpy_floats);
  const MatrixView yv = y.matrix(1, options.axpy_floats);
  backend.fill(xv, 1.0f);
  // Alternating signs keep y bounded however many repetitions run.
  float alpha = 1.0f;
  const auto axpy = [&] {
    backend.axpy(alpha, xv, yv);
    alpha = -alpha;
  };
  backend.barrier();
  const std::vector<double> warmup = time_repetitions(backend, 1, axpy);
  const int reps = agreed_repetitions(backend, world, warmup.at(0), options);
  backend.barrier();
  const double seconds = mean(time_repetitions(backend, reps, axpy));
  const double traffic = 3.0 * sizeof(float) * static_cast<double>(n);  // read x, read y, write y
  return mean_over_ranks(backend, world, seconds > 0 ? traffic / seconds : 0);
}

/// Fixed by the size, so both ends of a ping-pong agree without talking: many for small messages,
/// down to 5 for the largest.
int pingpong_repetitions(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{1} << 24) / std::max<std::int64_t>(bytes, 1), 5, 100));
}

/// One-way seconds per size between ranks a and b: the median round trip / 2 for the first
/// sizes.size() entries, the fastest round trip / 2 for the next. Called by every rank; ranks other
/// than a and b only wait at the closing barrier. The result is known on all ranks.
std::vector<double> pingpong(Backend& backend, Group& world, int a, int b, const std::vector<std::int64_t>& sizes,
                             const DeviceBuffer& buffer) {
  const int me = backend.world_rank();
  std::vector<float> one_way(2 * sizes.size(), 0.0f);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto count = static_cast<std::size_t>(sizes[i] / static_cast<std::int64_t>(sizeof(float)));
    const int tag = static_cast<int>(i) + 1;
    const auto round_trip_from_a = [&] {
      backend.send(buffer.data(), count, b, tag)->wait();
      backend.recv(buffer.data(), count, b, tag);
    };
    const auto round_trip_from_b = [&] {
      backend.recv(buffer.data(), count, a, tag);
      backend.send(buffer.data(), count, a, tag)->wait();
    };
    const int reps = pingpong_repetitions(sizes[i]);
    if (me == a) {
      round_trip_from_a();  // warm-up: connection set-up, first-touch of pages
      const std::vector<double> round_trips = time_repetitions(backend, reps, round_trip_from_a);
      one_way[i] = static_cast<float>(median(round_trips) / 2);
      one_way[sizes.size() + i] = static_cast<float>(*std::min_element(round_trips.begin(), round_trips.end()) / 2);
    } else if (me == b) {
      round_trip_from_b();
      static_cast<void>(time_repetitions(backend, reps, round_trip_from_b));
    }
  }
  backend.barrier();
  const std::vector<float> all = sum_over_ranks(backend, world, one_way);  // only rank a's entries are non-zero
  return {all.begin(), all.end()};
}

std::vector<CollectiveMeasurement> measure_allreduce(Backend& backend, Group& world, const ProfileOptions& options) {
  std::vector<CollectiveMeasurement> out;
  const std::int64_t largest = std::max<std::int64_t>(options.max_message_bytes, 4);
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = 1LL << 20; bytes < largest; bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(largest / 4 * 4);
  DeviceBuffer buffer(backend, static_cast<std::size_t>(sizes.back() / 4));
  const double n = world.size();
  for (const std::int64_t bytes : sizes) {
    const auto count = static_cast<std::size_t>(bytes / 4);
    const auto reduce = [&] { backend.all_reduce_sum(world, buffer.data(), count); };
    backend.fill(buffer.matrix(1, static_cast<std::int64_t>(count)), 0.0f);
    backend.barrier();
    reduce();
    const int reps = std::clamp(pingpong_repetitions(bytes), 5, 20);
    const double local = median(time_repetitions(backend, reps, reduce));
    // Slowest rank: the collective is done when the last rank is; take the max via the mean of one-hot
    // entries summed (each rank fills its slot).
    std::vector<float> slots(static_cast<std::size_t>(world.size()), 0.0f);
    slots[static_cast<std::size_t>(world.rank())] = static_cast<float>(local);
    const std::vector<float> all = sum_over_ranks(backend, world, slots);
    const double seconds = *std::max_element(all.begin(), all.end());
    CollectiveMeasurement m;
    m.bytes = bytes;
    m.seconds = seconds;
    m.algorithm_bandwidth = seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
    m.bus_bandwidth = m.algorithm_bandwidth * 2 * (n - 1) / n;
    out.push_back(m);
  }
  return out;
}

}  // namespace

std::vector<TransferSample> fitted_samples(const std::vector<TransferSample>& samples, std::int64_t min_bytes) {
  std::vector<TransferSample> large;
  for (const TransferSample& s : samples) {
    if (s.bytes >= min_bytes) large.push_back(s);
  }
  return large.size() >= 2 ? large : samples;
}

void fit_link(LinkMeasurement& link, const std::vector<TransferSample>& fastest, std::int64_t min_bytes) {
  link.fit_min_bytes = min_bytes;
  try {
    link.fit = fit_alpha_beta(fitted_samples(link.samples, min_bytes));
    link.fit_on_fastest = false;
  } catch (const std::invalid_argument&) {
    // On a loaded machine preemptions can swamp the medians (times that do not grow with the size);
    // the fastest round trips are the ones the link allowed.
    link.fit = fit_alpha_beta(fitted_samples(fastest, min_bytes));
    link.fit_on_fastest = true;
  }
}

std::vector<std::int64_t> message_sizes(std::int64_t min_bytes, std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes;
  min_bytes = std::max<std::int64_t>(4, min_bytes / 4 * 4);
  max_bytes = max_bytes / 4 * 4;
  for (std::int64_t s = min_bytes; s <= max_bytes; s *= 4) sizes.push_back(s);
  if (sizes.empty() || sizes.back() != max_bytes) {
    if (max_bytes >= min_bytes) sizes.push_back(max_bytes);
  }
  return sizes;
}

double weighted_harmonic_rate(const std::vector<GemmMeasurement>& gemms) noexcept {
  double weight = 0;
  double time = 0;
  for (const GemmMeasurement& g : gemms) {
    if (!(g.flops_per_s > 0) || !(g.shape.weight > 0)) continue;
    weight += g.shape.weight;
    time += g.shape.weight / g.flops_per_s;
  }
  return time > 0 ? weight / time : 0;
}

std::vector<GemmShape> default_gemm_shapes(std::string_view backend) {
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> dims =
      backend == "cuda"
          ? std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{{1024, 1024, 1024},
                                                                               {2048, 2048, 2048},
                                                                               {4096, 4096, 4096},
                                                                               {8192, 8192, 8192},
                                                                               {4096, 16384, 4096}}
          : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
                {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {512, 2048, 512}};
  std::vector<GemmShape> shapes;
  for (const auto& [m, n, k] : dims) {
    GemmShape s{m, n, k, Transpose::No, Transpose::No, "square", 0};
    if (m != n) s.label = "rectangular";
    s.weight = s.flops();
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<GemmShape> gemm_shapes_for_model(const model::Model& model, int micro_batch, std::string_view backend) {
  if (!model.shape || model.shape->hidden <= 0 || model.shape->seq_len <= 0) return default_gemm_shapes(backend);
  const model::TransformerShape& t = *model.shape;
  const std::int64_t b = std::max(1, micro_batch);
  const std::int64_t tokens = b * t.seq_len;
  const std::int64_t h = t.hidden;
  const std::int64_t head_dim = t.head_dim > 0 ? t.head_dim : h / std::max<std::int64_t>(1, t.heads);
  const std::int64_t heads = std::max<std::int64_t>(1, t.heads);
  const std::int64_t kv = t.kv_heads > 0 ? t.kv_heads * head_dim : heads * head_dim;
  const std::int64_t attention = heads * head_dim;
  const std::int64_t ffn = t.ffn > 0 ? t.ffn : 4 * h;
  const double layers = std::max(1, t.layers);

  // Merged by (m, n, k, ta, tb); the first label seen names the shape.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>, GemmShape> merged;
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int>> order;
  const auto add = [&](std::int64_t m, std::int64_t n, std::int64_t k, Transpose ta, Transpose tb,
                       const std::string& label, double times) {
    const auto key = std::make_tuple(m, n, k, static_cast<int>(ta), static_cast<int>(tb));
    GemmShape s{m, n, k, ta, tb, label, 0};
    auto [it, added] = merged.try_emplace(key, s);
    if (added) order.push_back(key);
    it->second.weight += s.flops() * times;
  };
  // A linear layer Y[T x out] = X[T x in] W[in x out], and its two backward products.
  const auto linear = [&](std::int64_t in, std::int64_t out, const std::string& label, double times) {
    add(tokens, out, in, Transpose::No, Transpose::No, label, times);
    add(tokens, in, out, Transpose::No, Transpose::Yes, label + " dX", times);
    add(in, out, tokens, Transpose::Yes, Transpose::No, label + " dW", times);
  };
  linear(h, attention + 2 * kv, "qkv", layers);
  linear(attention, h, "attention-out", layers);
  linear(h, ffn, "mlp-up", layers * (t.gated_mlp ? 2 : 1));
  linear(ffn, h, "mlp-down", layers);
  if (t.vocab > 0) linear(h, t.vocab, "logits", 1);
  // Attention per head and sample: scores S = Q K^T, context O = P V; the backward runs two products
  // of each shape.
  const double per_head = layers * static_cast<double>(heads * b) * 3;  // forward + 2 backward
  add(t.seq_len, t.seq_len, head_dim, Transpose::No, Transpose::Yes, "attention-scores", per_head);
  add(t.seq_len, head_dim, t.seq_len, Transpose::No, Transpose::No, "attention-context", per_head);

  std::vector<GemmShape> shapes;
  for (const auto& key : order) shapes.push_back(merged.at(key));
  return shapes;
}

ProfileResult profile_machine(Backend& backend, const ProfileOptions& options) {
  ProfileResult result;
  result.backend = backend.name();
  result.ranks = backend.world_size();
  std::vector<int> all(static_cast<std::size_t>(result.ranks));
  std::iota(all.begin(), all.end(), 0);
  const std::unique_ptr<Group> world = backend.make_group(all);

  for (const GemmShape& s : options.gemm_shapes) result.gemms.push_back(measure_gemm(backend, *world, s, options));
  result.gemm_flops_per_s = weighted_harmonic_rate(result.gemms);
  result.memory_bandwidth = measure_memory_bandwidth(backend, *world, options);

  if (result.ranks > 1) {
    const std::vector<std::int64_t> sizes = message_sizes(options.min_message_bytes, options.max_message_bytes);
    const DeviceBuffer buffer(backend, static_cast<std::size_t>(sizes.back() / 4));
    std::vector<double> alphas, betas;
    for (int a = 0; a < result.ranks; ++a) {
      for (int b = a + 1; b < result.ranks; ++b) {
        LinkMeasurement link;
        link.rank_a = a;
        link.rank_b = b;
        const std::vector<double> one_way = pingpong(backend, *world, a, b, sizes, buffer);
        std::vector<TransferSample> fastest;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
          link.samples.push_back({sizes[i], one_way[i]});
          fastest.push_back({sizes[i], one_way[sizes.size() + i]});
        }
        fit_link(link, fastest, options.fit_min_bytes);
        alphas.push_back(link.fit.alpha_s);
        betas.push_back(link.fit.beta_bytes_per_s);
        result.links.push_back(std::move(link));
      }
    }
    result.link.alpha_s = median(alphas);
    result.link.beta_bytes_per_s = median(betas);
    for (const auto& l : result.links) {
      result.link.max_relative_residual = std::max(result.link.max_relative_residual, l.fit.max_relative_residual);
    }
    result.allreduce = measure_allreduce(backend, *world, options);
  }
  backend.barrier();
  return result;
}

}  // namespace mpsim::executor::profile
