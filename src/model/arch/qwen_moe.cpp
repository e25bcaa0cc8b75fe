#include "model/arch/architectures.h"
#include "model/arch/mixture.h"

namespace vllm {
namespace {

Status refuse_sliding_window(const ConfigReader& r) {
  VLLM_ASSIGN_OR_RETURN(const bool sliding, r.boolean("use_sliding_window", false));
  if (sliding) return r.error("use_sliding_window", "true is not supported for this architecture");
  return {};
}

}  // namespace

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention (q, k, v
// biases), sparse layers of num_experts experts of moe_intermediate_size
// plus a shared expert scaled by sigmoid(shared_expert_gate . x); dense
// layers where mlp_only_layers / decoder_sparse_step say.
Result<std::unique_ptr<Model>> build_qwen2_moe(const ModelConfig& parsed, WeightReader& weights) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  VLLM_RETURN_IF_ERROR(refuse_sliding_window(r));
  c.sliding_window = 0;
  VLLM_ASSIGN_OR_RETURN(const bool qkv_bias, r.boolean("qkv_bias", true));
  VLLM_ASSIGN_OR_RETURN(const RouterConfig router, softmax_router(r, "num_experts", "num_local_experts", 60, 4));
  VLLM_ASSIGN_OR_RETURN(const std::vector<bool> sparse, qwen_sparse_layers(c, r));
  MoeWeights names{.prefix = "mlp.", .shared_gate = true};
  VLLM_ASSIGN_OR_RETURN(names.expert_intermediate_size, r.positive_integer("moe_intermediate_size", 1408));
  VLLM_ASSIGN_OR_RETURN(names.shared_intermediate_size, r.integer("shared_expert_intermediate_size", 5632));
  if (names.shared_intermediate_size <= 0) return r.error("shared_expert_intermediate_size", "must be positive");
  return build_llama_family(c, weights, {.qkv_bias = qkv_bias, .feed_forward = moe_or_dense(c, sparse, names, router)});
}

// Qwen3-MoE: Qwen3's attention (per-head q/k norms, attention_bias on q, k,
// v and o), sparse layers of num_experts experts of moe_intermediate_size,
// no shared expert; norm_topk_prob as config.json says (true on the hub).
Result<std::unique_ptr<Model>> build_qwen3_moe(const ModelConfig& parsed, WeightReader& weights) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  VLLM_RETURN_IF_ERROR(refuse_sliding_window(r));
  c.sliding_window = 0;
  VLLM_ASSIGN_OR_RETURN(const RouterConfig router, softmax_router(r, "num_experts", "num_local_experts", 128, 8));
  VLLM_ASSIGN_OR_RETURN(const std::vector<bool> sparse, qwen_sparse_layers(c, r));
  MoeWeights names{.prefix = "mlp."};
  VLLM_ASSIGN_OR_RETURN(names.expert_intermediate_size, r.positive_integer("moe_intermediate_size", 768));
  return build_llama_family(c, weights,
                            {.qkv_bias = c.attention_bias,
                             .o_bias = c.attention_bias,
                             .qk_norm = AttentionConfig::QKNorm::kPerHead,
                             .feed_forward = moe_or_dense(c, sparse, names, router)});
}

}  // namespace vllm
