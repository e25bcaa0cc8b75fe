// The Llama family: a pre-norm decoder with rotary attention (GQA) and a
// SwiGLU MLP, as Llama, Mistral, Qwen2 and Qwen3 all are; each of those files
// only says which of these differences it has.
#pragma once

#include <memory>

#include "model/layers/weight_reader.h"
#include "model/model.h"

namespace vllm {

struct LlamaFamilyOptions {
  bool qkv_bias = false;        // biases on q_proj, k_proj, v_proj
  bool o_bias = false;          // a bias on o_proj
  bool qk_norm = false;         // RMSNorm over each head of q and k before RoPE (Qwen3)
  bool sliding_window = false;  // config.sliding_window applies to every layer
};

Result<std::unique_ptr<Model>> build_llama_family(const ModelConfig& config, WeightReader& weights,
                                                  const LlamaFamilyOptions& options);

}  // namespace vllm
