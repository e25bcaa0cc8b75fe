#include "model/model_config.h"

#include <algorithm>
#include <cmath>

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

Result<std::vector<double>> ConfigReader::number_list(const std::string& key) const {
  std::vector<double> out;
  if (!present(key)) return out;
  const Json& v = json_[key];
  if (!v.is_array()) return error(key, "must be a list of numbers, found " + v.dump());
  for (const Json& item : v) {
    if (!item.is_number()) return error(key, "must hold numbers, found " + item.dump());
    out.push_back(item.get<double>());
  }
  return out;
}

double yarn_mscale(double factor, double mscale) { return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

namespace {

// transformers' YaRN: `factor` times the original context, an attention
// factor from mscale / mscale_all_dim when both are set.
Status parse_yarn(const ConfigReader& r, RopeScaling& s) {
  VLLM_ASSIGN_OR_RETURN(s.beta_fast, r.number("beta_fast", 32.0));
  VLLM_ASSIGN_OR_RETURN(s.beta_slow, r.number("beta_slow", 1.0));
  VLLM_ASSIGN_OR_RETURN(s.truncate, r.boolean("truncate", true));
  VLLM_ASSIGN_OR_RETURN(const double mscale, r.number("mscale", 0.0));
  VLLM_ASSIGN_OR_RETURN(s.mscale_all_dim, r.number("mscale_all_dim", 0.0));
  const double derived = mscale != 0.0 && s.mscale_all_dim != 0.0
                             ? yarn_mscale(s.factor, mscale) / yarn_mscale(s.factor, s.mscale_all_dim)
                             : yarn_mscale(s.factor, 1.0);
  VLLM_ASSIGN_OR_RETURN(s.attention_factor, r.number_or_null("attention_factor", derived));
  return {};
}

// Phi-3's LongRoPE: short and long per-frequency factors, and an attention
// factor sqrt(1 + ln(factor) / ln(original context)).
Status parse_longrope(const ConfigReader& r, RopeScaling& s, int64_t max_position_embeddings) {
  VLLM_ASSIGN_OR_RETURN(const std::vector<double> short_factor, r.number_list("short_factor"));
  VLLM_ASSIGN_OR_RETURN(const std::vector<double> long_factor, r.number_list("long_factor"));
  if (short_factor.empty()) return r.error("short_factor", "is required for longrope");
  if (long_factor.size() != short_factor.size())
    return r.error("long_factor", "must have as many entries as short_factor");
  s.short_factors = short_factor;
  s.long_factors = long_factor;
  if (!r.present("factor")) {
    s.factor = static_cast<double>(max_position_embeddings) / static_cast<double>(s.original_max_position_embeddings);
  }
  const double derived =
      s.factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(s.factor) / std::log(s.original_max_position_embeddings));
  VLLM_ASSIGN_OR_RETURN(s.attention_factor, r.number_or_null("attention_factor", derived));
  return {};
}

Result<RopeScaling> parse_rope_scaling(const Json& json, const std::string& source, int64_t max_position_embeddings) {
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
  } else if (type == "dynamic") {
    // transformers' dynamic NTK: the plain frequencies up to
    // max_position_embeddings, a larger base past it.
    scaling.type = RopeScalingType::kDynamic;
    if (!r.present("factor")) return r.error("factor", "is required for dynamic scaling");
    scaling.original_max_position_embeddings = max_position_embeddings;
  } else if (type == "llama3") {
    scaling.type = RopeScalingType::kLlama3;
    VLLM_ASSIGN_OR_RETURN(scaling.low_freq_factor, r.number("low_freq_factor", 1.0));
    VLLM_ASSIGN_OR_RETURN(scaling.high_freq_factor, r.number("high_freq_factor", 4.0));
    VLLM_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                          r.positive_integer("original_max_position_embeddings", 8192));
    if (!(scaling.high_freq_factor > scaling.low_freq_factor)) {
      return r.error("high_freq_factor", "must be greater than low_freq_factor");
    }
  } else if (type == "yarn" || type == "longrope" || type == "su") {
    // The context trained for: config.json's top level (Phi-3), else the
    // scaling's own key, else max_position_embeddings (transformers'
    // standardize_rope_params).
    const ConfigReader top(json, source);
    VLLM_ASSIGN_OR_RETURN(int64_t original,
                          r.positive_integer("original_max_position_embeddings", max_position_embeddings));
    VLLM_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                          top.positive_integer("original_max_position_embeddings", original));
    // Phi-3's configuration reads "su" and "yarn" as LongRoPE.
    VLLM_ASSIGN_OR_RETURN(const std::string model_type, top.string("model_type", ""));
    if (type == "yarn" && model_type != "phi3") {
      scaling.type = RopeScalingType::kYarn;
      VLLM_RETURN_IF_ERROR(parse_yarn(r, scaling));
    } else {
      scaling.type = RopeScalingType::kLongRope;
      VLLM_RETURN_IF_ERROR(parse_longrope(r, scaling, max_position_embeddings));
    }
  } else {
    return unimplemented(where + ": unsupported rope_scaling type '" + type +
                         "'; supported: default, linear, dynamic, llama3, yarn, longrope");
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
  VLLM_ASSIGN_OR_RETURN(c.rope_scaling, parse_rope_scaling(json, source, c.max_position_embeddings));
  VLLM_ASSIGN_OR_RETURN(const double partial_rotary_factor, r.number("partial_rotary_factor", 1.0));
  if (!(partial_rotary_factor > 0.0 && partial_rotary_factor <= 1.0)) {
    return r.error("partial_rotary_factor", "must be in (0, 1]");
  }
  c.rotary_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial_rotary_factor);
  if (c.rotary_dim % 2 != 0) return r.error("partial_rotary_factor", "must leave an even rotary dimension");
  const auto factors = static_cast<int64_t>(c.rope_scaling.short_factors.size());
  if (c.rope_scaling.type == RopeScalingType::kLongRope && factors != c.rotary_dim / 2) {
    return invalid_argument(source + " (rope_scaling): short_factor has " + std::to_string(factors) +
                            " entries; the rotary dimension " + std::to_string(c.rotary_dim) + " needs " +
                            std::to_string(c.rotary_dim / 2));
  }
  VLLM_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings", false));
  VLLM_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias", false));
  VLLM_ASSIGN_OR_RETURN(bool use_sliding_window, r.boolean("use_sliding_window", true));
  VLLM_ASSIGN_OR_RETURN(c.sliding_window, r.integer("sliding_window", 0));
  if (!use_sliding_window || c.sliding_window < 0) c.sliding_window = 0;
  // transformers v5 writes "dtype" where earlier versions wrote "torch_dtype".
  VLLM_ASSIGN_OR_RETURN(const std::string dtype, r.string("dtype", ""));
  VLLM_ASSIGN_OR_RETURN(c.torch_dtype, r.string("torch_dtype", dtype));
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
