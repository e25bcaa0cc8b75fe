#include "api/sampling_fields.h"

#include <climits>

#include "api/json_fields.h"

namespace vllm::api {
namespace {

// "stop" (or "bad_words"): a string or an array of strings.
Result<std::vector<std::string>> read_stop(const Json& v, const std::string& field) {
  if (v.is_null()) return std::vector<std::string>();
  if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
  std::vector<std::string> stops;
  if (v.is_array()) {
    for (const Json& s : v) {
      if (!s.is_string()) break;
      stops.push_back(s.get<std::string>());
    }
    if (stops.size() == v.size()) return stops;
  }
  return invalid_argument("field '" + field + "' must be a string or an array of strings").with_param(field);
}

// "logit_bias": {"<token id>": bias, ...}
Result<std::vector<std::pair<int32_t, double>>> read_logit_bias(const Json& v) {
  std::vector<std::pair<int32_t, double>> bias;
  if (v.is_null()) return bias;
  if (!v.is_object()) {
    return invalid_argument("field 'logit_bias' must be an object of token id -> bias").with_param("logit_bias");
  }
  for (const auto& [key, value] : v.items()) {
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id > INT32_MAX) {
      return invalid_argument("logit_bias key '" + key + "' is not a token id").with_param("logit_bias");
    }
    VLLM_ASSIGN_OR_RETURN(double b, read_number(value, "logit_bias"));
    bias.emplace_back(static_cast<int32_t>(id), b);
  }
  return bias;
}

Result<std::optional<int64_t>> read_seed(const Json& v) {
  if (v.is_null()) return std::optional<int64_t>();
  VLLM_ASSIGN_OR_RETURN(int64_t seed, read_integer(v, "seed"));
  return seed == -1 ? std::optional<int64_t>() : std::optional<int64_t>(seed);  // API.md: -1 means no seed
}

}  // namespace

Result<bool> read_sampling_field(SamplingParams& p, SamplingFieldExtras& extras, const std::string& key,
                                 const Json& v) {
  if (key == "n") {
    VLLM_ASSIGN_OR_RETURN(p.n, read_int32(v, key));
    extras.n_given = true;
  } else if (key == "best_of") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(extras.best_of, read_integer(v, key));
    }
  } else if (key == "temperature") {
    VLLM_ASSIGN_OR_RETURN(p.temperature, read_number(v, key));
  } else if (key == "top_p") {
    VLLM_ASSIGN_OR_RETURN(p.top_p, read_number(v, key));
  } else if (key == "top_k") {
    VLLM_ASSIGN_OR_RETURN(p.top_k, read_int32(v, key));
  } else if (key == "min_p") {
    VLLM_ASSIGN_OR_RETURN(p.min_p, read_number(v, key));
  } else if (key == "seed") {
    VLLM_ASSIGN_OR_RETURN(p.seed, read_seed(v));
  } else if (key == "presence_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.presence_penalty, read_number(v, key));
  } else if (key == "frequency_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.frequency_penalty, read_number(v, key));
  } else if (key == "repetition_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.repetition_penalty, read_number(v, key));
  } else if (key == "logit_bias") {
    VLLM_ASSIGN_OR_RETURN(p.logit_bias, read_logit_bias(v));
  } else if (key == "allowed_token_ids") {
    if (v.is_null()) {
      p.allowed_token_ids.reset();
    } else {
      VLLM_ASSIGN_OR_RETURN(p.allowed_token_ids, read_token_ids(v, key));
    }
  } else if (key == "bad_words") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(p.bad_words, read_stop(v, key));
    }
  } else if (key == "min_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.min_tokens, read_integer(v, key));
  } else if (key == "max_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.max_tokens, read_integer(v, key));
  } else if (key == "stop") {
    VLLM_ASSIGN_OR_RETURN(p.stop, read_stop(v, key));
  } else if (key == "stop_token_ids") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(p.stop_token_ids, read_token_ids(v, key));
    }
  } else if (key == "include_stop_str_in_output") {
    VLLM_ASSIGN_OR_RETURN(p.include_stop_str_in_output, read_bool(v, key));
  } else if (key == "ignore_eos") {
    VLLM_ASSIGN_OR_RETURN(p.ignore_eos, read_bool(v, key));
  } else if (key == "logprobs") {
    VLLM_ASSIGN_OR_RETURN(p.logprobs, read_optional_int32(v, key));
  } else if (key == "prompt_logprobs") {
    VLLM_ASSIGN_OR_RETURN(p.prompt_logprobs, read_optional_int32(v, key));
  } else if (key == "skip_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.skip_special_tokens, read_bool(v, key));
  } else if (key == "spaces_between_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.spaces_between_special_tokens, read_bool(v, key));
  } else if (key == "use_beam_search") {
    VLLM_ASSIGN_OR_RETURN(p.use_beam_search, read_bool(v, key));
  } else if (key == "beam_width") {
    VLLM_ASSIGN_OR_RETURN(extras.beam_width, read_optional_int32(v, key));
  } else if (key == "length_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.length_penalty, read_number(v, key));
  } else {
    return read_structured_output_field(extras.structured_outputs, key, v);
  }
  return true;
}

Status apply_sampling_extras(SamplingParams& params, const SamplingFieldExtras& extras) {
  VLLM_ASSIGN_OR_RETURN(params.structured_outputs, single_constraint(extras.structured_outputs));
  if (extras.beam_width) {
    if (extras.n_given && params.n != *extras.beam_width) {
      return invalid_argument("beam_width and n differ").with_param("beam_width");
    }
    params.n = *extras.beam_width;
  }
  if (extras.best_of && *extras.best_of != params.n) {
    return invalid_argument("best_of must be null or equal to n (" + std::to_string(params.n) + "), got " +
                            std::to_string(*extras.best_of))
        .with_param("best_of");
  }
  return Status::ok();
}

}  // namespace vllm::api
