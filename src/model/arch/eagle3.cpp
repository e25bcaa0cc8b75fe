#include "model/arch/eagle3.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/logging.h"
#include "model/arch/common.h"
#include "model/layers/attention.h"
#include "model/layers/mlp.h"
#include "model/loader/checkpoint.h"

namespace vllm {
namespace {

struct Eagle3Parts {
  std::shared_ptr<const kernels::PackedMatrix> embed_tokens;  // [vocab, hidden]
  Linear fc;                                                  // [hidden, 3 * target hidden]
  Norm input_norm, hidden_norm, post_norm, final_norm;
  std::unique_ptr<Attention> attention;  // q, k, v over [normed embedding | normed hidden]
  std::unique_ptr<GatedMlp> mlp;
  Linear lm_head;             // [draft_vocab, hidden]
  std::vector<int64_t> d2t;   // empty: draft id d is target id d
  bool norm_before_residual;  // the residual is norm_hidden(g), not g
  std::vector<RotaryEmbedding> ropes;
  std::vector<int32_t> aux_layers;  // the target layers whose input it reads
};

class Eagle3Head final : public Model {
 public:
  Eagle3Head(ModelConfig config, Eagle3Parts parts) : config_(std::move(config)), p_(std::move(parts)) {}

  const ModelConfig& config() const override { return config_; }
  std::vector<LayerKVSpec> kv_cache_spec() const override { return {p_.attention->kv_spec()}; }
  std::span<const float> forward(const ForwardBatch& batch, const KVCacheView& kv_cache, ThreadPool& pool) override;
  void compute_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                      const int32_t* lora_slots) const override;
  ModelCost cost() const override;
  int64_t prompt_cache_key(int32_t) const override { return 0; }
  std::optional<HiddenStateTap> target_hidden_states() const override { return HiddenStateTap{p_.aux_layers}; }

 private:
  ModelConfig config_;
  Eagle3Parts p_;
  // Scratch, sized to the largest batch seen so far: [T, hidden] but attention_in_ [T, 2 * hidden].
  std::vector<float> embedded_, residual_, attention_in_, out_, normed_, last_;
  mutable std::vector<float> logits_in_, draft_logits_;  // compute_logits' [rows, hidden] and [rows, draft vocab]
  RopeTables rope_;
  Scratch scratch_;
};

void grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

std::span<const float> Eagle3Head::forward(const ForwardBatch& batch, const KVCacheView& kv_cache, ThreadPool& pool) {
  VLLM_CHECK(batch.input_hidden != nullptr, "an EAGLE-3 head reads hidden states");
  VLLM_CHECK(kv_cache.layers.size() == 1, "an EAGLE-3 head has one layer");
  const int64_t t = batch.num_tokens;
  const int64_t h = config_.hidden_size;
  for (auto* v : {&embedded_, &residual_, &out_, &normed_}) grow(*v, t * h);
  grow(attention_in_, 2 * t * h);
  grow(last_, batch.num_logits * h);
  rope_.compute(p_.ropes, batch);

  kernels::embedding(*p_.embed_tokens, batch.token_ids, t, embedded_.data());
  if (batch.input_hidden_from_head) {
    std::copy(batch.input_hidden, batch.input_hidden + t * h, residual_.data());
  } else {
    p_.fc.forward(batch.input_hidden, t, residual_.data(), pool);
  }
  // The attention's input: [norm_in(embedding) | norm_hidden(g)] per token.
  p_.input_norm.forward(embedded_.data(), t, embedded_.data(), pool);
  p_.hidden_norm.forward(residual_.data(), t, normed_.data(), pool);
  for (int64_t r = 0; r < t; ++r) {
    std::copy(embedded_.data() + r * h, embedded_.data() + (r + 1) * h, attention_in_.data() + 2 * r * h);
    std::copy(normed_.data() + r * h, normed_.data() + (r + 1) * h, attention_in_.data() + (2 * r + 1) * h);
  }
  if (p_.norm_before_residual) std::copy(normed_.data(), normed_.data() + t * h, residual_.data());
  const LayerContext ctx{batch, kv_cache.layers[0], rope_, scratch_, pool};
  p_.attention->forward(attention_in_.data(), ctx, out_.data());
  p_.post_norm.add_and_forward(residual_.data(), out_.data(), t, normed_.data(), pool);
  p_.mlp->forward(normed_.data(), t, out_.data(), scratch_, pool, /*lora_slots=*/nullptr);
  // The wanted rows' output before the final norm: what the next pass reads (compute_logits norms it).
  for (int64_t i = 0; i < batch.num_logits; ++i) {
    const int64_t row = batch.logits_indices[i];
    for (int64_t j = 0; j < h; ++j) last_[i * h + j] = residual_[row * h + j] + out_[row * h + j];
  }
  return {last_.data(), static_cast<size_t>(batch.num_logits * h)};
}

void Eagle3Head::compute_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                                const int32_t* /*lora_slots*/) const {
  const int64_t h = config_.hidden_size;
  logits_in_.resize(static_cast<size_t>(num_rows * h));
  p_.final_norm.forward(hidden, num_rows, logits_in_.data(), pool);
  if (p_.d2t.empty()) return p_.lm_head.forward(logits_in_.data(), num_rows, logits, pool);
  // The draft vocabulary's logits at their target ids; no other target id can be guessed.
  const int64_t draft_vocab = p_.lm_head.out_features();
  const int64_t vocab = config_.vocab_size;
  draft_logits_.resize(static_cast<size_t>(num_rows * draft_vocab));
  p_.lm_head.forward(logits_in_.data(), num_rows, draft_logits_.data(), pool);
  std::fill(logits, logits + num_rows * vocab, -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t d = 0; d < draft_vocab; ++d) {
      logits[r * vocab + d + p_.d2t[static_cast<size_t>(d)]] = draft_logits_[static_cast<size_t>(r * draft_vocab + d)];
    }
  }
}

ModelCost Eagle3Head::cost() const {
  ModelCost cost;
  p_.fc.add_cost(cost);
  p_.attention->add_cost(cost);
  p_.mlp->add_cost(cost);
  p_.lm_head.add_cost(cost, /*lm_head=*/true);
  return cost;
}

Status unsupported_flag(const ModelConfig& c, const ConfigReader& reader, const std::string& key) {
  VLLM_ASSIGN_OR_RETURN(const bool set, reader.boolean(key, false));
  if (set) return unimplemented(c.source + ": " + key + " true is not supported for EAGLE-3 heads");
  return Status::ok();
}

// The target layers whose input the head reads: config.json's
// eagle_aux_hidden_state_layer_ids (in eagle_config or at the top), else
// vLLM's default (2, L / 2, L - 3) of the target's L layers.
Result<std::vector<int32_t>> aux_layers(const ModelConfig& c, int64_t target_layers) {
  const Json* holder = &c.json;
  if (c.json.contains("eagle_config") && c.json["eagle_config"].is_object() &&
      c.json["eagle_config"].contains("eagle_aux_hidden_state_layer_ids")) {
    holder = &c.json["eagle_config"];
  }
  VLLM_ASSIGN_OR_RETURN(const std::vector<int64_t> ids,
                        ConfigReader(*holder, c.source).integer_list("eagle_aux_hidden_state_layer_ids"));
  std::vector<int32_t> layers;
  for (int64_t id : ids) {
    if (id < 0 || id >= target_layers) {
      return invalid_argument(c.source + ": eagle_aux_hidden_state_layer_ids names layer " + std::to_string(id) +
                              " of a target with " + std::to_string(target_layers) + " layers");
    }
    layers.push_back(static_cast<int32_t>(id));
  }
  if (layers.empty()) {
    layers = {2, static_cast<int32_t>(target_layers / 2), static_cast<int32_t>(target_layers - 3)};
    if (target_layers < 4) {
      return invalid_argument(c.source + ": a target of " + std::to_string(target_layers) +
                              " layers has no default auxiliary layers (2, L/2, L-3); give "
                              "eagle_aux_hidden_state_layer_ids");
    }
  }
  if (layers.size() != 3) {
    return invalid_argument(
        c.source + ": an EAGLE-3 head reads 3 auxiliary hidden states, eagle_aux_hidden_state_layer_ids names " +
        std::to_string(layers.size()));
  }
  return layers;
}

}  // namespace

Result<int64_t> eagle3_draft_vocab_size(const ModelConfig& c) {
  return ConfigReader(c.json, c.source).positive_integer("draft_vocab_size", c.vocab_size);
}

Result<std::unique_ptr<Model>> build_eagle3_head(const ModelConfig& c, WeightReader& w, const DecoderModel* target,
                                                 Eagle3Layout layout) {
  const ConfigReader reader(c.json, c.source);
  for (const char* flag : {"norm_before_fc", "fc_norm", "norm_output"}) {
    VLLM_RETURN_IF_ERROR(unsupported_flag(c, reader, flag));
  }
  VLLM_ASSIGN_OR_RETURN(const bool aux, reader.boolean("use_aux_hidden_state", true));
  if (c.json.contains("eagle_config") && c.json["eagle_config"].is_object()) {
    VLLM_ASSIGN_OR_RETURN(const bool nested,
                          ConfigReader(c.json["eagle_config"], c.source).boolean("use_aux_hidden_state", aux));
    if (!nested) return unimplemented(c.source + ": EAGLE-3 heads without auxiliary hidden states are not supported");
  }
  if (!aux) return unimplemented(c.source + ": EAGLE-3 heads without auxiliary hidden states are not supported");
  if (c.num_hidden_layers != 1) {
    return unimplemented(c.source + ": an EAGLE-3 head has one decoder layer; num_hidden_layers is " +
                         std::to_string(c.num_hidden_layers));
  }
  VLLM_ASSIGN_OR_RETURN(const Activation act, activation_named(c.hidden_act, c.source));
  if (act != Activation::kSilu) {
    return unimplemented(c.source + ": unsupported hidden_act '" + c.hidden_act + "'; supported: silu");
  }
  const int64_t h = c.hidden_size;
  VLLM_ASSIGN_OR_RETURN(const int64_t target_h, reader.positive_integer("target_hidden_size", h));
  VLLM_ASSIGN_OR_RETURN(const int64_t draft_vocab, eagle3_draft_vocab_size(c));
  Eagle3Parts parts;
  VLLM_ASSIGN_OR_RETURN(parts.norm_before_residual, reader.boolean("norm_before_residual", false));
  if (layout.own_embedding) {
    VLLM_ASSIGN_OR_RETURN(kernels::PackedMatrix table, w.matrix("embed_tokens.weight", c.vocab_size, h));
    parts.embed_tokens = std::make_shared<const kernels::PackedMatrix>(std::move(table));
  }
  VLLM_ASSIGN_OR_RETURN(parts.fc, Linear::load(w, {"fc.weight"}, {h}, 3 * target_h));
  const std::string& p = layout.layer_prefix;
  auto norm = [&](const std::string& name) { return Norm::load(w, name, h, c.rms_norm_eps); };
  VLLM_ASSIGN_OR_RETURN(parts.input_norm, norm(p + "input_layernorm"));
  VLLM_ASSIGN_OR_RETURN(parts.hidden_norm, norm(p + "hidden_norm"));
  AttentionConfig attention = standard_attention(c);
  attention.input_size = 2 * h;
  VLLM_ASSIGN_OR_RETURN(parts.attention,
                        Attention::load(w, {p + "self_attn.", false, c.attention_bias, c.attention_bias}, attention));
  VLLM_ASSIGN_OR_RETURN(parts.post_norm, norm(p + "post_attention_layernorm"));
  VLLM_ASSIGN_OR_RETURN(parts.mlp, GatedMlp::load(w, {p + "mlp."}, h, c.intermediate_size));
  VLLM_ASSIGN_OR_RETURN(parts.final_norm, norm("norm"));
  VLLM_ASSIGN_OR_RETURN(parts.lm_head, Linear::load(w, {"lm_head.weight"}, {draft_vocab}, h));
  parts.ropes.emplace_back(c.rotary_dim, c.rope_theta, c.rope_scaling);
  if (target != nullptr) {
    const ModelConfig& tc = target->config();
    if (target_h != tc.hidden_size) {
      return invalid_argument(c.source + ": the EAGLE-3 head reads hidden states of " + std::to_string(target_h) +
                              " (target_hidden_size), the target model's are " + std::to_string(tc.hidden_size));
    }
    if (c.vocab_size != tc.vocab_size) {
      return invalid_argument(c.source + ": the EAGLE-3 head's vocab_size (" + std::to_string(c.vocab_size) +
                              ") differs from the target model's (" + std::to_string(tc.vocab_size) + ")");
    }
    if (!parts.embed_tokens) {
      if (h != tc.hidden_size) {
        return invalid_argument(c.source + ": the EAGLE-3 head has no embed_tokens.weight and its hidden_size (" +
                                std::to_string(h) + ") is not the target model's (" + std::to_string(tc.hidden_size) +
                                ")");
      }
      const DecoderParts& shared = target->parts();  // the whole vocabulary's, under tensor parallelism
      parts.embed_tokens = shared.whole_vocabulary ? shared.whole_vocabulary->embed_tokens : shared.embed_tokens;
    }
    VLLM_ASSIGN_OR_RETURN(parts.aux_layers, aux_layers(c, tc.num_hidden_layers));
  }
  if (!layout.d2t.empty()) {
    if (static_cast<int64_t>(layout.d2t.size()) != draft_vocab) {
      return invalid_argument(c.source + ": d2t has " + std::to_string(layout.d2t.size()) +
                              " entries, draft_vocab_size is " + std::to_string(draft_vocab));
    }
    for (int64_t d = 0; d < draft_vocab; ++d) {
      const int64_t id = d + layout.d2t[static_cast<size_t>(d)];
      if (id < 0 || id >= c.vocab_size) {
        return invalid_argument(c.source + ": d2t maps draft token " + std::to_string(d) + " to " + std::to_string(id) +
                                ", outside the vocabulary of " + std::to_string(c.vocab_size));
      }
    }
  } else if (draft_vocab > c.vocab_size) {
    return invalid_argument(c.source + ": draft_vocab_size " + std::to_string(draft_vocab) +
                            " exceeds vocab_size without a d2t mapping");
  }
  parts.d2t = std::move(layout.d2t);
  if (parts.d2t.empty() && draft_vocab < c.vocab_size) parts.d2t.assign(static_cast<size_t>(draft_vocab), 0);
  return std::unique_ptr<Model>(new Eagle3Head(c, std::move(parts)));
}

Result<std::vector<WeightSpec>> eagle3_head_weight_specs(const ModelConfig& head) {
  WeightLister lister;
  VLLM_RETURN_IF_ERROR(build_eagle3_head(head, lister, nullptr, {}).status());
  return std::move(lister.specs);
}

Result<std::unique_ptr<Model>> load_eagle3_head(const std::string& path, const Model& target) {
  const auto* decoder = dynamic_cast<const DecoderModel*>(&target);
  if (decoder == nullptr || decoder->target_hidden_states()) {
    return invalid_argument("an EAGLE-3 head needs a decoder-only target model");
  }
  VLLM_ASSIGN_OR_RETURN(const ModelConfig config, load_model_config(path));
  VLLM_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(path));
  Eagle3Layout layout;
  if (!checkpoint.has("midlayer.self_attn.q_proj.weight") && checkpoint.has("layers.0.self_attn.q_proj.weight")) {
    layout.layer_prefix = "layers.0.";
  }
  layout.own_embedding = checkpoint.has("embed_tokens.weight");
  if (checkpoint.has("d2t")) {
    VLLM_ASSIGN_OR_RETURN(const Tensor d2t, checkpoint.get("d2t"));
    if (d2t.dtype != DType::kI64 || d2t.rank() != 1) {
      return invalid_argument(checkpoint.source() + ": d2t must be a vector of int64");
    }
    layout.d2t.resize(static_cast<size_t>(d2t.dim(0)));
    std::memcpy(layout.d2t.data(), d2t.data, d2t.size_bytes());  // the file's offsets need not align it
  }
  ThreadPool packers(ThreadPool::default_num_threads());
  SourceWeightReader reader(checkpoint, packers);
  return build_eagle3_head(config, reader, decoder, std::move(layout));
}

}  // namespace vllm
