#include "model/decoder_model.h"

#include <algorithm>
#include <cmath>

#include "base/logging.h"
#include "kernels/kernels.h"
#include "model/registry.h"

namespace vllm {
namespace {

template <typename T>
void ensure_size(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

// RMSNorm of each head_dim slice of x: [num_tokens * num_heads, head_dim].
void per_head_rms_norm(float* x, int64_t rows, int64_t head_dim, const std::vector<float>& weight, float eps,
                       ThreadPool& pool) {
  kernels::rms_norm(x, rows, head_dim, weight.data(), eps, x, pool);
}

const float* bias_or_null(const std::vector<float>& bias) { return bias.empty() ? nullptr : bias.data(); }

}  // namespace

Result<std::unique_ptr<DecoderModel>> DecoderModel::load(const std::string& model_dir) {
  VLLM_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(model_dir));
  Result<DecoderVariant> variant = decoder_variant_for(config);
  if (!variant.is_ok()) return variant.status().with_context(model_dir + "/config.json");
  VLLM_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(model_dir));
  ThreadPool packers(ThreadPool::default_num_threads());
  VLLM_ASSIGN_OR_RETURN(DecoderWeights weights, load_decoder_weights(checkpoint, config, *variant, packers));
  return std::unique_ptr<DecoderModel>(
      new DecoderModel(std::move(config), std::move(variant).value(), std::move(weights)));
}

DecoderModel::DecoderModel(ModelConfig config, DecoderVariant variant, DecoderWeights weights)
    : config_(std::move(config)),
      variant_(std::move(variant)),
      weights_(std::move(weights)),
      rope_(config_.head_dim, config_.rope_theta, config_.rope_scaling) {}

DecoderModel::Cost DecoderModel::cost() const {
  Cost cost;
  auto add_layer_matrix = [&cost](const kernels::PackedMatrix& m) {
    cost.bf16_matrices &= m.dtype == DType::kBF16;
    cost.layer_params += static_cast<double>(m.rows * m.cols);
    cost.weight_bytes += static_cast<double>(m.rows * m.cols) * static_cast<double>(dtype_size(m.dtype));
  };
  for (const DecoderLayerWeights& w : weights_.layers) {
    for (const kernels::PackedMatrix* m : {&w.qkv_proj, &w.o_proj, &w.gate_up_proj, &w.down_proj}) {
      add_layer_matrix(*m);
    }
  }
  const kernels::PackedMatrix& head = weights_.output_projection();
  cost.lm_head_params = static_cast<double>(head.rows * head.cols);
  cost.bf16_matrices &= head.dtype == DType::kBF16;
  cost.weight_bytes += cost.lm_head_params * static_cast<double>(dtype_size(head.dtype));
  return cost;
}

void DecoderModel::forward(const ForwardBatch& batch, const KVCacheView& kv_cache, float* logits, ThreadPool& pool) {
  const int64_t t = batch.num_tokens;
  const int64_t h = config_.hidden_size;
  const int64_t q_dim = config_.num_attention_heads * config_.head_dim;
  const int64_t kv_dim = config_.num_key_value_heads * config_.head_dim;
  VLLM_CHECK(kv_cache.layers.size() == weights_.layers.size(), "KV cache has the wrong number of layers");
  ensure_size(ws_.hidden, t * h);
  ensure_size(ws_.normed, t * h);
  ensure_size(ws_.qkv, t * (q_dim + 2 * kv_dim));
  ensure_size(ws_.q, t * q_dim);
  ensure_size(ws_.k, t * kv_dim);
  ensure_size(ws_.v, t * kv_dim);
  ensure_size(ws_.attn_out, t * q_dim);
  ensure_size(ws_.proj_out, t * h);
  ensure_size(ws_.gate_up, t * 2 * config_.intermediate_size);
  ensure_size(ws_.act, t * config_.intermediate_size);
  ensure_size(ws_.cos, t * config_.head_dim / 2);
  ensure_size(ws_.sin, t * config_.head_dim / 2);
  ensure_size(ws_.last, batch.num_logits * h);

  const float eps = static_cast<float>(config_.rms_norm_eps);
  const std::vector<DecoderLayerWeights>& layers = weights_.layers;
  kernels::embedding(weights_.embed_tokens, batch.token_ids, t, ws_.hidden.data());
  rope_.compute(batch.positions, t, ws_.cos.data(), ws_.sin.data());
  // Each residual add is fused with the norm that follows it.
  kernels::rms_norm(ws_.hidden.data(), t, h, layers[0].input_norm.data(), eps, ws_.normed.data(), pool);
  for (size_t i = 0; i < layers.size(); ++i) {
    attention_block(layers[i], batch, kv_cache.layers[i], pool);
    kernels::fused_add_rms_norm(ws_.hidden.data(), ws_.proj_out.data(), t, h, layers[i].post_attention_norm.data(), eps,
                                ws_.normed.data(), pool);
    mlp_block(layers[i], t, pool);
    if (i + 1 == layers.size()) break;
    kernels::fused_add_rms_norm(ws_.hidden.data(), ws_.proj_out.data(), t, h, layers[i + 1].input_norm.data(), eps,
                                ws_.normed.data(), pool);
  }
  // Only the rows that are sampled take the last residual add, the final
  // norm and the LM head.
  for (int64_t i = 0; i < batch.num_logits; ++i) {
    const int64_t row = batch.logits_indices[i];
    for (int64_t j = 0; j < h; ++j) ws_.last[i * h + j] = ws_.hidden[row * h + j] + ws_.proj_out[row * h + j];
  }
  kernels::rms_norm(ws_.last.data(), batch.num_logits, h, weights_.final_norm.data(), eps, ws_.last.data(), pool);
  kernels::linear(ws_.last.data(), batch.num_logits, weights_.output_projection(), nullptr, logits, pool);
}

void DecoderModel::attention_block(const DecoderLayerWeights& w, const ForwardBatch& batch,
                                   const kernels::PagedKVLayer& kv, ThreadPool& pool) {
  const int64_t t = batch.num_tokens;
  const int64_t hd = config_.head_dim;
  const int64_t nh = config_.num_attention_heads;
  const int64_t nkv = config_.num_key_value_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);

  const int64_t q_dim = nh * hd, kv_dim = nkv * hd, qkv_dim = q_dim + 2 * kv_dim;
  kernels::linear(ws_.normed.data(), t, w.qkv_proj, bias_or_null(w.qkv_bias), ws_.qkv.data(), pool);
  for (int64_t r = 0; r < t; ++r) {
    const float* row = ws_.qkv.data() + r * qkv_dim;
    std::copy_n(row, q_dim, ws_.q.data() + r * q_dim);
    std::copy_n(row + q_dim, kv_dim, ws_.k.data() + r * kv_dim);
    std::copy_n(row + q_dim + kv_dim, kv_dim, ws_.v.data() + r * kv_dim);
  }
  if (variant_.qk_norm) {
    per_head_rms_norm(ws_.q.data(), t * nh, hd, w.q_norm, eps, pool);
    per_head_rms_norm(ws_.k.data(), t * nkv, hd, w.k_norm, eps, pool);
  }
  kernels::rope(ws_.q.data(), t, nh, hd, ws_.cos.data(), ws_.sin.data(), pool);
  kernels::rope(ws_.k.data(), t, nkv, hd, ws_.cos.data(), ws_.sin.data(), pool);
  kernels::write_kv_cache(ws_.k.data(), ws_.v.data(), batch.attention.slot_mapping, t, kv);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int32_t window = variant_.sliding_window ? static_cast<int32_t>(config_.sliding_window) : 0;
  kernels::paged_attention(ws_.q.data(), static_cast<int32_t>(nh), kv, batch.attention, scale, window,
                           ws_.attn_out.data(), pool);
  kernels::linear(ws_.attn_out.data(), t, w.o_proj, bias_or_null(w.o_bias), ws_.proj_out.data(), pool);
}

void DecoderModel::mlp_block(const DecoderLayerWeights& w, int64_t t, ThreadPool& pool) {
  const int64_t inter = config_.intermediate_size;
  kernels::linear(ws_.normed.data(), t, w.gate_up_proj, nullptr, ws_.gate_up.data(), pool);
  kernels::silu_and_mul(ws_.gate_up.data(), t, inter, ws_.act.data(), pool);
  kernels::linear(ws_.act.data(), t, w.down_proj, nullptr, ws_.proj_out.data(), pool);
}

}  // namespace vllm
