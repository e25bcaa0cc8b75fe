#include "model/arch/eagle.h"

#include "model/arch/common.h"
#include "model/layers/attention.h"
#include "model/layers/mlp.h"
#include "model/loader/checkpoint.h"
#include "model/registry.h"

namespace vllm {

Result<std::unique_ptr<Model>> build_eagle_head(const ModelConfig& c, WeightReader& w, const DecoderModel* target,
                                                bool fc_bias) {
  VLLM_ASSIGN_OR_RETURN(const Activation act, activation_named(c.hidden_act, c.source));
  if (act != Activation::kSilu) {
    return unimplemented(c.source + ": unsupported hidden_act '" + c.hidden_act + "'; supported: silu");
  }
  const int64_t h = c.hidden_size;
  DecoderParts parts;
  std::vector<std::string> fc_bias_names;
  if (fc_bias) fc_bias_names.emplace_back("fc.bias");
  VLLM_ASSIGN_OR_RETURN(parts.input_fc, Linear::load(w, {"fc.weight"}, {h}, 2 * h, fc_bias_names));
  parts.ropes.emplace_back(c.rotary_dim, c.rope_theta, c.rope_scaling);
  const AttentionConfig attention = standard_attention(c);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    DecoderLayer& layer = parts.layers.emplace_back();
    if (i == 0) {
      layer.input_norm = Norm::identity(h);
    } else {
      VLLM_ASSIGN_OR_RETURN(layer.input_norm, Norm::load(w, p + "input_layernorm", h, c.rms_norm_eps));
    }
    VLLM_ASSIGN_OR_RETURN(layer.mixer,
                          Attention::load(w, {p + "self_attn.", false, c.attention_bias, c.attention_bias}, attention));
    VLLM_ASSIGN_OR_RETURN(layer.ffn_norm, Norm::load(w, p + "post_attention_layernorm", h, c.rms_norm_eps));
    VLLM_ASSIGN_OR_RETURN(layer.ffn, GatedMlp::load(w, {p + "mlp."}, h, c.intermediate_size));
  }
  parts.final_norm = Norm::identity(h);
  ModelConfig config = c;
  if (target != nullptr) {
    const DecoderParts& shared = target->parts();
    // Under tensor parallelism the head, on rank 0 alone, reads the whole vocabulary.
    parts.embed_tokens = shared.whole_vocabulary ? shared.whole_vocabulary->embed_tokens : shared.embed_tokens;
    parts.embedding_scale = shared.embedding_scale;
    parts.lm_head = shared.whole_vocabulary ? shared.whole_vocabulary->lm_head : shared.lm_head;
    parts.logit_softcap = shared.logit_softcap;
    parts.logit_scale = shared.logit_scale;
    config.vocab_size = target->config().vocab_size;  // its logits are the target's LM head's
  }
  return std::unique_ptr<Model>(new DecoderModel(std::move(config), std::move(parts)));
}

Result<std::vector<WeightSpec>> eagle_head_weight_specs(const ModelConfig& head) {
  WeightLister lister;
  VLLM_RETURN_IF_ERROR(build_eagle_head(head, lister, nullptr, false).status());
  return std::move(lister.specs);
}

Result<std::unique_ptr<Model>> load_eagle_head(const std::string& path, const Model& target) {
  const auto* decoder = dynamic_cast<const DecoderModel*>(&target);
  if (decoder == nullptr || decoder->parts().input_fc) {
    return invalid_argument("an EAGLE head needs a decoder-only target model");
  }
  VLLM_ASSIGN_OR_RETURN(const ModelConfig config, load_model_config(path));
  const int64_t target_hidden = target.config().hidden_size;
  if (config.hidden_size != target_hidden) {
    return invalid_argument(config.source + ": the EAGLE head's hidden_size (" + std::to_string(config.hidden_size) +
                            ") differs from the target model's (" + std::to_string(target_hidden) + ")");
  }
  VLLM_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(path));
  VLLM_RETURN_IF_ERROR(check_layers_present(config, checkpoint, "layers."));
  ThreadPool packers(ThreadPool::default_num_threads());
  SourceWeightReader reader(checkpoint, packers);
  return build_eagle_head(config, reader, decoder, checkpoint.has("fc.bias"));
}

}  // namespace vllm
