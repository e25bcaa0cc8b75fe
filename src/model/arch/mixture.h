// What the mixture-of-experts architectures share: their router settings
// from config.json, and which layers are sparse.
#pragma once

#include <string>
#include <vector>

#include "model/arch/llama_family.h"
#include "model/layers/moe.h"

namespace vllm {

// A softmax router over `experts_key` experts (or its `alias`, the name
// transformers' attribute_map gives it) picking num_experts_per_tok, each
// default where config.json leaves it out; renormalised when
// norm_topk_prob says so (default false).
Result<RouterConfig> softmax_router(const ConfigReader& r, const std::string& experts_key, const std::string& alias,
                                    int64_t default_experts, int64_t default_top_k);

// Qwen-MoE's rule: layer i is sparse unless mlp_only_layers names it or
// (i + 1) is not a multiple of decoder_sparse_step.
Result<std::vector<bool>> qwen_sparse_layers(const ModelConfig& c, const ConfigReader& r);

// Layer i's feed-forward: the MoE of `names` (prefix = the layer's "mlp.")
// where `sparse` says so, else the dense SwiGLU MLP of intermediate_size.
FeedForwardBuilder moe_or_dense(const ModelConfig& c, std::vector<bool> sparse, MoeWeights names,
                                const RouterConfig& router);

}  // namespace vllm
