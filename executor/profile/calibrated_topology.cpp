#include "executor/profile/calibrated_topology.h"

#include <cmath>

#include <fmt/format.h>

namespace mpsim::executor::profile {
namespace {

std::string flops_rate(double v) {
  return v >= 1e12 ? fmt::format("{:.4f} TFLOP/s", v / 1e12) : fmt::format("{:.4f} GFLOP/s", v / 1e9);
}

std::string bandwidth(double bytes_per_s) {
  return bytes_per_s >= 1e9 ? fmt::format("{:.4f} GB/s", bytes_per_s / 1e9)
                            : fmt::format("{:.4f} MB/s", bytes_per_s / 1e6);
}

std::string nanoseconds(double seconds) { return fmt::format("{} ns", std::llround(seconds * 1e9)); }

std::string readable_time(double seconds) {
  if (seconds >= 1) return fmt::format("{:.3f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  return fmt::format("{:.3f} us", seconds * 1e6);
}

std::string readable_size(std::int64_t bytes) {
  if (bytes >= (1LL << 20) && bytes % (1LL << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1LL << 10) && bytes % (1LL << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string transpose(Transpose t) { return t == Transpose::Yes ? "T" : "N"; }

/// YAML double-quoted scalar.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string calibrated_topology_yaml(const ProfileResult& r, const TopologyHeader& h) {
  std::string out;
  out += "# Calibrated topology: every number below was measured on this machine by mpsim profile.\n";
  out += fmt::format("#   command: {}\n", h.command);
  out += fmt::format("#   host:    {}\n", h.host);
  out += fmt::format("#   time:    {}\n", h.utc_time);
  out += fmt::format("#   backend: {}, {} rank{} (one device each)\n", r.backend, r.ranks, r.ranks == 1 ? "" : "s");
  out += "# peak.fp32 is the GEMM throughput measured for the shapes below (FLOP-weighted harmonic mean, all\n";
  out += "# ranks computing at once), so matmul_efficiency is 1.0; memory_bandwidth is a large axpy's.\n";
  if (r.ranks > 1) {
    out += "# intra_node bandwidth and latency are the least-squares α–β fit (time = α + bytes / β) of\n";
    out += "# ping-pong one-way times between ranks (the median over pairs), over the message sizes a\n";
    out += "# training step sends (small messages switch to another protocol; they are listed, not fitted).\n";
  }
  out += fmt::format("source: {}\n", quoted(fmt::format("mpsim profile ({} backend, {} ranks) on {} at {}", r.backend,
                                                         r.ranks, h.host, h.utc_time)));
  out += "cluster:\n";
  out += fmt::format("  name: {}\n", quoted(h.name));
  out += "  nodes: 1\n";
  out += fmt::format("  gpus_per_node: {}\n", r.ranks);
  out += "  gpu:\n";
  out += fmt::format("    name: {}\n", quoted(r.backend == "cuda" ? "profiled CUDA device" : "profiled CPU rank"));
  out += fmt::format("    peak: {{ fp32: \"{}\" }}\n", flops_rate(r.gemm_flops_per_s));
  out += fmt::format("    memory: \"{} MiB\"\n", std::max<std::int64_t>(1, h.memory_bytes >> 20));
  out += fmt::format("    memory_bandwidth: \"{}\"\n", bandwidth(r.memory_bandwidth));
  out += "    matmul_efficiency: 1.0\n";
  out += fmt::format("    source: {}\n", quoted("measured: GEMM throughput and axpy bandwidth"));
  if (r.ranks > 1) {
    const char* kind = r.backend == "cuda" && r.link.beta_bytes_per_s > 40e9 ? "nvswitch" : "pcie";
    out += fmt::format("  intra_node: {{ kind: {}, bandwidth: \"{}\", latency: \"{}\" }}\n", kind,
                       bandwidth(r.link.beta_bytes_per_s), nanoseconds(r.link.alpha_s));
  }

  out += "\n# ---- raw measurements ----\n";
  out += "# GEMM (fp32, C[m x n] = op(A) op(B), N = as stored, T = transposed), FLOP/s mean over ranks:\n";
  out += fmt::format("#   {:<22} {:>6} {:>6} {:>6} {:>3} {:>14} {:>8}\n", "use", "m", "n", "k", "op", "GFLOP/s",
                     "weight");
  double total_weight = 0;
  for (const auto& g : r.gemms) total_weight += g.shape.weight;
  for (const auto& g : r.gemms) {
    out += fmt::format("#   {:<22} {:>6} {:>6} {:>6} {:>3} {:>14.3f} {:>7.1f}%\n", g.shape.label, g.shape.m, g.shape.n,
                       g.shape.k, transpose(g.shape.ta) + transpose(g.shape.tb), g.flops_per_s / 1e9,
                       total_weight > 0 ? 100 * g.shape.weight / total_weight : 0);
  }
  out += fmt::format("#   used: {:.3f} GFLOP/s\n", r.gemm_flops_per_s / 1e9);
  out += fmt::format("# memory bandwidth (axpy, 12 bytes per element, all ranks at once): {:.3f} GB/s per rank\n",
                     r.memory_bandwidth / 1e9);
  for (const auto& l : r.links) {
    out += fmt::format("# ping-pong rank {} <-> rank {} (one-way time, median of round trips / 2):\n", l.rank_a,
                       l.rank_b);
    out += fmt::format("#   {:>10} {:>12} {:>14} {:>12}\n", "size", "time", "bandwidth", "fit error");
    for (const auto& s : l.samples) {
      const double fitted = l.fit.time_s(s.bytes);
      out += fmt::format("#   {:>10} {:>12} {:>14} {:>11.1f}%\n", readable_size(s.bytes), readable_time(s.seconds),
                         bandwidth(static_cast<double>(s.bytes) / s.seconds), 100 * (fitted - s.seconds) / s.seconds);
    }
    out += fmt::format("#   fit over {} and up{}: alpha {}, beta {} (largest relative residual there {:.1f}%)\n",
                       readable_size(l.fit_min_bytes),
                       l.fit_on_fastest ? " (the medians gave no fit: fastest round trips)" : "",
                       readable_time(l.fit.alpha_s), bandwidth(l.fit.beta_bytes_per_s), 100 * l.fit.max_relative_residual);
  }
  if (!r.allreduce.empty()) {
    out += fmt::format("# all-reduce over {} ranks (slowest rank, median of repetitions):\n", r.ranks);
    out += fmt::format("#   {:>10} {:>12} {:>14} {:>14}\n", "size", "time", "algbw", "busbw");
    for (const auto& c : r.allreduce) {
      out += fmt::format("#   {:>10} {:>12} {:>14} {:>14}\n", readable_size(c.bytes), readable_time(c.seconds),
                         bandwidth(c.algorithm_bandwidth), bandwidth(c.bus_bandwidth));
    }
  }
  return out;
}

}  // namespace mpsim::executor::profile
