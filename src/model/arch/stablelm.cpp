#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// StableLM (StableLM-3B-4E1T, StableLM-2, Zephyr): Llama with LayerNorms
// (weight and bias, layer_norm_eps), rotary over partial_rotary_factor of
// each head, and biases on q, k and v when use_qkv_bias.
Result<std::unique_ptr<Model>> build_stablelm(const ModelConfig& config, WeightReader& weights) {
  const ConfigReader r(config.json, config.source);
  VLLM_ASSIGN_OR_RETURN(const bool parallel_residual, r.boolean("use_parallel_residual", false));
  if (parallel_residual) return r.error("use_parallel_residual", "true is not supported for StableLM");
  VLLM_ASSIGN_OR_RETURN(const bool qk_layernorm, r.boolean("qk_layernorm", false));
  if (qk_layernorm) return r.error("qk_layernorm", "true is not supported for StableLM");
  VLLM_ASSIGN_OR_RETURN(const bool qkv_bias, r.boolean("use_qkv_bias", false));
  VLLM_ASSIGN_OR_RETURN(const double eps, r.number("layer_norm_eps", 1e-5));
  return build_llama_family(config, weights, {.qkv_bias = qkv_bias, .norm = Norm::Form::kLayer, .norm_eps = eps});
}

}  // namespace vllm
