#include "sim/plan/layout.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace mpsim::plan {

Degrees degrees_of(const PlanSpec& spec, int data) noexcept {
  Degrees d = spec.degrees;
  d.set(Axis::ExpertTensor, spec.written(Axis::ExpertTensor).value_or(spec.degrees[Axis::Tensor]));
  d.set(Axis::Data, data);
  return d;
}

std::optional<std::string> degrees_error(const Degrees& d) {
  for (const Axis a : kAllAxes) {
    if (Degrees::is_set_by_plan(a) && d[a] < 1) return fmt::format("the {} degree must be at least 1", short_name(a));
  }
  if (d[Axis::Data] % d[Axis::DataReplica] != 0) {
    return fmt::format("shard_groups {} does not divide data {}", d[Axis::DataReplica], d[Axis::Data]);
  }
  const int dense = d.product(Axis::Tensor | Axis::Context | Axis::Data);
  if (dense % d.product(Axis::ExpertTensor | Axis::Expert) != 0) {
    return fmt::format("expert_tensor {} x expert {} does not divide tensor {} x context {} x data {} = {}",
                       d[Axis::ExpertTensor], d[Axis::Expert], d[Axis::Tensor], d[Axis::Context], d[Axis::Data], dense);
  }
  return std::nullopt;
}

Layout::Layout(const Degrees& degrees, const Placement& placement) : degrees_(degrees), ranks_(degrees.ranks()) {
  int dense_stride = 1;
  int expert_stride = 1;
  for (const Axis word : complete_order(placement)) {
    // The order string's word read by each generator (parallel folding).
    const Axis dense_axis = word;
    const Axis expert_axis = word == Axis::Tensor ? Axis::ExpertTensor : word == Axis::Data ? Axis::ExpertData : word;
    if (word != Axis::Expert) {
      dense_.push_back({dense_axis, degrees_[dense_axis], dense_stride});
      if (word == Axis::Data) {
        // The data coordinate's inner and outer parts (HSDP), over the same ranks as data.
        dense_.push_back({Axis::DataShard, degrees_[Axis::DataShard], dense_stride});
        dense_.push_back({Axis::DataReplica, degrees_[Axis::DataReplica], dense_stride * degrees_[Axis::DataShard]});
      }
      dense_stride *= degrees_[dense_axis];
    }
    if (word != Axis::Context) {
      expert_.push_back({expert_axis, degrees_[expert_axis], expert_stride});
      expert_stride *= degrees_[expert_axis];
    }
  }
}

Layout::Layout(const Plan& plan) : Layout(plan.degrees, plan.placement) {}

const Layout::Dim* Layout::find(const Generator& g, Axis a) noexcept {
  for (const Dim& d : g) {
    if (d.axis == a) return &d;
  }
  return nullptr;
}

const Layout::Generator& Layout::generator_of(AxisSet axes) const {
  bool dense = true, expert = true;
  for (const Axis a : kAllAxes) {
    if (!axes.contains(a)) continue;
    dense = dense && find(dense_, a) != nullptr;
    expert = expert && find(expert_, a) != nullptr;
  }
  if (dense) return dense_;
  if (expert) return expert_;
  throw std::logic_error(fmt::format("the axes {} belong to different layouts", to_string(axes)));
}

int Layout::coordinate(int rank, Axis a) const noexcept {
  const Dim* d = find(dense_, a);
  if (d == nullptr) d = find(expert_, a);
  if (d == nullptr) return 0;
  return rank / d->stride % d->size;
}

int Layout::with(int rank, Axis a, int value) const noexcept {
  const Dim* d = find(dense_, a);
  if (d == nullptr) d = find(expert_, a);
  if (d == nullptr) return rank;
  return rank + (value - rank / d->stride % d->size) * d->stride;
}

std::vector<int> Layout::group(int rank, AxisSet axes) const {
  if (axes.contains(Axis::PipelineMirror)) {
    // The group of the pipeline rank nearer rank 0, then its mirror's.
    const AxisSet rest = axes.without(Axis::PipelineMirror);
    const int r = coordinate(rank, Axis::Pipeline);
    const int mirror = degrees_[Axis::Pipeline] - 1 - r;
    std::vector<int> out = group(with(rank, Axis::Pipeline, std::min(r, mirror)), rest);
    if (mirror != r) {
      const std::vector<int> far = group(with(rank, Axis::Pipeline, std::max(r, mirror)), rest);
      out.insert(out.end(), far.begin(), far.end());
    }
    return out;
  }
  const Generator& g = generator_of(axes);
  // The rank with 0 on every axis of the set, then every combination of those axes, first fastest.
  int base = rank;
  std::vector<const Dim*> varying;
  for (const Dim& d : g) {
    if (!axes.contains(d.axis)) continue;
    base -= rank / d.stride % d.size * d.stride;
    varying.push_back(&d);
  }
  std::vector<int> out{base};
  for (const Dim* d : varying) {
    const std::size_t before = out.size();
    for (int k = 1; k < d->size; ++k) {
      for (std::size_t i = 0; i < before; ++i) out.push_back(out[i] + k * d->stride);
    }
  }
  return out;
}

std::vector<std::vector<int>> Layout::groups(AxisSet axes) const {
  if (axes.contains(Axis::PipelineMirror)) {
    // Each pair of mirrored groups once: from the half of the pipeline nearer rank 0.
    std::vector<std::vector<int>> out;
    for (const std::vector<int>& g : groups(axes.without(Axis::Pipeline).without(Axis::PipelineMirror))) {
      const int r = coordinate(g.front(), Axis::Pipeline);
      if (r <= degrees_[Axis::Pipeline] - 1 - r) out.push_back(group(g.front(), axes));
    }
    return out;
  }
  const Generator& g = generator_of(axes);
  // The data axis and its two parts cover the same coordinate: the other axes are data's other part
  // when the set holds one, data alone otherwise.
  const bool shard = axes.contains(Axis::DataShard);
  const bool replica = axes.contains(Axis::DataReplica);
  const auto covered = [&](Axis a) {
    if (a == Axis::Data) return shard || replica;
    if (a == Axis::DataShard) return !replica;
    if (a == Axis::DataReplica) return !shard;
    return false;
  };
  // The groups' first members: every combination of the other axes, first fastest.
  std::vector<int> firsts{0};
  for (const Dim& d : g) {
    if (axes.contains(d.axis) || covered(d.axis)) continue;
    const std::size_t before = firsts.size();
    for (int k = 1; k < d.size; ++k) {
      for (std::size_t i = 0; i < before; ++i) firsts.push_back(firsts[i] + k * d.stride);
    }
  }
  std::vector<std::vector<int>> out;
  out.reserve(firsts.size());
  for (const int first : firsts) out.push_back(group(first, axes));
  return out;
}

}  // namespace mpsim::plan
