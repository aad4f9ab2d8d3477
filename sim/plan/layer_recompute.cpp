#include "sim/plan/layer_recompute.h"

#include <algorithm>

#include "sim/plan/plan_check.h"

namespace mpsim::plan {

std::vector<LayerRecompute> layer_recompute(const Plan& plan, const model::Model& model) {
  std::vector<LayerRecompute> out(model.layers.size());
  if (plan.recompute != model::Recompute::Full) {
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      const bool applies = plan.recompute != model::Recompute::Op || model::takes_op_checkpoint(model.layers[i]);
      out[i].rule = applies ? plan.recompute : model::Recompute::None;
    }
    return out;
  }
  // A plan not yet partitioned (resolve_plan fills the partition) is one chunk of every layer.
  const bool partitioned = plan.partition.size() >= 2;
  const std::vector<LayerRange> ranges =
      partitioned ? virtual_stage_layers(plan, model)
                  : std::vector<LayerRange>{{0, static_cast<int>(model.layers.size())}};
  const int ranks = partitioned ? plan.degrees[Axis::Pipeline] : 1;
  const int chunks = partitioned ? plan.virtual_stages : 1;
  std::vector<bool> placed(model.layers.size(), false);
  for (int rank = 0; rank < ranks; ++rank) {
    int on_rank = 0;  // the rank's recomputable layers so far, over its chunks in order
    for (int c = 0; c < chunks; ++c) {
      const LayerRange range = ranges.at(static_cast<std::size_t>(virtual_stage_of(plan.schedule, ranks, rank, c)));
      const auto begin = model.layers.begin() + range.first;
      const int chunk_layers = static_cast<int>(std::count_if(
          begin, model.layers.begin() + range.last, [](const model::Layer& l) { return model::is_recomputed(l.kind); }));
      int in_chunk = 0;
      for (int li = range.first; li < range.last; ++li) {
        const auto i = static_cast<std::size_t>(li);
        const bool recomputable = model::is_recomputed(model.layers[i].kind);
        LayerRecompute r;
        r.rule = model::Recompute::Full;  // the embedding and the output head keep what full recomputation leaves them
        if (recomputable) {
          r.place = model::full_recompute_place(plan.recompute_method, plan.recompute_num_layers, in_chunk++,
                                                chunk_layers, on_rank++);
          if (!r.place.checkpointed) r.rule = model::Recompute::None;
        }
        if (!placed[i]) out[i] = r;
        placed[i] = true;
      }
    }
  }
  return out;
}

}  // namespace mpsim::plan
