#include "cli/speculative_config_flag.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <optional>

#include "base/json.h"

namespace vllm::cli {
namespace {

Status flag_error(const std::string& message) { return invalid_argument("--speculative-config: " + message); }

Result<int32_t> read_int(const Json& object, const char* key) {
  const Json& v = object.at(key);
  if (!v.is_number_integer()) return flag_error(std::string(key) + " must be an integer");
  const auto value = v.get<int64_t>();
  if (value < INT32_MIN || value > INT32_MAX) return flag_error(std::string(key) + " is out of range");
  return static_cast<int32_t>(value);
}

// vLLM's method names for prompt lookup.
bool is_ngram(const std::string& name) { return name == "ngram" || name == "[ngram]"; }

}  // namespace

Result<SpeculativeConfig> parse_speculative_config(const std::string& text) {
  VLLM_ASSIGN_OR_RETURN(Json json, parse_json(text, "--speculative-config"));
  if (!json.is_object()) return flag_error("must be a JSON object");
  static const char* const kKeys[] = {
      "method", "model", "num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max", "disable_by_batch_size"};
  for (const auto& [key, value] : json.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return flag_error("key '" + key + "' is not supported");
    }
  }
  // vLLM: without a method, a model named "ngram" means prompt lookup, any other a draft model.
  std::string method;
  if (json.contains("method")) {
    if (!json["method"].is_string()) return flag_error("method must be a string");
    method = json["method"].get<std::string>();
  } else if (json.contains("model") && json["model"].is_string()) {
    method = is_ngram(json["model"].get<std::string>()) ? "ngram" : "draft_model";
  } else {
    return flag_error("give a method (ngram, draft_model, eagle, eagle3)");
  }
  SpeculativeConfig config;
  if (is_ngram(method)) {
    config.method = SpeculativeMethod::kNgram;
  } else if (method == "draft_model" || method == "eagle" || method == "eagle3") {
    config.method = method == "eagle"    ? SpeculativeMethod::kEagle
                    : method == "eagle3" ? SpeculativeMethod::kEagle3
                                         : SpeculativeMethod::kDraftModel;
    if (!json.contains("model") || !json["model"].is_string()) return flag_error(method + " needs a model path");
    config.model = json["model"].get<std::string>();
  } else {
    return flag_error("method '" + method + "' is not supported yet (supported: ngram, draft_model, eagle, eagle3)");
  }
  if (!json.contains("num_speculative_tokens")) return flag_error("num_speculative_tokens is required");
  VLLM_ASSIGN_OR_RETURN(config.num_speculative_tokens, read_int(json, "num_speculative_tokens"));
  // vLLM: either bound alone sets both; neither gives 5 and 5.
  std::optional<int32_t> min_n, max_n;
  if (json.contains("prompt_lookup_min")) {
    VLLM_ASSIGN_OR_RETURN(min_n, read_int(json, "prompt_lookup_min"));
  }
  if (json.contains("prompt_lookup_max")) {
    VLLM_ASSIGN_OR_RETURN(max_n, read_int(json, "prompt_lookup_max"));
  }
  config.prompt_lookup_min = min_n.value_or(max_n.value_or(5));
  config.prompt_lookup_max = max_n.value_or(min_n.value_or(5));
  if (json.contains("disable_by_batch_size")) {
    VLLM_ASSIGN_OR_RETURN(config.disable_by_batch_size, read_int(json, "disable_by_batch_size"));
  }
  if (Status s = config.validate(); !s.is_ok()) return flag_error(s.message());
  return config;
}

}  // namespace vllm::cli
