#include "model/arch/architectures.h"
#include "model/arch/mixture.h"

namespace vllm {

// Mixtral: Mistral's attention with every MLP a mixture of
// num_local_experts SwiGLU experts (w1 gate, w3 up, w2 down) of
// intermediate_size, the top-k weights always renormalised.
Result<std::unique_ptr<Model>> build_mixtral(const ModelConfig& parsed, WeightReader& weights) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  // MixtralConfig's defaults where config.json leaves a key out.
  VLLM_ASSIGN_OR_RETURN(c.rope_theta, r.number("rope_theta", 1e6));
  VLLM_ASSIGN_OR_RETURN(c.rms_norm_eps, r.number("rms_norm_eps", 1e-5));
  VLLM_ASSIGN_OR_RETURN(RouterConfig router, softmax_router(r, "num_local_experts", "num_experts", 8, 2));
  router.renormalize = true;
  const MoeWeights names{.prefix = "block_sparse_moe.",
                         .expert_names = {.gate = "w1", .up = "w3", .down = "w2"},
                         .expert_intermediate_size = c.intermediate_size};
  return build_llama_family(c, weights,
                            {.sliding_window = true,
                             .feed_forward = moe_or_dense(
                                 c, std::vector<bool>(static_cast<size_t>(c.num_hidden_layers), true), names, router)});
}

}  // namespace vllm
