#include "model/layers/decoder.h"

#include <algorithm>
#include <cmath>

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm {
namespace {

template <typename T>
void ensure_size(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

void scale(float* x, int64_t n, float factor) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

}  // namespace

std::vector<LayerKVSpec> DecoderModel::kv_cache_spec() const {
  std::vector<LayerKVSpec> spec;
  for (const DecoderLayer& l : p_.layers) spec.push_back(l.mixer->kv_spec());
  return spec;
}

void DecoderModel::finish_sublayer(const std::optional<Norm>& post_norm, float* out, int64_t rows,
                                   ThreadPool& pool) const {
  if (post_norm) post_norm->forward(out, rows, out, pool);
  if (p_.residual_scale != 1.0f) scale(out, rows * config_.hidden_size, p_.residual_scale);
}

void DecoderModel::fuse_input_hidden(const ForwardBatch& batch, ThreadPool& pool) {
  VLLM_CHECK(batch.input_hidden != nullptr, "an EAGLE head reads its target's hidden states");
  const int64_t t = batch.num_tokens;
  const int64_t h = config_.hidden_size;
  const int64_t in = p_.input_fc->in_features();
  const int64_t target_h = in - h;
  ensure_size(fc_in_, t * in);
  for (int64_t i = 0; i < t; ++i) {
    std::copy(hidden_.data() + i * h, hidden_.data() + (i + 1) * h, fc_in_.data() + i * in);
    std::copy(batch.input_hidden + i * target_h, batch.input_hidden + (i + 1) * target_h, fc_in_.data() + i * in + h);
  }
  p_.input_fc->forward(fc_in_.data(), t, hidden_.data(), pool);
}

std::span<const float> DecoderModel::forward(const ForwardBatch& batch, const KVCacheView& kv_cache, ThreadPool& pool) {
  const int64_t t = batch.num_tokens;
  const int64_t h = config_.hidden_size;
  VLLM_CHECK(kv_cache.layers.size() == p_.layers.size(), "KV cache has the wrong number of layers");
  ensure_size(hidden_, t * h);
  ensure_size(normed_, t * h);
  ensure_size(out_, t * h);
  ensure_size(last_, batch.num_logits * h);
  rope_.compute(p_.ropes, batch);

  if (p_.stage.first()) {
    if (p_.vocab.group != nullptr) {
      embed_vocab_shard(batch);
    } else {
      kernels::embedding(*p_.embed_tokens, batch.token_ids, t, hidden_.data());
    }
    if (batch.lora_slots != nullptr) add_embedding_lora(batch);
    if (p_.embedding_scale != 1.0f) scale(hidden_.data(), t * h, p_.embedding_scale);
    if (p_.input_fc) fuse_input_hidden(batch, pool);
    p_.layers[0].input_norm.forward(hidden_.data(), t, normed_.data(), pool);
  } else {
    // The stage before passes its residual stream and its last sub-layer's
    // output, not yet added: the add and the norm are this stage's first, as
    // they would be in one process.
    p_.stage.world->receive(hidden_.data(), t * h, p_.stage.previous_rank());
    p_.stage.world->receive(out_.data(), t * h, p_.stage.previous_rank());
    p_.layers[0].input_norm.add_and_forward(hidden_.data(), out_.data(), t, normed_.data(), pool);
  }
  // Each residual add is fused with the norm that follows it.
  for (size_t i = 0; i < p_.layers.size(); ++i) {
    if (batch.tap != nullptr && !batch.tap->layers.empty()) {
      keep_layer_input(batch, static_cast<int32_t>(p_.stage.first_layer + static_cast<int64_t>(i)));
    }
    const DecoderLayer& layer = p_.layers[i];
    const LayerContext ctx{batch, kv_cache.layers[i], rope_, scratch_, pool};
    layer.mixer->forward(normed_.data(), ctx, out_.data());
    finish_sublayer(layer.post_mixer_norm, out_.data(), t, pool);
    layer.ffn_norm.add_and_forward(hidden_.data(), out_.data(), t, normed_.data(), pool);
    layer.ffn->forward(normed_.data(), t, out_.data(), scratch_, pool, batch.lora_slots);
    finish_sublayer(layer.post_ffn_norm, out_.data(), t, pool);
    if (i + 1 == p_.layers.size()) break;
    p_.layers[i + 1].input_norm.add_and_forward(hidden_.data(), out_.data(), t, normed_.data(), pool);
  }
  if (!p_.stage.last()) {
    p_.stage.world->send(hidden_.data(), t * h, p_.stage.next_rank());
    p_.stage.world->send(out_.data(), t * h, p_.stage.next_rank());
    return {last_.data(), static_cast<size_t>(batch.num_logits * h)};  // the last stage's to compute
  }
  if (float* all = batch.tap != nullptr && batch.tap->layers.empty() ? batch.hidden_states_out : nullptr) {
    // Every row takes the last residual add and the final norm; the wanted ones are copied.
    for (int64_t i = 0; i < t * h; ++i) all[i] = hidden_[i] + out_[i];
    p_.final_norm.forward(all, t, all, pool);
    for (int64_t i = 0; i < batch.num_logits; ++i) {
      std::copy(all + batch.logits_indices[i] * h, all + (batch.logits_indices[i] + 1) * h, last_.data() + i * h);
    }
  } else {
    // Only the rows whose logits are wanted take the last residual add and the final norm.
    for (int64_t i = 0; i < batch.num_logits; ++i) {
      const int64_t row = batch.logits_indices[i];
      for (int64_t j = 0; j < h; ++j) last_[i * h + j] = hidden_[row * h + j] + out_[row * h + j];
    }
    p_.final_norm.forward(last_.data(), batch.num_logits, last_.data(), pool);
  }
  return {last_.data(), static_cast<size_t>(batch.num_logits * h)};
}

void DecoderModel::embed_vocab_shard(const ForwardBatch& batch) {
  const int64_t t = batch.num_tokens, h = config_.hidden_size;
  const IndexRange rows = p_.vocab.rows(config_.vocab_size);
  ensure_size(shard_ids_, t);
  auto held = [&](int32_t id) { return id >= rows.first && id < rows.first + rows.count; };
  for (int64_t i = 0; i < t; ++i) {
    const int32_t id = batch.token_ids[i];
    shard_ids_[static_cast<size_t>(i)] = held(id) ? static_cast<int32_t>(id - rows.first) : 0;
  }
  kernels::embedding(*p_.embed_tokens, shard_ids_.data(), t, hidden_.data());
  for (int64_t i = 0; i < t; ++i) {
    if (!held(batch.token_ids[i])) std::fill_n(hidden_.data() + i * h, h, 0.0f);
  }
  p_.vocab.group->all_reduce_sum(hidden_.data(), t * h);  // one rank's row plus zeros: exact
}

void DecoderModel::keep_layer_input(const ForwardBatch& batch, int32_t layer) const {
  const auto& layers = batch.tap->layers;
  const int64_t h = config_.hidden_size;
  const int64_t width = batch.tap->width(h);
  for (size_t j = 0; j < layers.size(); ++j) {
    if (layers[j] != layer) continue;
    for (int64_t r = 0; r < batch.num_tokens; ++r) {
      std::copy(hidden_.data() + r * h, hidden_.data() + (r + 1) * h,
                batch.hidden_states_out + r * width + static_cast<int64_t>(j) * h);
    }
  }
}

std::optional<HiddenStateTap> DecoderModel::target_hidden_states() const {
  if (p_.input_fc) return HiddenStateTap{};
  return std::nullopt;
}

int64_t DecoderModel::prompt_cache_key(int32_t num_prompt_tokens) const {
  int64_t key = 0;
  for (const RotaryEmbedding& rope : p_.ropes) key = key * 1000003 + rope.rotation_key(num_prompt_tokens);
  return key;
}

void DecoderModel::compute_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                                  const int32_t* lora_slots) const {
  const PipelineStage& stage = p_.stage;
  if (!stage.last()) {
    // The last stage computes them; rank 0, where the engine samples, is sent them.
    if (stage.world->rank() == 0) {
      stage.world->receive(logits, num_rows * config_.vocab_size, stage.logits_rank());
    }
    return;
  }
  compute_stage_logits(hidden, num_rows, logits, pool, lora_slots);
  if (stage.world != nullptr && stage.world->rank() == stage.logits_rank()) {
    stage.world->send(logits, num_rows * config_.vocab_size, 0);
  }
}

void DecoderModel::compute_stage_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                                        const int32_t* lora_slots) const {
  if (p_.vocab.group != nullptr) {
    // Each rank's [num_rows, rows_per_rank] (the last rank's padded), gathered
    // in rank order, then laid out as [num_rows, vocab].
    const int64_t per_rank = p_.vocab.rows_per_rank, held = p_.lm_head.out_features();
    const int size = p_.vocab.group->size();
    shard_logits_.assign(static_cast<size_t>(num_rows * per_rank), 0.0f);
    gathered_logits_.resize(shard_logits_.size() * static_cast<size_t>(size));
    p_.lm_head.forward(hidden, num_rows, gathered_logits_.data(), pool, lora_slots);
    for (int64_t r = 0; r < num_rows; ++r) {
      std::copy_n(gathered_logits_.data() + r * held, held, shard_logits_.data() + r * per_rank);
    }
    p_.vocab.group->all_gather(shard_logits_.data(), num_rows * per_rank, gathered_logits_.data());
    const int64_t vocab = config_.vocab_size;
    for (int rank = 0; rank < size; ++rank) {
      const int64_t first = rank * per_rank, count = std::min(per_rank, vocab - first);
      const float* part = gathered_logits_.data() + static_cast<int64_t>(rank) * num_rows * per_rank;
      for (int64_t r = 0; r < num_rows; ++r) std::copy_n(part + r * per_rank, count, logits + r * vocab + first);
    }
  } else {
    p_.lm_head.forward(hidden, num_rows, logits, pool, lora_slots);
  }
  const int64_t n = num_rows * config_.vocab_size;
  if (p_.logit_softcap > 0) {
    for (int64_t i = 0; i < n; ++i) logits[i] = p_.logit_softcap * std::tanh(logits[i] / p_.logit_softcap);
  }
  if (p_.logit_scale != 1.0f) scale(logits, n, p_.logit_scale);
}

ModelCost DecoderModel::cost() const {
  ModelCost cost;
  if (p_.input_fc) p_.input_fc->add_cost(cost);
  for (const DecoderLayer& l : p_.layers) {
    l.mixer->add_cost(cost);
    l.ffn->add_cost(cost);
  }
  if (p_.stage.last()) p_.lm_head.add_cost(cost, /*lm_head=*/true);
  return cost;
}

Status DecoderModel::set_lora(int32_t slot, const PeftAdapter* adapter) {
  if (slot < 0) return invalid_argument("a LoRA slot is 0 or more, found " + std::to_string(slot));
  for (DecoderLayer& l : p_.layers) {
    l.mixer->set_lora(slot, adapter);
    l.ffn->set_lora(slot, adapter);
  }
  p_.lm_head.set_lora(slot, adapter);
  if (static_cast<size_t>(slot) >= embedding_lora_.size()) embedding_lora_.resize(static_cast<size_t>(slot) + 1);
  EmbeddingLora& e = embedding_lora_[static_cast<size_t>(slot)];
  e = {};
  if (adapter == nullptr) return Status::ok();
  const auto found = adapter->modules.find(p_.embed_tokens_module);
  if (found != adapter->modules.end()) {
    e.rank = found->second.rank;
    e.a = found->second.a;
    e.scaled_b = found->second.scaled_b(adapter->scaling);
  }
  return Status::ok();
}

void DecoderModel::add_embedding_lora(const ForwardBatch& batch) {
  const int64_t h = config_.hidden_size, vocab = config_.vocab_size;
  for (int64_t i = 0; i < batch.num_tokens; ++i) {
    const int32_t slot = batch.lora_slots[i];
    if (slot < 0 || static_cast<size_t>(slot) >= embedding_lora_.size()) continue;
    const EmbeddingLora& e = embedding_lora_[static_cast<size_t>(slot)];
    if (e.rank == 0) continue;
    const int32_t token = batch.token_ids[i];
    float* row = hidden_.data() + i * h;
    for (int64_t d = 0; d < h; ++d) {
      float delta = 0;
      for (int64_t j = 0; j < e.rank; ++j) delta += e.scaled_b[d * e.rank + j] * e.a[j * vocab + token];
      row[d] += delta;
    }
  }
}

LoraTargets DecoderModel::lora_targets() const {
  LoraTargets targets;
  // The embedding table's adapters are not split by vocabulary: under tensor
  // parallelism an adapter of it is refused as one of a module it cannot change.
  if (!p_.embed_tokens_module.empty() && p_.embed_tokens != nullptr && p_.vocab.group == nullptr) {
    targets[p_.embed_tokens_module] = {p_.embed_tokens->rows, p_.embed_tokens->cols, /*embedding=*/true};
  }
  for (const DecoderLayer& l : p_.layers) {
    l.mixer->add_lora_targets(targets);
    l.ffn->add_lora_targets(targets);
  }
  p_.lm_head.add_lora_targets(targets);
  return targets;
}

}  // namespace vllm
