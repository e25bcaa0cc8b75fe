// The named differences between the decoder-only families we run.  There is
// one decoder implementation (decoder_model.cpp); each family only says which
// of these switches it turns on.
#pragma once

#include <string>

#include "model/model_config.h"

namespace vllm {

struct DecoderVariant {
  std::string name;             // the architectures[0] string
  bool qkv_bias = false;        // biases on q_proj, k_proj, v_proj
  bool o_bias = false;          // bias on o_proj
  bool qk_norm = false;         // per-head RMSNorm of q and k before RoPE (Qwen3)
  bool sliding_window = false;  // honour config.sliding_window in attention
};

DecoderVariant llama_variant(const ModelConfig& config);
DecoderVariant mistral_variant(const ModelConfig& config);
DecoderVariant qwen2_variant(const ModelConfig& config);
DecoderVariant qwen3_variant(const ModelConfig& config);

}  // namespace vllm
