#pragma once
/// GPU kinds: the numbers of one accelerator model, and the built-in catalog.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/units.h"
#include "sim/core/yaml_field_fwd.h"
#include "sim/topology/attention_generation.h"

namespace mpsim::topology {

enum class DType : std::uint8_t { Fp32, Tf32, Fp16, Bf16, Fp8 };
[[nodiscard]] std::string_view to_string(DType d) noexcept;

struct GpuKind {
  std::string id;                 ///< catalog id, e.g. "a100-80gb"
  std::string name;               ///< marketing name
  std::map<DType, FlopsPerSec> peak;  ///< dense peak per dtype; absent = unsupported
  Bytes memory;                   ///< usable capacity
  BytesPerSec memory_bandwidth;   ///< HBM bandwidth
  int nvlink_links = 0;           ///< NVLink ports per GPU
  BytesPerSec nvlink_bandwidth_per_link;  ///< one direction
  int pcie_gen = 0;
  BytesPerSec pcie_bandwidth;     ///< x16, one direction
  int sm_count = 0;               ///< streaming multiprocessors; 0 = unknown
  double matmul_efficiency = 1.0; ///< large GEMMs' achievable throughput / peak (16- and 32-bit)
  double fp8_matmul_efficiency = 1.0;  ///< the same for FP8 GEMMs / fp8 peak
  /// FlashAttention's forward + backward throughput / the 16-bit peak, its FLOPs counted as the
  /// FlashAttention papers count them (causal masks halve them).
  double attention_efficiency = 1.0;
  /// The same for each kernel generation measured on this kind (`attention_kernels`); a plan that
  /// names a generation (its software release's) runs at that one's.
  std::map<AttentionGeneration, double> attention_kernels;
  /// What the software stack's activations take on this kind against mpsim's count of them (the stash,
  /// what a split backward keeps, a pass's working memory): 1 unless a software profile's
  /// activation_memory factor sets it; never read from a topology file.
  double activation_memory_factor = 1.0;
  Watts tdp;                      ///< maximum board power; zero = unknown (no energy estimate)
  std::string source;             ///< where the numbers come from

  /// Peak for `d`, or nothing when the GPU lacks that dtype (V100 has no bf16).
  [[nodiscard]] std::optional<FlopsPerSec> peak_for(DType d) const;
  /// The dense peak a model stored in `dtype_bytes` per element trains at: FP32 for 4-byte models, else
  /// BF16 (FP16 where the GPU has no BF16). The denominator of MFU.
  [[nodiscard]] std::optional<FlopsPerSec> training_peak(int dtype_bytes) const;
  /// The attention efficiency of `generation`, or nothing when this kind has no rate for it; without
  /// a generation, `attention_efficiency`.
  [[nodiscard]] std::optional<double> attention_efficiency_of(std::optional<AttentionGeneration> generation) const;
  friend bool operator==(const GpuKind&, const GpuKind&) = default;
};

/// Reads one GPU kind mapping (schema in docs/formats.md, "GPU kinds").
[[nodiscard]] GpuKind load_gpu_kind(const Field& field, std::string id);

/// Known GPU kinds by id and alias: the built-in catalog (configs/hardware/gpus.yaml, compiled
/// in) plus any a topology file declares.
class GpuCatalog {
 public:
  /// The built-in catalog.
  [[nodiscard]] static const GpuCatalog& builtin();

  void add(GpuKind kind, std::vector<std::string> aliases = {});
  [[nodiscard]] const GpuKind* find(std::string_view id_or_alias) const;
  /// Every id and alias, sorted, for error messages.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::map<std::string, GpuKind, std::less<>> kinds_;
  std::map<std::string, std::string, std::less<>> aliases_;
};

}  // namespace mpsim::topology
