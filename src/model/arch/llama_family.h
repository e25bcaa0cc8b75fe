// The Llama family: a pre-norm decoder with rotary attention (GQA) and a
// SwiGLU MLP, as Llama, Mistral, Qwen2, Qwen3, Phi-3, Granite and StableLM all are;
// each of those files only says which of these differences it has.
#pragma once

#include <functional>
#include <memory>

#include "model/layers/attention.h"
#include "model/layers/layer.h"
#include "model/layers/norm.h"
#include "model/layers/weight_reader.h"
#include "model/model.h"

namespace vllm {

// Layer i's feed-forward (the MoE architectures' mixture, or a dense MLP).
using FeedForwardBuilder = std::function<Result<std::unique_ptr<FeedForward>>(WeightReader& weights, int64_t layer)>;
// Layer i's attention, when it is not the standard one (DeepSeek's latent attention).
using MixerBuilder = std::function<Result<std::unique_ptr<SequenceMixer>>(WeightReader& weights, int64_t layer)>;

struct LlamaFamilyOptions {
  bool qkv_bias = false;  // biases on q_proj, k_proj, v_proj
  bool o_bias = false;    // a bias on o_proj
  // RMSNorm of q and k before RoPE: per head (Qwen3), over the whole projection (OLMoE).
  AttentionConfig::QKNorm qk_norm = AttentionConfig::QKNorm::kNone;
  bool sliding_window = false;     // config.sliding_window applies to every layer
  bool fused_projections = false;  // qkv_proj and gate_up_proj tensors (Phi-3)
  // Every norm's form (StableLM's LayerNorms) and epsilon (0: config.rms_norm_eps).
  Norm::Form norm = Norm::Form::kRms;
  double norm_eps = 0.0;
  // Granite's multipliers: the attention softmax scale (0: 1/sqrt(head_dim)),
  // the embedding's, each sub-layer output's and the logits'.
  float attention_scale = 0.0f;
  float embedding_scale = 1.0f;
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;
  // Unset: a SwiGLU GatedMlp of intermediate_size at "mlp.".
  FeedForwardBuilder feed_forward;
  // Unset: the Attention above at "self_attn.".
  MixerBuilder mixer;
};

Result<std::unique_ptr<Model>> build_llama_family(const ModelConfig& config, WeightReader& weights,
                                                  const LlamaFamilyOptions& options);

}  // namespace vllm
