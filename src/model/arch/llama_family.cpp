#include "model/arch/llama_family.h"

#include <cmath>

#include "model/arch/common.h"
#include "model/layers/attention.h"
#include "model/layers/decoder.h"
#include "model/layers/mlp.h"

namespace vllm {

Result<std::unique_ptr<Model>> build_llama_family(const ModelConfig& c, WeightReader& w,
                                                  const LlamaFamilyOptions& options) {
  VLLM_ASSIGN_OR_RETURN(const Activation act, activation_named(c.hidden_act, c.source));
  if (act != Activation::kSilu) {
    return unimplemented(c.source + ": unsupported hidden_act '" + c.hidden_act + "'; supported: silu");
  }
  DecoderParts parts;
  VLLM_RETURN_IF_ERROR(load_decoder_embedding(w, c, parts));
  parts.embedding_scale = options.embedding_scale;
  parts.residual_scale = options.residual_scale;
  parts.logit_scale = options.logit_scale;
  parts.ropes.emplace_back(c.rotary_dim, c.rope_theta, c.rope_scaling);
  AttentionConfig attention = standard_attention(c);
  if (options.attention_scale != 0.0f) attention.scale = options.attention_scale;
  if (options.sliding_window) attention.sliding_window = static_cast<int32_t>(c.sliding_window);
  const bool fused = options.fused_projections;
  attention.qk_norm = options.qk_norm;
  const double eps = options.norm_eps != 0.0 ? options.norm_eps : c.rms_norm_eps;
  auto load_norm = [&](const std::string& module) { return Norm::load(w, module, c.hidden_size, eps, options.norm); };
  for (int64_t i = parts.stage.first_layer; i < parts.stage.end(c.num_hidden_layers); ++i) {
    const std::string p = layer_prefix(i);
    DecoderLayer& layer = parts.layers.emplace_back();
    VLLM_ASSIGN_OR_RETURN(layer.input_norm, load_norm(p + "input_layernorm"));
    if (options.mixer) {
      VLLM_ASSIGN_OR_RETURN(layer.mixer, options.mixer(w, i));
    } else {
      VLLM_ASSIGN_OR_RETURN(layer.mixer,
                            Attention::load(w, {p + "self_attn.", fused, options.qkv_bias, options.o_bias}, attention));
    }
    VLLM_ASSIGN_OR_RETURN(layer.ffn_norm, load_norm(p + "post_attention_layernorm"));
    if (options.feed_forward) {
      VLLM_ASSIGN_OR_RETURN(layer.ffn, options.feed_forward(w, i));
    } else {
      VLLM_ASSIGN_OR_RETURN(layer.ffn, GatedMlp::load(w, {p + "mlp.", fused}, c.hidden_size, c.intermediate_size));
    }
  }
  if (parts.stage.last()) {
    VLLM_ASSIGN_OR_RETURN(parts.final_norm, load_norm("model.norm"));
    VLLM_ASSIGN_OR_RETURN(parts.lm_head, load_lm_head(w, c, parts.embed_tokens));
  }
  return std::unique_ptr<Model>(new DecoderModel(c, std::move(parts)));
}

}  // namespace vllm
