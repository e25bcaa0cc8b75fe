#include "model/arch/mixture.h"

#include <algorithm>

#include "model/arch/common.h"

namespace vllm {

Result<RouterConfig> softmax_router(const ConfigReader& r, const std::string& experts_key, const std::string& alias,
                                    int64_t default_experts, int64_t default_top_k) {
  RouterConfig router;
  VLLM_ASSIGN_OR_RETURN(int64_t experts, r.positive_integer(alias, default_experts));
  VLLM_ASSIGN_OR_RETURN(experts, r.positive_integer(experts_key, experts));
  VLLM_ASSIGN_OR_RETURN(const int64_t top_k, r.positive_integer("num_experts_per_tok", default_top_k));
  if (experts > 65536) return r.error(experts_key, "is over 65536");
  router.num_experts = static_cast<int32_t>(experts);
  if (top_k > experts) {
    return r.error("num_experts_per_tok",
                   "is " + std::to_string(top_k) + ", more than the " + std::to_string(experts) + " experts");
  }
  router.top_k = static_cast<int32_t>(top_k);
  VLLM_ASSIGN_OR_RETURN(router.renormalize, r.boolean("norm_topk_prob", false));
  return router;
}

Result<std::vector<bool>> qwen_sparse_layers(const ModelConfig& c, const ConfigReader& r) {
  VLLM_ASSIGN_OR_RETURN(const int64_t step, r.positive_integer("decoder_sparse_step", 1));
  VLLM_ASSIGN_OR_RETURN(const std::vector<int64_t> dense, r.integer_list("mlp_only_layers"));
  std::vector<bool> sparse;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    sparse.push_back(std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0);
  }
  return sparse;
}

FeedForwardBuilder moe_or_dense(const ModelConfig& c, std::vector<bool> sparse, MoeWeights names,
                                const RouterConfig& router) {
  return [&c, sparse = std::move(sparse), names = std::move(names), router](
             WeightReader& w, int64_t layer) -> Result<std::unique_ptr<FeedForward>> {
    const std::string prefix = layer_prefix(layer) + names.prefix;
    if (!sparse[static_cast<size_t>(layer)]) {
      VLLM_ASSIGN_OR_RETURN(auto mlp, GatedMlp::load(w, {prefix}, c.hidden_size, c.intermediate_size));
      return std::unique_ptr<FeedForward>(std::move(mlp));
    }
    MoeWeights layer_names = names;
    layer_names.prefix = prefix;
    VLLM_ASSIGN_OR_RETURN(auto moe, MoE::load(w, layer_names, c.hidden_size, router));
    return std::unique_ptr<FeedForward>(std::move(moe));
  };
}

}  // namespace vllm
