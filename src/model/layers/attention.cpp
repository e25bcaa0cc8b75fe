#include "model/layers/attention.h"

#include <algorithm>

#include "base/logging.h"
#include "model/layers/kv_cache_scales.h"

namespace vllm {

namespace {

// Under tensor parallelism, which of q, k and v's rows (and o's columns) a
// rank holds: its share of the query heads, and of the KV heads, or with
// fewer KV heads than ranks the one KV head its queries read (each KV head
// then held by size / num_kv_heads ranks, as vLLM replicates them).
struct HeadShard {
  int64_t num_heads = 0, num_kv_heads = 0;
  IndexRange q, kv;     // of q's rows, and of k's and v's
  int kv_replicas = 1;  // ranks that hold each KV head
  MatrixShard qkv;      // rows of q, k, v (or of a fused qkv_proj: three ranges of it)
  MatrixShard o;        // columns of o_proj
};

HeadShard head_shard(const AttentionConfig& c, const TensorParallel& tp, bool fused) {
  HeadShard s{.num_heads = c.num_heads, .num_kv_heads = c.num_kv_heads};
  if (tp.size() == 1) return s;
  const int64_t size = tp.size(), hd = c.head_dim;
  VLLM_CHECK(c.num_heads % size == 0 && (c.num_kv_heads % size == 0 || size % c.num_kv_heads == 0),
             "attention heads that the tensor-parallel size divides (checked when the model is loaded)");
  s.num_heads = c.num_heads / size;
  s.num_kv_heads = std::max<int64_t>(1, c.num_kv_heads / size);
  const int64_t kv_index = c.num_kv_heads >= size ? tp.rank() : tp.rank() / (size / c.num_kv_heads);
  const IndexRange q{tp.rank() * s.num_heads * hd, s.num_heads * hd};
  const IndexRange kv{kv_index * s.num_kv_heads * hd, s.num_kv_heads * hd};
  s.q = q;
  s.kv = kv;
  s.kv_replicas = c.num_kv_heads >= size ? 1 : static_cast<int>(size / c.num_kv_heads);
  if (fused) {  // one tensor of every q, then every k, then every v row
    const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
    s.qkv.rows = {q, {q_dim + kv.first, kv.count}, {q_dim + kv_dim + kv.first, kv.count}};
  } else {
    s.qkv.rows = {q, kv, kv};
  }
  s.o.cols = q;
  return s;
}

}  // namespace

Result<std::unique_ptr<Attention>> Attention::load(WeightReader& weights, const AttentionWeights& names,
                                                   const AttentionConfig& config) {
  auto a = std::make_unique<Attention>();
  const TensorParallel& tp = weights.tensor_parallel();
  const HeadShard shard = head_shard(config, tp, names.fused_qkv);
  a->c_ = config;
  a->c_.num_heads = shard.num_heads;
  a->c_.num_kv_heads = shard.num_kv_heads;
  const int64_t h = config.hidden_size, hd = config.head_dim;
  const int64_t in = config.input_size != 0 ? config.input_size : h;
  const int64_t q_dim = config.num_heads * hd, kv_dim = config.num_kv_heads * hd;
  const std::string& p = names.prefix;
  if (names.fused_qkv) {
    const std::string qkv = p + "qkv_proj.weight";
    const int64_t qkv_rows = q_dim + 2 * kv_dim;
    // A fused tensor's shard is three ranges of it: name it thrice.
    const bool three = !shard.qkv.rows.empty();
    std::vector<std::string> biases;
    if (names.qkv_bias) biases.assign(three ? 3 : 1, p + "qkv_proj.bias");
    VLLM_ASSIGN_OR_RETURN(a->qkv_proj_,
                          Linear::load_shard(weights, std::vector<std::string>(three ? 3 : 1, qkv),
                                             std::vector<int64_t>(three ? 3 : 1, qkv_rows), in, shard.qkv, biases));
  } else {
    const std::vector<std::string> biases =
        names.qkv_bias ? std::vector<std::string>{p + "q_proj.bias", p + "k_proj.bias", p + "v_proj.bias"}
                       : std::vector<std::string>{};
    VLLM_ASSIGN_OR_RETURN(a->qkv_proj_,
                          Linear::load_shard(weights, {p + "q_proj.weight", p + "k_proj.weight", p + "v_proj.weight"},
                                             {q_dim, kv_dim, kv_dim}, in, shard.qkv, biases));
  }
  VLLM_ASSIGN_OR_RETURN(a->o_proj_, Linear::load_shard(weights, {p + "o_proj.weight"}, {h}, q_dim, shard.o,
                                                       names.o_bias ? std::vector<std::string>{p + "o_proj.bias"}
                                                                    : std::vector<std::string>{},
                                                       tp.size() > 1 ? tp.group : nullptr));
  VLLM_ASSIGN_OR_RETURN(const std::optional<kernels::KVScales> scales, load_kv_cache_scales(weights, p));
  a->kv_scales_ = scales.value_or(kernels::KVScales{});
  a->checkpoint_kv_scales_ = scales.has_value();
  if (config.qk_norm == AttentionConfig::QKNorm::kWhole && tp.size() > 1) {
    // Over the whole projection, whose heads the ranks share (OLMoE's).
    VLLM_CHECK(config.qk_norm_form == Norm::Form::kRms, "a split q/k norm is an RMSNorm");
    VLLM_ASSIGN_OR_RETURN(a->q_norm_,
                          Norm::load_split(weights, p + "q_norm", q_dim, shard.q, config.norm_eps, tp.group, 1));
    VLLM_ASSIGN_OR_RETURN(a->k_norm_, Norm::load_split(weights, p + "k_norm", kv_dim, shard.kv, config.norm_eps,
                                                       tp.group, shard.kv_replicas));
  } else if (config.qk_norm != AttentionConfig::QKNorm::kNone) {
    const bool whole = config.qk_norm == AttentionConfig::QKNorm::kWhole;
    VLLM_ASSIGN_OR_RETURN(a->q_norm_,
                          Norm::load(weights, p + "q_norm", whole ? q_dim : hd, config.norm_eps, config.qk_norm_form));
    VLLM_ASSIGN_OR_RETURN(a->k_norm_,
                          Norm::load(weights, p + "k_norm", whole ? kv_dim : hd, config.norm_eps, config.qk_norm_form));
  }
  return a;
}

void Attention::forward(const float* x, const LayerContext& ctx, float* out) const {
  const int64_t t = ctx.batch.num_tokens;
  const int64_t hd = c_.head_dim, nh = c_.num_heads, nkv = c_.num_kv_heads;
  const int64_t q_dim = nh * hd, kv_dim = nkv * hd, qkv_dim = q_dim + 2 * kv_dim;
  float* qkv = ctx.scratch.get(ScratchSlot::kQkv, static_cast<size_t>(t * qkv_dim));
  float* q = ctx.scratch.get(ScratchSlot::kQ, static_cast<size_t>(t * q_dim));
  float* k = ctx.scratch.get(ScratchSlot::kK, static_cast<size_t>(t * kv_dim));
  float* v = ctx.scratch.get(ScratchSlot::kV, static_cast<size_t>(t * kv_dim));
  float* attn = ctx.scratch.get(ScratchSlot::kAttnOut, static_cast<size_t>(t * q_dim));
  qkv_proj_.forward(x, t, qkv, ctx.pool, ctx.batch.lora_slots);
  for (int64_t r = 0; r < t; ++r) {
    const float* row = qkv + r * qkv_dim;
    std::copy_n(row, q_dim, q + r * q_dim);
    std::copy_n(row + q_dim, kv_dim, k + r * kv_dim);
    std::copy_n(row + q_dim + kv_dim, kv_dim, v + r * kv_dim);
  }
  switch (c_.qk_norm) {
    case AttentionConfig::QKNorm::kNone:
      break;
    case AttentionConfig::QKNorm::kPerHead:
      q_norm_.forward(q, t * nh, q, ctx.pool);
      k_norm_.forward(k, t * nkv, k, ctx.pool);
      break;
    case AttentionConfig::QKNorm::kWhole:
      q_norm_.forward(q, t, q, ctx.pool);
      k_norm_.forward(k, t, k, ctx.pool);
      break;
  }
  const auto rope = static_cast<size_t>(c_.rope);
  const int64_t rotary_dim = ctx.rope.rotary_dim[rope];
  kernels::rope(q, t, nh, hd, rotary_dim, ctx.rope.cos[rope].data(), ctx.rope.sin[rope].data(), ctx.pool);
  kernels::rope(k, t, nkv, hd, rotary_dim, ctx.rope.cos[rope].data(), ctx.rope.sin[rope].data(), ctx.pool);
  kernels::write_kv_cache(k, v, ctx.batch.attention.slot_mapping, t, ctx.kv, kv_scales_);
  kernels::paged_attention(q, static_cast<int32_t>(nh), ctx.kv, ctx.batch.attention, c_.scale, c_.sliding_window,
                           c_.softcap, attn, ctx.pool, kv_scales_);
  o_proj_.forward(attn, t, out, ctx.pool, ctx.batch.lora_slots);
}

LayerKVSpec Attention::kv_spec() const {
  return {.num_kv_heads = static_cast<int32_t>(c_.num_kv_heads),
          .head_dim = static_cast<int32_t>(c_.head_dim),
          .sliding_window = c_.sliding_window,
          .checkpoint_kv_scales = checkpoint_kv_scales_};
}

void Attention::add_cost(ModelCost& cost) const {
  qkv_proj_.add_cost(cost);
  o_proj_.add_cost(cost);
}

void Attention::set_lora(int32_t slot, const PeftAdapter* adapter) {
  qkv_proj_.set_lora(slot, adapter);
  o_proj_.set_lora(slot, adapter);
}

void Attention::add_lora_targets(LoraTargets& targets) const {
  qkv_proj_.add_lora_targets(targets);
  o_proj_.add_lora_targets(targets);
}

}  // namespace vllm
