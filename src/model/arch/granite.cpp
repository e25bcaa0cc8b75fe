#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Granite (3.x): Llama with four multipliers: attention_multiplier as the
// softmax scale, embedding_multiplier on the embeddings, residual_multiplier
// on each sub-layer's output before its residual add, logits divided by
// logits_scaling.
Result<std::unique_ptr<Model>> build_granite(const ModelConfig& config, WeightReader& weights) {
  const ConfigReader r(config.json, config.source);
  VLLM_ASSIGN_OR_RETURN(const bool mlp_bias, r.boolean("mlp_bias", false));
  if (mlp_bias) return unimplemented(config.source + ": mlp_bias true is not supported for Granite");
  VLLM_ASSIGN_OR_RETURN(const double attention_multiplier, r.number("attention_multiplier", 1.0));
  VLLM_ASSIGN_OR_RETURN(const double embedding_multiplier, r.number("embedding_multiplier", 1.0));
  VLLM_ASSIGN_OR_RETURN(const double residual_multiplier, r.number("residual_multiplier", 1.0));
  VLLM_ASSIGN_OR_RETURN(const double logits_scaling, r.number("logits_scaling", 1.0));
  if (!(logits_scaling != 0.0)) return r.error("logits_scaling", "must not be 0");
  return build_llama_family(config, weights,
                            {.qkv_bias = config.attention_bias,
                             .o_bias = config.attention_bias,
                             .attention_scale = static_cast<float>(attention_multiplier),
                             .embedding_scale = static_cast<float>(embedding_multiplier),
                             .residual_scale = static_cast<float>(residual_multiplier),
                             .logit_scale = static_cast<float>(1.0 / logits_scaling)});
}

}  // namespace vllm
