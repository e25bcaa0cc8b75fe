#include "model/layers/mla.h"

#include <algorithm>

#include "model/layers/kv_cache_scales.h"

namespace vllm {
namespace {

// The per-head matrices of kv_b_proj's blocks as Linears of their own.
std::vector<Linear> as_linears(std::vector<kernels::PackedMatrix> matrices) {
  std::vector<Linear> out;
  for (kernels::PackedMatrix& m : matrices) {
    out.push_back(Linear::shared(std::make_shared<const kernels::PackedMatrix>(std::move(m))));
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<MlaAttention>> MlaAttention::load(WeightReader& w, const std::string& p,
                                                         const MlaConfig& config) {
  // Under tensor parallelism each rank computes its share of the heads (their
  // query rows, kv_b_proj blocks and o_proj columns, which it sums over the
  // group) from the whole latent, which every rank computes and caches.
  const TensorParallel& tp = w.tensor_parallel();
  auto a = std::make_unique<MlaAttention>();
  a->c_ = config;
  const int64_t hidden = config.hidden_size, heads = config.num_heads, rank = config.kv_lora_rank;
  const int64_t nope = config.qk_nope_head_dim, v = config.v_head_dim;
  const int64_t kv_a_rows = rank + config.qk_rope_head_dim, q_rows = heads * a->query_dim();
  const bool split = tp.size() > 1;
  const IndexRange held = split ? tp.share(heads) : IndexRange{};  // of the heads
  a->c_.num_heads = held.size_of(heads);
  const IndexRange q_share =
      split ? IndexRange{held.first * a->query_dim(), held.count * a->query_dim()} : IndexRange{};
  const MatrixShard o_share{{}, split ? IndexRange{held.first * v, held.count * v} : IndexRange{}};
  if (config.q_lora_rank > 0) {
    VLLM_ASSIGN_OR_RETURN(a->in_proj_, Linear::load(w, {p + "q_a_proj.weight", p + "kv_a_proj_with_mqa.weight"},
                                                    {config.q_lora_rank, kv_a_rows}, hidden));
    VLLM_ASSIGN_OR_RETURN(a->q_a_norm_, Norm::load(w, p + "q_a_layernorm", config.q_lora_rank, config.norm_eps));
    VLLM_ASSIGN_OR_RETURN(a->q_b_proj_, Linear::load_shard(w, {p + "q_b_proj.weight"}, {q_rows}, config.q_lora_rank,
                                                           MatrixShard{{q_share}, {}}));
  } else {
    VLLM_ASSIGN_OR_RETURN(a->in_proj_, Linear::load_shard(w, {p + "q_proj.weight", p + "kv_a_proj_with_mqa.weight"},
                                                          {q_rows, kv_a_rows}, hidden, MatrixShard{{q_share, {}}, {}}));
  }
  VLLM_ASSIGN_OR_RETURN(a->kv_a_norm_, Norm::load(w, p + "kv_a_layernorm", rank, config.norm_eps));
  // kv_b_proj: [heads * (nope + v), rank], each head's k_nope rows then its v rows.
  const std::string kv_b = p + "kv_b_proj.weight";
  VLLM_ASSIGN_OR_RETURN(auto k_up, w.row_blocks(kv_b, heads, nope + v, rank, 0, nope, /*transpose=*/true, held));
  VLLM_ASSIGN_OR_RETURN(auto v_up, w.row_blocks(kv_b, heads, nope + v, rank, nope, v, /*transpose=*/false, held));
  a->k_up_t_ = as_linears(std::move(k_up));
  a->v_up_ = as_linears(std::move(v_up));
  VLLM_ASSIGN_OR_RETURN(a->o_proj_, Linear::load_shard(w, {p + "o_proj.weight"}, {hidden}, heads * v, o_share, {},
                                                       split ? tp.group : nullptr));
  // One cache of latent rows: vLLM scales an FP8 one by the key's scale.
  VLLM_ASSIGN_OR_RETURN(const std::optional<kernels::KVScales> scales, load_kv_cache_scales(w, p));
  a->cache_scale_ = scales ? scales->key : 1.0f;
  a->checkpoint_cache_scale_ = scales.has_value();
  return a;
}

int64_t MlaAttention::q_features() const { return c_.q_lora_rank > 0 ? c_.q_lora_rank : c_.num_heads * query_dim(); }

void MlaAttention::per_head(const std::vector<Linear>& heads, const float* in, int64_t t, float* out,
                            ThreadPool& pool) {
  std::vector<Linear::Call> calls;
  for (size_t h = 0; h < heads.size(); ++h) {
    const auto hi = static_cast<int64_t>(h);
    calls.push_back({&heads[h], in + hi * t * heads[h].in_features(), t, out + hi * t * heads[h].out_features()});
  }
  Linear::forward_group(calls, pool);
}

void MlaAttention::forward(const float* x, const LayerContext& ctx, float* out) const {
  const int64_t t = ctx.batch.num_tokens, heads = c_.num_heads;
  const int64_t rank = c_.kv_lora_rank, nope = c_.qk_nope_head_dim, rope_dim = c_.qk_rope_head_dim;
  const int64_t v = c_.v_head_dim, qd = query_dim(), row_dim = latent_dim();
  const int64_t qf = q_features(), in_dim = qf + rank + rope_dim;
  const auto rope = static_cast<size_t>(c_.rope);
  const float* cos = ctx.rope.cos[rope].data();
  const float* sin = ctx.rope.sin[rope].data();
  Scratch& scratch = ctx.scratch;

  float* in = scratch.get(ScratchSlot::kQkv, static_cast<size_t>(t * in_dim));
  in_proj_.forward(x, t, in, ctx.pool);
  // The query, [T, heads, nope + rope].
  float* q = scratch.get(ScratchSlot::kQ, static_cast<size_t>(t * heads * qd));
  // q_proj's output itself, or q_b_proj of the normed q_a_proj output.
  float* q_in = q_b_proj_ ? scratch.get(ScratchSlot::kHeadsIn, static_cast<size_t>(t * qf)) : q;
  for (int64_t r = 0; r < t; ++r) std::copy_n(in + r * in_dim, qf, q_in + r * qf);
  if (q_b_proj_) {
    q_a_norm_.forward(q_in, t, q_in, ctx.pool);
    q_b_proj_->forward(q_in, t, q, ctx.pool);
  }
  kernels::rope(q + nope, t, heads, qd, rope_dim, cos, sin, ctx.pool, c_.rope_layout);

  // This step's cache rows: [RMSNorm(c) | rope(k_pe)].
  kernels::rope(in + qf + rank, t, 1, in_dim, rope_dim, cos, sin, ctx.pool, c_.rope_layout);
  float* latent = scratch.get(ScratchSlot::kLatent, static_cast<size_t>(t * rank));
  for (int64_t r = 0; r < t; ++r) std::copy_n(in + r * in_dim + qf, rank, latent + r * rank);
  kv_a_norm_.forward(latent, t, latent, ctx.pool);
  float* rows = scratch.get(ScratchSlot::kK, static_cast<size_t>(t * row_dim));
  for (int64_t r = 0; r < t; ++r) {
    std::copy_n(latent + r * rank, rank, rows + r * row_dim);
    std::copy_n(in + r * in_dim + qf + rank, rope_dim, rows + r * row_dim + rank);
  }
  kernels::write_latent_cache(rows, ctx.batch.attention.slot_mapping, t, ctx.kv, cache_scale_);

  // Latent queries [T, heads, rank + rope]: W_UK^T q_nope per head, then q_pe.
  const int64_t per_head_dim = std::max({nope, rank, v});
  float* heads_in = scratch.get(ScratchSlot::kHeadsIn, static_cast<size_t>(heads * t * per_head_dim));
  float* heads_out = scratch.get(ScratchSlot::kHeadsOut, static_cast<size_t>(heads * t * per_head_dim));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < heads; ++h) std::copy_n(q + (r * heads + h) * qd, nope, heads_in + (h * t + r) * nope);
  }
  per_head(k_up_t_, heads_in, t, heads_out, ctx.pool);
  float* latent_q = scratch.get(ScratchSlot::kV, static_cast<size_t>(t * heads * row_dim));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      float* dst = latent_q + (r * heads + h) * row_dim;
      std::copy_n(heads_out + (h * t + r) * rank, rank, dst);
      std::copy_n(q + (r * heads + h) * qd + nope, rope_dim, dst + rank);
    }
  }
  float* latent_out = scratch.get(ScratchSlot::kAttnOut, static_cast<size_t>(t * heads * rank));
  kernels::latent_attention(latent_q, static_cast<int32_t>(heads), ctx.kv, ctx.batch.attention, c_.scale,
                            static_cast<int32_t>(rank), latent_out, ctx.pool, cache_scale_);

  // Values: W_UV per head of the attended latent, heads concatenated for o_proj.
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      std::copy_n(latent_out + (r * heads + h) * rank, rank, heads_in + (h * t + r) * rank);
    }
  }
  per_head(v_up_, heads_in, t, heads_out, ctx.pool);
  float* attn = scratch.get(ScratchSlot::kQkv, static_cast<size_t>(t * heads * v));  // `in` is spent
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t h = 0; h < heads; ++h) std::copy_n(heads_out + (h * t + r) * v, v, attn + (r * heads + h) * v);
  }
  o_proj_.forward(attn, t, out, ctx.pool);
}

LayerKVSpec MlaAttention::kv_spec() const {
  return {.num_kv_heads = 1,
          .head_dim = static_cast<int32_t>(latent_dim()),
          .sliding_window = 0,
          .latent = true,
          .checkpoint_kv_scales = checkpoint_cache_scale_};
}

void MlaAttention::add_cost(ModelCost& cost) const {
  in_proj_.add_cost(cost);
  if (q_b_proj_) q_b_proj_->add_cost(cost);
  for (const Linear& l : k_up_t_) l.add_cost(cost);
  for (const Linear& l : v_up_) l.add_cost(cost);
  o_proj_.add_cost(cost);
}

}  // namespace vllm
