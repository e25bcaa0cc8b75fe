#include "model/model_config.h"

#include <algorithm>

#include "base/file_util.h"

namespace vllm {

Status ConfigReader::error(const std::string& key, const std::string& what) const {
  return invalid_argument(source_ + ": field '" + key + "' " + what);
}

bool ConfigReader::present(const std::string& key) const { return json_.contains(key) && !json_[key].is_null(); }

Result<int64_t> ConfigReader::integer(const std::string& key, std::optional<int64_t> fallback) const {
  if (!present(key)) {
    if (fallback) return *fallback;
    return error(key, "is required");
  }
  const Json& v = json_[key];
  if (!v.is_number_integer()) return error(key, "must be an integer, found " + v.dump());
  return v.get<int64_t>();
}

Result<int64_t> ConfigReader::positive_integer(const std::string& key, std::optional<int64_t> fallback) const {
  VLLM_ASSIGN_OR_RETURN(int64_t value, integer(key, fallback));
  if (value <= 0) return error(key, "must be positive, found " + std::to_string(value));
  return value;
}

Result<double> ConfigReader::number(const std::string& key, double fallback) const {
  if (!present(key)) return fallback;
  const Json& v = json_[key];
  if (!v.is_number()) return error(key, "must be a number, found " + v.dump());
  return v.get<double>();
}

Result<double> ConfigReader::number_or_null(const std::string& key, double fallback) const {
  if (json_.contains(key) && json_[key].is_null()) return fallback;
  return number(key, fallback);
}

Result<bool> ConfigReader::boolean(const std::string& key, bool fallback) const {
  if (!present(key)) return fallback;
  const Json& v = json_[key];
  if (!v.is_boolean()) return error(key, "must be true or false, found " + v.dump());
  return v.get<bool>();
}

Result<std::string> ConfigReader::string(const std::string& key, const std::string& fallback) const {
  if (!present(key)) return fallback;
  const Json& v = json_[key];
  if (!v.is_string()) return error(key, "must be a string, found " + v.dump());
  return v.get<std::string>();
}

Result<std::vector<int64_t>> ConfigReader::integer_list(const std::string& key) const {
  std::vector<int64_t> out;
  if (!present(key)) return out;
  const Json& v = json_[key];
  if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
  if (!v.is_array()) return error(key, "must be an integer or a list of integers, found " + v.dump());
  for (const Json& item : v) {
    if (!item.is_number_integer()) return error(key, "must hold integers, found " + item.dump());
    out.push_back(item.get<int64_t>());
  }
  return out;
}

Result<std::vector<std::string>> ConfigReader::string_list(const std::string& key) const {
  std::vector<std::string> out;
  if (!present(key)) return out;
  const Json& v = json_[key];
  if (!v.is_array()) return error(key, "must be a list of strings, found " + v.dump());
  for (const Json& item : v) {
    if (!item.is_string()) return error(key, "must hold strings, found " + item.dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

namespace {

Result<RopeScaling> parse_rope_scaling(const Json& json, const std::string& source) {
  RopeScaling scaling;
  if (!json.contains("rope_scaling") || json["rope_scaling"].is_null()) return scaling;
  const Json& rs = json["rope_scaling"];
  if (!rs.is_object()) return invalid_argument(source + ": field 'rope_scaling' must be an object or null");
  const std::string where = source + " (rope_scaling)";
  ConfigReader r(rs, where);
  VLLM_ASSIGN_OR_RETURN(std::string type, r.string("rope_type", ""));
  if (type.empty()) {
    VLLM_ASSIGN_OR_RETURN(type, r.string("type", ""));
  }
  VLLM_ASSIGN_OR_RETURN(scaling.factor, r.number("factor", 1.0));
  if (!(scaling.factor > 0.0)) return r.error("factor", "must be positive");
  if (type == "default") {
    scaling.type = RopeScalingType::kNone;
  } else if (type == "linear") {
    scaling.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    scaling.type = RopeScalingType::kLlama3;
    VLLM_ASSIGN_OR_RETURN(scaling.low_freq_factor, r.number("low_freq_factor", 1.0));
    VLLM_ASSIGN_OR_RETURN(scaling.high_freq_factor, r.number("high_freq_factor", 4.0));
    VLLM_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                          r.positive_integer("original_max_position_embeddings", 8192));
    if (!(scaling.high_freq_factor > scaling.low_freq_factor)) {
      return r.error("high_freq_factor", "must be greater than low_freq_factor");
    }
  } else {
    return unimplemented(where + ": unsupported rope_scaling type '" + type + "'; supported: linear, llama3");
  }
  return scaling;
}

}  // namespace

Result<ModelConfig> parse_model_config(const Json& json, const std::string& source) {
  if (!json.is_object()) return invalid_argument(source + ": expected a JSON object");
  ConfigReader r(json, source);
  ModelConfig c;
  if (!json.contains("architectures") || !json["architectures"].is_array() || json["architectures"].empty() ||
      !json["architectures"][0].is_string()) {
    return invalid_argument(source + ": field 'architectures' must be a non-empty list of strings");
  }
  c.architecture = json["architectures"][0].get<std::string>();
  VLLM_ASSIGN_OR_RETURN(c.model_type, r.string("model_type", ""));
  VLLM_ASSIGN_OR_RETURN(c.hidden_size, r.positive_integer("hidden_size", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c.intermediate_size, r.positive_integer("intermediate_size", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c.num_hidden_layers, r.positive_integer("num_hidden_layers", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c.num_attention_heads, r.positive_integer("num_attention_heads", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c.num_key_value_heads, r.positive_integer("num_key_value_heads", c.num_attention_heads));
  VLLM_ASSIGN_OR_RETURN(c.vocab_size, r.positive_integer("vocab_size", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c.max_position_embeddings, r.positive_integer("max_position_embeddings", 2048));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return invalid_argument(source + ": num_attention_heads (" + std::to_string(c.num_attention_heads) +
                            ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) +
                            ")");
  }
  if (!r.present("head_dim") && c.hidden_size % c.num_attention_heads != 0) {
    return invalid_argument(source + ": hidden_size must be a multiple of num_attention_heads when head_dim is absent");
  }
  VLLM_ASSIGN_OR_RETURN(c.head_dim, r.positive_integer("head_dim", c.hidden_size / c.num_attention_heads));
  if (c.head_dim % 2 != 0) return r.error("head_dim", "must be even for rotary embeddings");
  VLLM_ASSIGN_OR_RETURN(c.rms_norm_eps, r.number("rms_norm_eps", 1e-6));
  VLLM_ASSIGN_OR_RETURN(c.rope_theta, r.number("rope_theta", 10000.0));
  if (!(c.rope_theta > 0.0)) return r.error("rope_theta", "must be positive");
  VLLM_ASSIGN_OR_RETURN(c.rope_scaling, parse_rope_scaling(json, source));
  VLLM_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings", false));
  VLLM_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias", false));
  VLLM_ASSIGN_OR_RETURN(bool use_sliding_window, r.boolean("use_sliding_window", true));
  VLLM_ASSIGN_OR_RETURN(c.sliding_window, r.integer("sliding_window", 0));
  if (!use_sliding_window || c.sliding_window < 0) c.sliding_window = 0;
  VLLM_ASSIGN_OR_RETURN(c.torch_dtype, r.string("torch_dtype", ""));
  VLLM_ASSIGN_OR_RETURN(c.bos_token_id, r.integer("bos_token_id", -1));
  VLLM_ASSIGN_OR_RETURN(c.eos_token_ids, r.integer_list("eos_token_id"));
  VLLM_ASSIGN_OR_RETURN(c.hidden_act, r.string("hidden_act", "silu"));
  if (r.present("hidden_activation")) {  // Gemma's name, which transformers reads in preference
    VLLM_ASSIGN_OR_RETURN(c.hidden_act, r.string("hidden_activation", "silu"));
  }
  c.json = json;
  c.source = source;
  return c;
}

Result<ModelConfig> load_model_config(const std::string& dir) {
  if (!directory_exists(dir)) return not_found(dir + ": model directory not found");
  const std::string path = join_path(dir, "config.json");
  VLLM_ASSIGN_OR_RETURN(Json json, read_json_file(path));
  VLLM_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(json, path));
  const std::string gen_path = join_path(dir, "generation_config.json");
  if (file_exists(gen_path)) {
    VLLM_ASSIGN_OR_RETURN(Json gen, read_json_file(gen_path));
    if (!gen.is_object()) return invalid_argument(gen_path + ": expected a JSON object");
    VLLM_ASSIGN_OR_RETURN(std::vector<int64_t> extra, ConfigReader(gen, gen_path).integer_list("eos_token_id"));
    for (int64_t id : extra) {
      if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end()) {
        config.eos_token_ids.push_back(id);
      }
    }
  }
  return config;
}

}  // namespace vllm
