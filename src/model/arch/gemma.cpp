// Gemma 2 and Gemma 3 (text): a decoder with "sandwich" norms (each
// sub-layer's output RMS-normed before its residual add), every norm
// x * (1 + w), the embedding scaled by sqrt(hidden_size) (rounded to the
// checkpoint's dtype, as transformers and vLLM compute it), GeGLU MLPs,
// attention scaled by query_pre_attn_scalar^-1/2 with sliding-window and
// global layers interleaved; Gemma 2 soft-caps attention and final logits,
// Gemma 3 normalises q and k per head and gives its sliding layers a rotary
// embedding of their own base.
#include <cmath>

#include "model/arch/architectures.h"
#include "model/arch/common.h"
#include "model/layers/decoder.h"
#include "model/layers/mlp.h"

namespace vllm {
namespace {

struct GemmaVersion {
  int version;  // 2 or 3
  int64_t default_pattern;
  double default_rope_theta;
};

// sqrt(hidden_size) as the checkpoint's dtype holds it (bf16: sqrt(1152) is 34.0).
float embedding_scale(const ModelConfig& c) {
  const auto scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
  if (c.torch_dtype == "bfloat16") return bf16_to_f32(f32_to_bf16(scale));
  if (c.torch_dtype == "float16") return f16_to_f32(f32_to_f16(scale));
  return scale;
}

// Which layers use the sliding window: layer_types when config.json has it,
// else every layer but each pattern-th ((i + 1) % pattern != 0).
Result<std::vector<bool>> sliding_layers(const ModelConfig& c, const ConfigReader& r, const GemmaVersion& v) {
  VLLM_ASSIGN_OR_RETURN(const std::vector<std::string> types, r.string_list("layer_types"));
  std::vector<bool> sliding;
  if (!types.empty()) {
    if (static_cast<int64_t>(types.size()) != c.num_hidden_layers) {
      return r.error("layer_types", "has " + std::to_string(types.size()) + " entries for " +
                                        std::to_string(c.num_hidden_layers) + " layers");
    }
    for (const std::string& t : types) {
      if (t != "sliding_attention" && t != "full_attention") {
        return r.error("layer_types", "holds '" + t + "'; expected sliding_attention or full_attention");
      }
      sliding.push_back(t == "sliding_attention");
    }
    return sliding;
  }
  int64_t pattern = v.default_pattern;
  if (v.version == 3) {
    VLLM_ASSIGN_OR_RETURN(pattern, r.positive_integer("_sliding_window_pattern", v.default_pattern));
    VLLM_ASSIGN_OR_RETURN(pattern, r.positive_integer("sliding_window_pattern", pattern));
  }
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) sliding.push_back((i + 1) % pattern != 0);
  return sliding;
}

Result<std::unique_ptr<Model>> build_gemma(const ModelConfig& parsed, WeightReader& w, const GemmaVersion& v) {
  ModelConfig c = parsed;
  const ConfigReader r(c.json, c.source);
  // The config classes' defaults where config.json leaves a key out.
  if (!r.present("head_dim")) c.head_dim = 256;
  VLLM_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings", true));
  VLLM_ASSIGN_OR_RETURN(c.rope_theta, r.number("rope_theta", v.default_rope_theta));
  VLLM_ASSIGN_OR_RETURN(const Activation act, activation_named(c.hidden_act, c.source));
  VLLM_ASSIGN_OR_RETURN(const double query_pre_attn_scalar, r.number("query_pre_attn_scalar", 256));
  VLLM_ASSIGN_OR_RETURN(const int64_t window, r.positive_integer("sliding_window", 4096));
  VLLM_ASSIGN_OR_RETURN(const double attn_softcap, r.number_or_null("attn_logit_softcapping", v.version == 2 ? 50 : 0));
  VLLM_ASSIGN_OR_RETURN(const double final_softcap,
                        r.number_or_null("final_logit_softcapping", v.version == 2 ? 30 : 0));
  VLLM_ASSIGN_OR_RETURN(const std::vector<bool> sliding, sliding_layers(c, r, v));
  const auto one_plus = Norm::Form::kRmsOnePlus;

  DecoderParts parts;
  VLLM_RETURN_IF_ERROR(load_decoder_embedding(w, c, parts));
  parts.embedding_scale = embedding_scale(c);
  // Rope 0 for the global layers (and all of Gemma 2's); Gemma 3's sliding
  // layers get rope 1, of rope_local_base_freq and never scaled.
  parts.ropes.emplace_back(c.rotary_dim, c.rope_theta, c.rope_scaling);
  if (v.version == 3) {
    VLLM_ASSIGN_OR_RETURN(const double local_theta, r.number("rope_local_base_freq", 10000.0));
    parts.ropes.emplace_back(c.rotary_dim, local_theta, RopeScaling{});
  }
  for (int64_t i = parts.stage.first_layer; i < parts.stage.end(c.num_hidden_layers); ++i) {
    const std::string p = layer_prefix(i);
    DecoderLayer& layer = parts.layers.emplace_back();
    AttentionConfig attention = standard_attention(c);
    attention.scale = static_cast<float>(1.0 / std::sqrt(query_pre_attn_scalar));
    attention.softcap = v.version == 2 ? static_cast<float>(attn_softcap) : 0.0f;  // Gemma 3 never applies it
    if (sliding[static_cast<size_t>(i)]) {
      attention.sliding_window = static_cast<int32_t>(window);
      if (v.version == 3) attention.rope = 1;
    }
    if (v.version == 3) {
      attention.qk_norm = AttentionConfig::QKNorm::kPerHead;
      attention.qk_norm_form = one_plus;
    }
    VLLM_ASSIGN_OR_RETURN(layer.input_norm,
                          Norm::load(w, p + "input_layernorm", c.hidden_size, c.rms_norm_eps, one_plus));
    VLLM_ASSIGN_OR_RETURN(layer.mixer,
                          Attention::load(w, {p + "self_attn.", false, c.attention_bias, c.attention_bias}, attention));
    VLLM_ASSIGN_OR_RETURN(layer.post_mixer_norm,
                          Norm::load(w, p + "post_attention_layernorm", c.hidden_size, c.rms_norm_eps, one_plus));
    VLLM_ASSIGN_OR_RETURN(layer.ffn_norm,
                          Norm::load(w, p + "pre_feedforward_layernorm", c.hidden_size, c.rms_norm_eps, one_plus));
    VLLM_ASSIGN_OR_RETURN(layer.ffn, GatedMlp::load(w, {p + "mlp."}, c.hidden_size, c.intermediate_size, act));
    VLLM_ASSIGN_OR_RETURN(layer.post_ffn_norm,
                          Norm::load(w, p + "post_feedforward_layernorm", c.hidden_size, c.rms_norm_eps, one_plus));
  }
  if (parts.stage.last()) {
    VLLM_ASSIGN_OR_RETURN(parts.final_norm, Norm::load(w, "model.norm", c.hidden_size, c.rms_norm_eps, one_plus));
    VLLM_ASSIGN_OR_RETURN(parts.lm_head, load_lm_head(w, c, parts.embed_tokens));
  }
  parts.logit_softcap = static_cast<float>(final_softcap);
  return std::unique_ptr<Model>(new DecoderModel(c, std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<Model>> build_gemma2(const ModelConfig& config, WeightReader& weights) {
  return build_gemma(config, weights, {.version = 2, .default_pattern = 2, .default_rope_theta = 10000.0});
}

Result<std::unique_ptr<Model>> build_gemma3(const ModelConfig& config, WeightReader& weights) {
  return build_gemma(config, weights, {.version = 3, .default_pattern = 6, .default_rope_theta = 1000000.0});
}

}  // namespace vllm
