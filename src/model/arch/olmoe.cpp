#include "model/arch/architectures.h"
#include "model/arch/mixture.h"

namespace vllm {

// OLMoE: RMSNorm over the whole q and k projections before RoPE,
// attention_bias on q, k, v and o, every layer a mixture of num_experts
// experts of intermediate_size.
Result<std::unique_ptr<Model>> build_olmoe(const ModelConfig& parsed, WeightReader& weights) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  VLLM_ASSIGN_OR_RETURN(c.rms_norm_eps, r.number("rms_norm_eps", 1e-5));  // OlmoeConfig's default
  VLLM_ASSIGN_OR_RETURN(const double clip_qkv, r.number_or_null("clip_qkv", 0.0));
  if (clip_qkv != 0.0) return r.error("clip_qkv", "is not supported (only null)");
  c.sliding_window = 0;
  VLLM_ASSIGN_OR_RETURN(const RouterConfig router, softmax_router(r, "num_experts", "num_local_experts", 64, 8));
  const MoeWeights names{.prefix = "mlp.", .expert_intermediate_size = c.intermediate_size};
  return build_llama_family(c, weights,
                            {.qkv_bias = c.attention_bias,
                             .o_bias = c.attention_bias,
                             .qk_norm = AttentionConfig::QKNorm::kWhole,
                             .feed_forward = moe_or_dense(
                                 c, std::vector<bool>(static_cast<size_t>(c.num_hidden_layers), true), names, router)});
}

}  // namespace vllm
