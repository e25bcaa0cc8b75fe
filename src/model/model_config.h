// ModelConfig: the typed form of a Hugging Face config.json (plus the
// generation_config.json fields the engine needs), validated once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // llama3 only:
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // architectures[0]
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // explicit, or hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Llama/Mistral: biases on q, k, v and o
  int64_t sliding_window = 0;   // 0: none
  std::string torch_dtype;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;  // config.json's, then generation_config.json's extras
};

// Parses config.json's JSON value; `source` names the file in errors.
Result<ModelConfig> parse_model_config(const Json& json, const std::string& source);

// Reads `dir`/config.json and, if present, `dir`/generation_config.json.
Result<ModelConfig> load_model_config(const std::string& dir);

}  // namespace vllm
