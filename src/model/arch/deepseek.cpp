#include <cmath>
#include <optional>

#include "base/logging.h"
#include "model/arch/architectures.h"
#include "model/arch/common.h"
#include "model/arch/mixture.h"
#include "model/layers/mla.h"

namespace vllm {
namespace {

// The defaults of transformers' DeepseekV2Config and DeepseekV3Config where
// they differ.
struct DeepseekDefaults {
  int64_t routed_experts, shared_experts, moe_intermediate_size, first_k_dense_replace;
  std::optional<int64_t> top_k;  // V2: none (required when there are experts)
  int64_t num_groups, topk_groups;
  double routed_scaling_factor;
  bool norm_topk_prob;
};
constexpr DeepseekDefaults kV2Defaults{64, 2, 1407, 0, std::nullopt, 1, 1, 1.0, false};
constexpr DeepseekDefaults kV3Defaults{256, 1, 2048, 3, 8, 8, 4, 2.5, true};

// An integer field where null means `if_null` and absence the class default.
Result<int64_t> integer_or_null(const ConfigReader& r, const Json& json, const std::string& key, int64_t if_null,
                                int64_t fallback) {
  if (json.contains(key) && json[key].is_null()) return if_null;
  return r.positive_integer(key, fallback);
}

// 1 / sqrt(nope + rope), times mscale^2 for YaRN's mscale_all_dim (the
// models' softmax scale; cos and sin carry the mscale / mscale_all_dim ratio).
float softmax_scale(const ModelConfig& c, int64_t query_dim) {
  double scale = 1.0 / std::sqrt(static_cast<double>(query_dim));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScalingType::kYarn && s.mscale_all_dim != 0.0) {
    scale *= std::pow(yarn_mscale(s.factor, s.mscale_all_dim), 2);
  }
  return static_cast<float>(scale);
}

Result<MlaConfig> mla_config(const ModelConfig& c, const ConfigReader& r, bool v3) {
  if (c.attention_bias) return r.error("attention_bias", "true is not supported (no DeepSeek checkpoint has it)");
  MlaConfig m;
  m.hidden_size = c.hidden_size;
  m.num_heads = c.num_attention_heads;
  VLLM_ASSIGN_OR_RETURN(m.q_lora_rank, integer_or_null(r, c.json, "q_lora_rank", 0, 1536));
  VLLM_ASSIGN_OR_RETURN(m.kv_lora_rank, r.positive_integer("kv_lora_rank", 512));
  VLLM_ASSIGN_OR_RETURN(m.qk_nope_head_dim, r.positive_integer("qk_nope_head_dim", 128));
  VLLM_ASSIGN_OR_RETURN(m.qk_rope_head_dim, r.positive_integer("qk_rope_head_dim", 64));
  VLLM_ASSIGN_OR_RETURN(m.v_head_dim, r.positive_integer("v_head_dim", 128));
  if (m.qk_rope_head_dim % 2 != 0) return r.error("qk_rope_head_dim", "must be even for rotary embeddings");
  m.scale = softmax_scale(c, m.qk_nope_head_dim + m.qk_rope_head_dim);
  // transformers builds q_a_layernorm and kv_a_layernorm with RMSNorm's default eps.
  m.norm_eps = 1e-6;
  // V2 rotates interleaved pairs (its complex form); V3 too unless
  // rope_interleave is false, where transformers rotates halves.
  VLLM_ASSIGN_OR_RETURN(const bool interleave_key, r.boolean("rope_interleave", true));
  const bool interleave = !v3 || interleave_key;
  m.rope_layout = interleave ? kernels::RopeLayout::kInterleaved : kernels::RopeLayout::kHalfSplit;
  return m;
}

// V2: softmax scores, greedy or group-limited (groups by their best
// expert) top-k, weights times routed_scaling_factor (transformers' V2 does
// not renormalise, whatever norm_topk_prob says).  V3: sigmoid scores, the
// noaux_tc rule (groups by their two best biased scores, the
// e_score_correction_bias for choosing only), renormalised when
// norm_topk_prob, then scaled.
Result<RouterConfig> deepseek_router(const ConfigReader& r, const Json& json, bool v3, const DeepseekDefaults& d,
                                     int64_t experts) {
  RouterConfig router;
  if (experts > 65536) return r.error("n_routed_experts", "is over 65536");
  router.num_experts = static_cast<int32_t>(experts);
  // MoE::load checks how these fit together; here only that each fits an int32.
  VLLM_ASSIGN_OR_RETURN(const int64_t top_k, r.positive_integer("num_experts_per_tok", d.top_k));
  VLLM_ASSIGN_OR_RETURN(const int64_t groups, integer_or_null(r, json, "n_group", 1, d.num_groups));
  VLLM_ASSIGN_OR_RETURN(const int64_t topk_groups, integer_or_null(r, json, "topk_group", 1, d.topk_groups));
  if (top_k > experts)
    return r.error("num_experts_per_tok", "is more than the " + std::to_string(experts) + " experts");
  if (groups > experts || topk_groups > groups)
    return r.error("topk_group", "must be at most n_group, at most the experts");
  router.top_k = static_cast<int32_t>(top_k);
  router.num_groups = static_cast<int32_t>(groups);
  router.topk_groups = static_cast<int32_t>(topk_groups);
  VLLM_ASSIGN_OR_RETURN(const double scaling, r.number("routed_scaling_factor", d.routed_scaling_factor));
  router.routed_scaling_factor = static_cast<float>(scaling);
  if (v3) {
    router.scoring = RouterConfig::Scoring::kSigmoid;
    router.group_score = RouterConfig::GroupScore::kTopTwoSum;
    router.selection_bias = true;
    VLLM_ASSIGN_OR_RETURN(router.renormalize, r.boolean("norm_topk_prob", d.norm_topk_prob));
    return router;
  }
  VLLM_ASSIGN_OR_RETURN(const std::string method, r.string("topk_method", "greedy"));
  VLLM_ASSIGN_OR_RETURN(const std::string scoring, r.string("scoring_func", "softmax"));
  if (scoring != "softmax") return r.error("scoring_func", "'" + scoring + "' is not supported (only softmax)");
  if (method == "greedy") {
    router.num_groups = router.topk_groups = 1;
  } else if (method != "group_limited_greedy") {
    return r.error("topk_method", "'" + method + "' is not supported (greedy, group_limited_greedy)");
  }
  return router;
}

Result<std::unique_ptr<Model>> build_deepseek(const ModelConfig& parsed, WeightReader& weights, bool v3) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  const DeepseekDefaults& d = v3 ? kV3Defaults : kV2Defaults;
  c.sliding_window = 0;
  VLLM_ASSIGN_OR_RETURN(const MlaConfig mla, mla_config(c, r, v3));
  c.rotary_dim = mla.qk_rope_head_dim;
  VLLM_ASSIGN_OR_RETURN(const int64_t mtp_layers, r.integer("num_nextn_predict_layers", 0));
  if (mtp_layers > 0) {
    VLLM_LOG(Info) << c.source << ": skipping " << mtp_layers << " multi-token-prediction layer(s) (model.layers."
                   << c.num_hidden_layers << "+, for speculative decoding)";
  }

  // Layer i is a mixture when there are routed experts, i >= first_k_dense_replace
  // and i is a multiple of moe_layer_freq; else the dense MLP of intermediate_size.
  VLLM_ASSIGN_OR_RETURN(const int64_t experts, integer_or_null(r, c.json, "n_routed_experts", 0, d.routed_experts));
  VLLM_ASSIGN_OR_RETURN(const int64_t first_dense, r.integer("first_k_dense_replace", d.first_k_dense_replace));
  VLLM_ASSIGN_OR_RETURN(const int64_t frequency, r.positive_integer("moe_layer_freq", 1));
  std::vector<bool> sparse;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    sparse.push_back(experts > 0 && i >= first_dense && i % frequency == 0);
  RouterConfig router;
  MoeWeights names{.prefix = "mlp.", .shared_name = "shared_experts."};
  if (experts > 0) {
    VLLM_ASSIGN_OR_RETURN(router, deepseek_router(r, c.json, v3, d, experts));
    VLLM_ASSIGN_OR_RETURN(names.expert_intermediate_size,
                          r.positive_integer("moe_intermediate_size", d.moe_intermediate_size));
    VLLM_ASSIGN_OR_RETURN(const int64_t shared, integer_or_null(r, c.json, "n_shared_experts", 0, d.shared_experts));
    // The shared experts are one MLP of their summed width.
    names.shared_intermediate_size = shared * names.expert_intermediate_size;
  }
  const MixerBuilder mixer = [mla](WeightReader& w, int64_t layer) -> Result<std::unique_ptr<SequenceMixer>> {
    VLLM_ASSIGN_OR_RETURN(auto attention, MlaAttention::load(w, layer_prefix(layer) + "self_attn.", mla));
    return std::unique_ptr<SequenceMixer>(std::move(attention));
  };
  return build_llama_family(c, weights,
                            {.feed_forward = moe_or_dense(c, std::move(sparse), names, router), .mixer = mixer});
}

}  // namespace

// DeepSeek-V2 (and V2-Lite): multi-head latent attention (q_lora_rank null
// or set), dense layers before first_k_dense_replace, then mixtures of
// n_routed_experts with n_shared_experts always-on experts.
Result<std::unique_ptr<Model>> build_deepseek_v2(const ModelConfig& config, WeightReader& weights) {
  return build_deepseek(config, weights, /*v3=*/false);
}

// DeepSeek-V3 / R1: V2's layers with the noaux_tc sigmoid router; the
// checkpoint's multi-token-prediction layers are not run.
Result<std::unique_ptr<Model>> build_deepseek_v3(const ModelConfig& config, WeightReader& weights) {
  return build_deepseek(config, weights, /*v3=*/true);
}

}  // namespace vllm
