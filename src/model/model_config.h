// ModelConfig: the typed form of a Hugging Face config.json (plus the
// generation_config.json fields the engine needs), validated once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

enum class RopeScalingType { kNone, kLinear, kDynamic, kLlama3, kYarn, kLongRope };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // dynamic, llama3, yarn and longrope: the context the model was trained
  // for, past which the scaling takes over.
  int64_t original_max_position_embeddings = 8192;
  // llama3 only:
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // yarn and longrope: what cos and sin are multiplied by (so attention
  // logits by its square).
  double attention_factor = 1.0;
  // yarn only: the rotation counts bounding the blend between extrapolated
  // and interpolated frequencies, and whether those bounds are rounded.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  // yarn: DeepSeek's mscale_all_dim (0: none), whose yarn_mscale squared
  // its attention multiplies the softmax scale by.
  double mscale_all_dim = 0.0;
  // longrope only: per-frequency divisors, rotary_dim / 2 of each: the
  // short ones within the original context, the long ones past it.
  std::vector<double> short_factors;
  std::vector<double> long_factors;

  // dynamic and longrope: the frequencies follow the length of the
  // sequence, as transformers recomputes them on each forward call.
  bool depends_on_length() const { return type == RopeScalingType::kDynamic || type == RopeScalingType::kLongRope; }
};

struct ModelConfig {
  std::string architecture;  // architectures[0]
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;    // explicit, or hidden_size / num_attention_heads
  int64_t rotary_dim = 0;  // the leading dimensions of a head RoPE rotates: head_dim * partial_rotary_factor
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
  std::string hidden_act = "silu";     // hidden_act, or hidden_activation (Gemma)

  // The longest sequence it serves: max_position_embeddings, times the
  // factor under dynamic NTK scaling, which exists to go past it (vLLM's
  // derived max_model_len).
  int64_t max_context_length() const {
    if (rope_scaling.type != RopeScalingType::kDynamic) return max_position_embeddings;
    return static_cast<int64_t>(static_cast<double>(max_position_embeddings) * rope_scaling.factor);
  }

  // The whole of config.json, for the fields only one architecture has
  // (read through a ConfigReader on it), and where it came from.
  Json json;
  std::string source;
};

// Typed reads of config.json's fields, for the fields every model has
// (parse_model_config) and those only an architecture knows (its builder):
// a missing optional field takes its default; a present field of the wrong
// JSON type is an error naming the file and the field.
class ConfigReader {
 public:
  ConfigReader(const Json& json, std::string source) : json_(json), source_(std::move(source)) {}

  Status error(const std::string& key, const std::string& what) const;
  bool present(const std::string& key) const;
  Result<int64_t> integer(const std::string& key, std::optional<int64_t> fallback) const;
  Result<int64_t> positive_integer(const std::string& key, std::optional<int64_t> fallback) const;
  Result<double> number(const std::string& key, double fallback) const;
  // A number, or null meaning `fallback` (Gemma's soft-caps: null is "off").
  Result<double> number_or_null(const std::string& key, double fallback) const;
  Result<bool> boolean(const std::string& key, bool fallback) const;
  Result<std::string> string(const std::string& key, const std::string& fallback) const;
  // An integer or a list of integers (eos_token_id).
  Result<std::vector<int64_t>> integer_list(const std::string& key) const;
  // A list of strings (Gemma's layer_types); empty when absent.
  Result<std::vector<std::string>> string_list(const std::string& key) const;
  // A list of numbers (longrope's factors); empty when absent.
  Result<std::vector<double>> number_list(const std::string& key) const;

 private:
  const Json& json_;
  std::string source_;
};

// YaRN's attention scaling for a context `factor` times the original one:
// 0.1 * mscale * ln(factor) + 1 (1 for factor <= 1).
double yarn_mscale(double factor, double mscale);

// Parses config.json's JSON value; `source` names the file in errors.
Result<ModelConfig> parse_model_config(const Json& json, const std::string& source);

// Reads `dir`/config.json and, if present, `dir`/generation_config.json.
Result<ModelConfig> load_model_config(const std::string& dir);

}  // namespace vllm
