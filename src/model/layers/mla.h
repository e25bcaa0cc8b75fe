// Multi-head latent attention (DeepSeek V2 / V3).  Each token's keys and
// values come from one compressed latent c = RMSNorm(kv_a(x)[:kv_lora_rank])
// and a rotary key part k_pe = kv_a(x)[kv_lora_rank:] shared by all heads;
// per head, k_nope = W_UK c and v = W_UV c (kv_b_proj's rows).  The cache
// holds only [c | rope(k_pe)] per token (kv_lora_rank + qk_rope_head_dim),
// and attention runs in the latent space with the up-projections absorbed:
//   score_h(t) = scale * ([W_UK^T q_nope_h | rope(q_pe_h)] . [c_t | k_pe_t])
//   o_h = W_UV (sum_t softmax(score_h)(t) c_t),  out = o_proj([o_h]_h)
// which is exactly softmax(q_h . k_h) v_h of the expanded form, for every
// chunk of a prompt and for decode alike.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/layers/layer.h"
#include "model/layers/linear.h"
#include "model/layers/norm.h"

namespace vllm {

struct MlaConfig {
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t q_lora_rank = 0;  // 0: q_proj straight from the input; else q_a_proj, q_a_layernorm, q_b_proj
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  float scale = 0;  // of the scores: 1 / sqrt(nope + rope), times YaRN's mscale^2 where the model has it
  double norm_eps = 1e-6;
  kernels::RopeLayout rope_layout = kernels::RopeLayout::kInterleaved;
  int rope = 0;  // which of the model's rotary embeddings (RopeTables)
};

class MlaAttention : public SequenceMixer {
 public:
  // The checkpoint's names under `prefix` ("model.layers.3.self_attn."), bias-free.
  static Result<std::unique_ptr<MlaAttention>> load(WeightReader& weights, const std::string& prefix,
                                                    const MlaConfig& config);

  void forward(const float* x, const LayerContext& ctx, float* out) const override;
  LayerKVSpec kv_spec() const override;
  void add_cost(ModelCost& cost) const override;

 private:
  int64_t q_features() const;  // rows of in_proj_ that are the query's (or its low-rank input's)
  int64_t query_dim() const { return c_.qk_nope_head_dim + c_.qk_rope_head_dim; }
  int64_t latent_dim() const { return c_.kv_lora_rank + c_.qk_rope_head_dim; }
  // Per head h: out[h] = heads[h] applied to in[h]; in: [heads, T, in], out: [heads, T, out].
  static void per_head(const std::vector<Linear>& heads, const float* in, int64_t t, float* out, ThreadPool& pool);

  MlaConfig c_;
  // Everything computed from the input, stacked: q_proj (or q_a_proj), then kv_a_proj_with_mqa.
  Linear in_proj_;
  std::optional<Linear> q_b_proj_;  // [heads * (nope + rope), q_lora_rank]
  Norm q_a_norm_;
  Norm kv_a_norm_;              // [kv_lora_rank]
  std::vector<Linear> k_up_t_;  // per head [kv_lora_rank, nope]: W_UK^T, q_nope -> latent query
  std::vector<Linear> v_up_;    // per head [v_head_dim, kv_lora_rank]: W_UV, latent output -> value
  Linear o_proj_;               // [hidden, heads * v_head_dim]
  float cache_scale_ = 1.0f;    // of an FP8 cache
  bool checkpoint_cache_scale_ = false;
};

}  // namespace vllm
