#include "sim/topology/gpu_kind.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "sim/core/yaml_field.h"

namespace mpsim::topology {

extern const std::string_view kBuiltinGpuCatalogYaml;  // generated from configs/hardware/gpus.yaml

namespace {
constexpr std::int64_t kMaxSmCount = 4096;  // far above any GPU built so far; catches typos such as a core count
}  // namespace

std::string_view to_string(DType d) noexcept {
  switch (d) {
    case DType::Fp32: return "fp32";
    case DType::Tf32: return "tf32";
    case DType::Fp16: return "fp16";
    case DType::Bf16: return "bf16";
    case DType::Fp8: return "fp8";
  }
  return "?";
}

std::optional<FlopsPerSec> GpuKind::training_peak(int dtype_bytes) const {
  if (dtype_bytes >= 4) return peak_for(DType::Fp32);
  if (auto bf16 = peak_for(DType::Bf16)) return bf16;
  return peak_for(DType::Fp16);
}

std::optional<double> GpuKind::attention_efficiency_of(std::optional<AttentionGeneration> generation) const {
  if (!generation) return attention_efficiency;
  const auto it = attention_kernels.find(*generation);
  if (it == attention_kernels.end()) return std::nullopt;
  return it->second;
}

std::optional<FlopsPerSec> GpuKind::peak_for(DType d) const {
  const auto it = peak.find(d);
  if (it == peak.end()) return std::nullopt;
  return it->second;
}

GpuKind load_gpu_kind(const Field& field, std::string id) {
  field.expect_keys({"aliases", "name", "peak", "memory", "memory_bandwidth", "nvlink", "pcie", "matmul_efficiency",
                     "fp8_matmul_efficiency", "attention_efficiency", "attention_kernels", "sms", "tdp", "source"});
  GpuKind kind;
  kind.id = std::move(id);
  kind.name = field.has("name") ? field.require("name").as_string() : kind.id;
  const Field peak = field.require("peak");
  peak.expect_keys({"fp32", "tf32", "fp16", "bf16", "fp8"});
  constexpr std::pair<std::string_view, DType> dtypes[] = {
      {"fp32", DType::Fp32}, {"tf32", DType::Tf32}, {"fp16", DType::Fp16}, {"bf16", DType::Bf16}, {"fp8", DType::Fp8}};
  for (const auto& [word, dtype] : dtypes) {
    if (auto v = peak.get(word)) kind.peak.emplace(dtype, v->as_flops_rate());
  }
  if (kind.peak.empty()) peak.fail("give the peak of at least one dtype (fp32, tf32, fp16, bf16, fp8)");
  kind.memory = field.require("memory").as_bytes();
  if (kind.memory.count() <= 0) field.require("memory").fail("memory must be positive");
  kind.memory_bandwidth = field.require("memory_bandwidth").as_bandwidth();
  if (auto nvlink = field.get("nvlink")) {
    nvlink->expect_keys({"links", "bandwidth_per_link"});
    kind.nvlink_links = static_cast<int>(nvlink->require("links").as_int_in(0, 64));
    kind.nvlink_bandwidth_per_link = nvlink->require("bandwidth_per_link").as_bandwidth();
  }
  if (auto pcie = field.get("pcie")) {
    pcie->expect_keys({"gen", "bandwidth"});
    kind.pcie_gen = static_cast<int>(pcie->require("gen").as_int_in(1, 7));
    kind.pcie_bandwidth = pcie->require("bandwidth").as_bandwidth();
  }
  if (auto e = field.get("matmul_efficiency")) kind.matmul_efficiency = e->as_double_in(0.01, 1.0);
  kind.fp8_matmul_efficiency = kind.matmul_efficiency;
  if (auto e = field.get("fp8_matmul_efficiency")) {
    if (!kind.peak.contains(DType::Fp8)) e->fail("an FP8 efficiency needs an fp8 peak");
    kind.fp8_matmul_efficiency = e->as_double_in(0.01, 1.0);
  }
  kind.attention_efficiency = kind.matmul_efficiency;
  if (auto e = field.get("attention_efficiency")) kind.attention_efficiency = e->as_double_in(0.01, 1.0);
  if (auto kernels = field.get("attention_kernels")) {
    for (const auto& [key, value] : kernels->entries()) {
      const std::string_view name = key;  // a structured binding cannot be captured before C++20's clang 16
      const auto* known = std::find_if(std::begin(kAttentionGenerationNames), std::end(kAttentionGenerationNames),
                                       [&](const auto& entry) { return entry.first == name; });
      if (known == std::end(kAttentionGenerationNames)) {
        value.fail(fmt::format("unknown attention kernel generation '{}' (fa2, fa3 or fa4)", name));
      }
      kind.attention_kernels[known->second] = value.as_double_in(0.01, 1.0);
    }
  }
  if (auto sms = field.get("sms")) {
    const std::int64_t n = sms->as_int();
    if (n < 1 || n > kMaxSmCount) {
      sms->fail(fmt::format("sms must be a positive count of streaming multiprocessors (1 to {}), got {}", kMaxSmCount,
                            n));
    }
    kind.sm_count = static_cast<int>(n);
  }
  if (auto tdp = field.get("tdp")) {
    kind.tdp = tdp->as_power();
    if (kind.tdp.in_watts() <= 0) tdp->fail("tdp must be positive");
  }
  if (auto s = field.get("source")) kind.source = s->as_string();
  return kind;
}

namespace {
GpuCatalog parse_builtin() {
  GpuCatalog catalog;
  const auto doc = YamlDocument::parse(std::string(kBuiltinGpuCatalogYaml), "configs/hardware/gpus.yaml");
  const Field root = doc.root();
  root.expect_keys({"gpu_kinds"});
  for (const auto& [id, entry] : root.require("gpu_kinds").entries()) {
    std::vector<std::string> aliases;
    if (auto a = entry.get("aliases")) {
      for (const auto& alias : a->items()) aliases.push_back(alias.as_string());
    }
    catalog.add(load_gpu_kind(entry, id), std::move(aliases));
  }
  return catalog;
}
}  // namespace

const GpuCatalog& GpuCatalog::builtin() {
  static const GpuCatalog catalog = parse_builtin();  // immutable after first use; thread-safe init
  return catalog;
}

void GpuCatalog::add(GpuKind kind, std::vector<std::string> aliases) {
  for (auto& alias : aliases) aliases_[std::move(alias)] = kind.id;
  std::string id = kind.id;
  kinds_.insert_or_assign(std::move(id), std::move(kind));
}

const GpuKind* GpuCatalog::find(std::string_view id_or_alias) const {
  if (auto it = kinds_.find(id_or_alias); it != kinds_.end()) return &it->second;
  if (auto a = aliases_.find(id_or_alias); a != aliases_.end()) return find(a->second);
  return nullptr;
}

std::vector<std::string> GpuCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& [id, kind] : kinds_) out.push_back(id);
  return out;
}

}  // namespace mpsim::topology
