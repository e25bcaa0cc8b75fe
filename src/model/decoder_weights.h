// The weights of a decoder-only transformer, bound to checkpoint tensors.
// Matrices stay in the mapped file in their stored dtype; small vectors
// (norms, biases) are widened once to float32.
#pragma once

#include <vector>

#include "model/arch/decoder_variant.h"
#include "model/loader/checkpoint.h"
#include "tensor/tensor.h"

namespace vllm {

struct DecoderLayerWeights {
  std::vector<float> input_norm;              // [hidden]
  Tensor q_proj, k_proj, v_proj;              // [heads * head_dim, hidden], [kv_heads * head_dim, hidden] x2
  std::vector<float> q_bias, k_bias, v_bias;  // empty unless variant.qkv_bias
  std::vector<float> q_norm, k_norm;          // [head_dim], empty unless variant.qk_norm
  Tensor o_proj;                              // [hidden, heads * head_dim]
  std::vector<float> o_bias;                  // empty unless variant.o_bias
  std::vector<float> post_attention_norm;     // [hidden]
  Tensor gate_proj, up_proj;                  // [intermediate, hidden]
  Tensor down_proj;                           // [hidden, intermediate]
};

struct DecoderWeights {
  Tensor embed_tokens;  // [vocab, hidden]
  std::vector<DecoderLayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  Tensor lm_head;                 // [vocab, hidden]; embed_tokens when tied
};

enum class WeightKind { kMatrix, kNorm, kBias };

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightKind kind;
};

// Every tensor the checkpoint must hold for this config: names, shapes and
// kinds (make-test-model writes exactly these).
std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& config, const DecoderVariant& variant);

// Checks every tensor's presence, shape and dtype against the config.
Result<DecoderWeights> bind_decoder_weights(const Checkpoint& ckpt, const ModelConfig& config,
                                            const DecoderVariant& variant);

}  // namespace vllm
