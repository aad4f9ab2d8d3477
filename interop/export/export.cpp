#include "interop/export/export.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/core/input_error.h"

namespace mpsim::interop {

namespace {

/// The axes every exporter writes or refuses in its own terms. A plan with another axis above 1 is
/// refused here, so that an exporter never drops an axis newer than itself silently.
constexpr plan::AxisSet kAxesExportersHandle = plan::Axis::Tensor | plan::Axis::Context | plan::Axis::Expert |
                                               plan::Axis::ExpertTensor | plan::Axis::Data | plan::Axis::Pipeline |
                                               plan::Axis::DataReplica;

}  // namespace

std::string export_plan(Framework target, const ExportInput& input) {
  for (const plan::Axis a : plan::kAllAxes) {
    if (!plan::Degrees::is_set_by_plan(a) || kAxesExportersHandle.contains(a) || input.plan.degrees[a] == 1) continue;
    cannot_express(input, plan::name_of(kFrameworkNames, target), plan::short_name(a),
                   fmt::format("its exporter writes no {} degree (the plan has {})", plan::short_name(a),
                               input.plan.degrees[a]));
  }
  // Megatron-Core runs its own loss kernels (native or te); the other targets train the user's model or
  // TorchTitan's, whose loss is PyTorch's (the TorchTitan export notes a plan priced otherwise).
  if (loss_of(target) != plan::CrossEntropy::Pytorch && input.plan.cross_entropy == plan::CrossEntropy::Pytorch) {
    cannot_express(input, plan::name_of(kFrameworkNames, target), "cross_entropy",
                   "Megatron-Core computes the loss with its own kernels (cross_entropy_fusion_impl native or te), "
                   "not torch.nn.functional.cross_entropy");
  }
  // Every framework runs the same microbatches on each data-parallel replica.
  if (input.plan.uneven_shares()) {
    cannot_express(input, plan::name_of(kFrameworkNames, target), "replica_microbatches",
                   "its data-parallel replicas all run the same number of microbatches (global batch / (micro batch x "
                   "data)); uneven shares are simulated only");
  }
  switch (target) {
    case Framework::Megatron: return export_megatron(input);
    case Framework::Nemo: return export_nemo(input);
    case Framework::DeepSpeed: return export_deepspeed(input);
    case Framework::TorchTitan: return export_torchtitan(input);
    case Framework::SageMaker: return export_sagemaker(input);
  }
  return {};
}

void cannot_express(const ExportInput& input, std::string_view target, std::string_view field, const std::string& why) {
  const auto origin = input.spec.origins.find(std::string(field));
  const SourceLocation where = origin != input.spec.origins.end() ? origin->second : SourceLocation{input.spec.file, 0, 0};
  throw InputError(where, std::string(field), fmt::format("{} cannot express this: {}", target, why));
}

void cannot_express_model(const ExportInput& input, std::string_view target, std::string_view field,
                          const std::string& why) {
  throw InputError(SourceLocation{input.model_file, 0, 0}, fmt::format("model.{}", field),
                   fmt::format("{} cannot express this: {}", target, why));
}

const model::TransformerShape& decoder_shape(const ExportInput& in, std::string_view target) {
  if (!in.model.shape) {
    cannot_express_model(in, target, "layers",
                         "the model is a list of layers; Megatron builds its blocks from shape fields (give the "
                         "model as family, layers, hidden, heads, ...)");
  }
  const model::TransformerShape& s = *in.model.shape;
  if (s.family == model::Family::T5 || s.family == model::Family::Bert) {
    cannot_express_model(in, target, "family",
                         fmt::format("{} runs through Megatron's T5 / BERT scripts and providers; the export writes "
                                     "the decoder-only GPT model's settings",
                                     model::to_string(s.family)));
  }
  if (s.positions == model::PositionKind::Relative) {
    cannot_express_model(in, target, "positions", "GPT models take learned_absolute or rope positions");
  }
  if (s.attention_sinks) {
    cannot_express_model(in, target, "attention_sinks", "Megatron's GPT model has no learned attention-sink setting");
  }
  if (s.rope_scaling) {
    const model::RopeScaling& r = *s.rope_scaling;
    if (r.kind == model::RopeScalingKind::Llama3) {
      if (s.mla) {
        cannot_express_model(in, target, "rope_scaling",
                             "Megatron's latent attention takes rope_type rope or yarn, not Llama 3.1's scaling");
      }
      // GPTModel passes RotaryEmbedding only rope_scaling and its factor; _apply_scaling's band edges and
      // original context are Llama 3.1's.
      if (r.low_freq_factor != 1.0 || r.high_freq_factor != 4.0 || r.original_max_position_embeddings != 8192) {
        cannot_express_model(in, target, "rope_scaling",
                             "Megatron-Core's llama3 scaling fixes low_freq_factor 1, high_freq_factor 4 and "
                             "original_max_position_embeddings 8192; only the factor is a setting");
      }
    } else if (!s.mla) {
      cannot_express_model(in, target, "rope_scaling",
                           "the export writes YaRN for latent attention (MLA's rope_type yarn) only, not GPTModel's "
                           "position_embedding_type yarn");
    }
  }
  return s;
}

LaunchShape launch_shape(const topology::Cluster& cluster) {
  std::map<int, int> per_node;
  for (const topology::DeviceId gpu : cluster.gpus()) ++per_node[cluster.device(gpu).node];
  LaunchShape shape{static_cast<int>(per_node.size()), 0};
  for (const auto& [node, gpus] : per_node) shape.gpus_per_node = std::max(shape.gpus_per_node, gpus);
  return shape;
}

std::vector<int> blocks_per_stage(const plan::Plan& plan) {
  std::vector<int> blocks;
  for (std::size_t s = 0; s + 1 < plan.partition.size(); ++s) blocks.push_back(plan.partition[s + 1] - plan.partition[s]);
  return blocks;
}

bool is_uniform_split(const plan::Plan& plan) {
  const std::vector<int> blocks = blocks_per_stage(plan);
  return std::adjacent_find(blocks.begin(), blocks.end(), std::not_equal_to<>()) == blocks.end();
}

std::string pipeline_layout(const plan::Plan& p) {
  const std::vector<int> blocks = blocks_per_stage(p);
  std::string out;
  for (std::size_t s = 0; s < blocks.size(); ++s) {
    if (s > 0) out += "|";
    if (s == 0) out += "E";
    if (blocks[s] == 1) out += "t";
    if (blocks[s] > 1) out += fmt::format("t*{}", blocks[s]);
    if (s + 1 == blocks.size()) out += "L";
  }
  return out;
}

std::vector<plan::Axis> split_order(const plan::Plan& p, const plan::Placement& placement) {
  std::vector<plan::Axis> order;
  for (const plan::Axis a : plan::complete_order(placement)) {
    if (p.degrees[a] > 1) order.push_back(a);
  }
  return order;
}

bool selective_is_flash_attention(const plan::Plan& p) {
  return p.recompute == plan::Recompute::Selective && p.recompute_modules == model::RecomputeModules{} &&
         p.attention == plan::AttentionKernel::Flash;
}

}  // namespace mpsim::interop
