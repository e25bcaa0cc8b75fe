#include "cli/batch_requests.h"

#include <climits>
#include <cmath>
#include <fstream>
#include <iostream>

namespace vllm::cli {
namespace {

// The value of `field` as T, or an error naming the field and the type expected.
template <typename T>
Result<T> field_as(const Json& value, const std::string& field, const char* expected) {
  try {
    return value.get<T>();
  } catch (const Json::exception&) {
    return invalid_argument("field '" + field + "' must be " + expected);
  }
}

}  // namespace

namespace {

Result<int64_t> integer(const Json& v, const std::string& field) {
  if (!v.is_number_integer()) return invalid_argument("field '" + field + "' must be an integer");
  return v.get<int64_t>();
}

Result<int32_t> int32(const Json& v, const std::string& field) {
  VLLM_ASSIGN_OR_RETURN(int64_t x, integer(v, field));
  if (x < INT32_MIN || x > INT32_MAX) return invalid_argument("field '" + field + "' is out of range");
  return static_cast<int32_t>(x);
}

Result<double> number(const Json& v, const std::string& field) {
  if (!v.is_number()) return invalid_argument("field '" + field + "' must be a number");
  return v.get<double>();
}

Result<bool> boolean(const Json& v, const std::string& field) {
  if (!v.is_boolean()) return invalid_argument("field '" + field + "' must be true or false");
  return v.get<bool>();
}

Result<std::optional<int32_t>> optional_int32(const Json& v, const std::string& field) {
  if (v.is_null()) return std::optional<int32_t>();
  VLLM_ASSIGN_OR_RETURN(int32_t x, int32(v, field));
  return std::optional<int32_t>(x);
}

Result<std::vector<int32_t>> token_ids(const Json& v, const std::string& field) {
  return field_as<std::vector<int32_t>>(v, field, "an array of token ids");
}

// "stop": a string or an array of strings.
Result<std::vector<std::string>> stop_strings(const Json& v) {
  if (v.is_null()) return std::vector<std::string>();
  if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
  return field_as<std::vector<std::string>>(v, "stop", "a string or an array of strings");
}

// "logit_bias": {"<token id>": bias, ...}
Result<std::vector<std::pair<int32_t, double>>> logit_bias(const Json& v) {
  if (!v.is_object()) return invalid_argument("field 'logit_bias' must be an object of token id -> bias");
  std::vector<std::pair<int32_t, double>> bias;
  for (const auto& [key, value] : v.items()) {
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id > INT32_MAX) {
      return invalid_argument("logit_bias key '" + key + "' is not a token id");
    }
    VLLM_ASSIGN_OR_RETURN(double b, number(value, "logit_bias"));
    bias.emplace_back(static_cast<int32_t>(id), b);
  }
  return bias;
}

// Sets one field of `r`; false if the field is not a request field.
Result<bool> set_field(BatchRequest& r, const std::string& key, const Json& v, std::optional<int64_t>& best_of,
                       std::optional<int32_t>& beam_width) {
  SamplingParams& p = r.params;
  if (key == "prompt") {
    if (!v.is_string()) return invalid_argument("field 'prompt' must be a string");
    r.prompt.text = v.get<std::string>();
  } else if (key == "prompt_token_ids") {
    VLLM_ASSIGN_OR_RETURN(r.prompt.token_ids, token_ids(v, key));
  } else if (key == "cache_salt") {
    if (!v.is_string()) return invalid_argument("field 'cache_salt' must be a string");
    r.prompt.cache_salt = v.get<std::string>();
  } else if (key == "n") {
    VLLM_ASSIGN_OR_RETURN(p.n, int32(v, key));
  } else if (key == "best_of") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(best_of, integer(v, key));
    }
  } else if (key == "temperature") {
    VLLM_ASSIGN_OR_RETURN(p.temperature, number(v, key));
  } else if (key == "top_p") {
    VLLM_ASSIGN_OR_RETURN(p.top_p, number(v, key));
  } else if (key == "top_k") {
    VLLM_ASSIGN_OR_RETURN(p.top_k, int32(v, key));
  } else if (key == "min_p") {
    VLLM_ASSIGN_OR_RETURN(p.min_p, number(v, key));
  } else if (key == "seed") {
    p.seed.reset();
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(int64_t seed, integer(v, key));
      if (seed != -1) p.seed = seed;  // API.md: -1 means no seed
    }
  } else if (key == "presence_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.presence_penalty, number(v, key));
  } else if (key == "frequency_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.frequency_penalty, number(v, key));
  } else if (key == "repetition_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.repetition_penalty, number(v, key));
  } else if (key == "logit_bias") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(p.logit_bias, logit_bias(v));
    }
  } else if (key == "min_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.min_tokens, integer(v, key));
  } else if (key == "max_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.max_tokens, integer(v, key));
  } else if (key == "stop") {
    VLLM_ASSIGN_OR_RETURN(p.stop, stop_strings(v));
  } else if (key == "stop_token_ids") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(p.stop_token_ids, token_ids(v, key));
    }
  } else if (key == "include_stop_str_in_output") {
    VLLM_ASSIGN_OR_RETURN(p.include_stop_str_in_output, boolean(v, key));
  } else if (key == "ignore_eos") {
    VLLM_ASSIGN_OR_RETURN(p.ignore_eos, boolean(v, key));
  } else if (key == "logprobs") {
    VLLM_ASSIGN_OR_RETURN(p.logprobs, optional_int32(v, key));
  } else if (key == "prompt_logprobs") {
    VLLM_ASSIGN_OR_RETURN(p.prompt_logprobs, optional_int32(v, key));
  } else if (key == "skip_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.skip_special_tokens, boolean(v, key));
  } else if (key == "spaces_between_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(p.spaces_between_special_tokens, boolean(v, key));
  } else if (key == "use_beam_search") {
    VLLM_ASSIGN_OR_RETURN(p.use_beam_search, boolean(v, key));
  } else if (key == "beam_width") {
    VLLM_ASSIGN_OR_RETURN(beam_width, optional_int32(v, key));
  } else if (key == "length_penalty") {
    VLLM_ASSIGN_OR_RETURN(p.length_penalty, number(v, key));
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults) {
  const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("not valid JSON");
  if (!j.is_object()) return invalid_argument("not a JSON object");
  BatchRequest r;
  r.params = defaults;
  std::optional<int64_t> best_of;
  std::optional<int32_t> beam_width;
  for (const auto& [key, value] : j.items()) {
    VLLM_ASSIGN_OR_RETURN(bool known, set_field(r, key, value, best_of, beam_width));
    if (!known) return invalid_argument("unknown field '" + key + "'");
  }
  const bool has_text = j.contains("prompt"), has_ids = j.contains("prompt_token_ids");
  if (!has_text && !has_ids) return invalid_argument("needs 'prompt' or 'prompt_token_ids'");
  if (has_text && has_ids) return invalid_argument("give 'prompt' or 'prompt_token_ids', not both");
  // beam_width is another name for n under beam search.
  if (beam_width) {
    if (j.contains("n") && r.params.n != *beam_width) return invalid_argument("beam_width and n differ");
    r.params.n = *beam_width;
  }
  if (best_of && *best_of != r.params.n) {
    return invalid_argument("best_of must be null or equal to n (" + std::to_string(r.params.n) + "), got " +
                            std::to_string(*best_of));
  }
  return r;
}

Result<std::vector<BatchRequest>> read_batch_requests(const std::string& path, const SamplingParams& defaults) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) return not_found("cannot open " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<BatchRequest> requests;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<BatchRequest> r = parse_batch_request(line, defaults);
    if (!r.is_ok()) return invalid_argument(path + " line " + std::to_string(number) + ": " + r.status().message());
    requests.push_back(std::move(r).value());
    requests.back().line_number = number;
  }
  return requests;
}

namespace {

// vLLM reports -inf as -9999.0, which JSON can carry.
double finite_logprob(float logprob) { return std::isinf(logprob) ? -9999.0 : logprob; }

// {"<token id>": logprob} for the chosen token and the top candidates.
OrderedJson position_json(const PositionLogprobs& p) {
  OrderedJson j = OrderedJson::object();
  j[std::to_string(p.chosen.token_id)] = finite_logprob(p.chosen.logprob);
  for (const TokenLogprob& t : p.top) j[std::to_string(t.token_id)] = finite_logprob(t.logprob);
  return j;
}

OrderedJson stop_reason_json(const StopReason& reason) {
  if (const auto* text = std::get_if<std::string>(&reason)) return *text;
  if (const auto* id = std::get_if<int32_t>(&reason)) return *id;
  return nullptr;
}

}  // namespace

OrderedJson batch_output_json(size_t index, const RequestOutput& output) {
  OrderedJson j;
  j["index"] = index;
  j["prompt_token_ids"] = output.prompt_token_ids;
  OrderedJson outputs = OrderedJson::array();
  for (const CompletionOutput& c : output.outputs) {
    OrderedJson o;
    o["index"] = c.index;
    o["text"] = c.text;
    o["token_ids"] = c.token_ids;
    o["cumulative_logprob"] = c.cumulative_logprob;
    if (c.logprobs) {
      OrderedJson positions = OrderedJson::array();
      for (const PositionLogprobs& p : *c.logprobs) positions.push_back(position_json(p));
      o["logprobs"] = std::move(positions);
    }
    o["finish_reason"] = c.finish_reason ? OrderedJson(finish_reason_name(*c.finish_reason)) : OrderedJson(nullptr);
    o["stop_reason"] = stop_reason_json(c.stop_reason);
    outputs.push_back(std::move(o));
  }
  j["outputs"] = std::move(outputs);
  if (output.prompt_logprobs) {
    OrderedJson positions = OrderedJson::array({nullptr});  // the first prompt token has no logprob
    for (const PositionLogprobs& p : *output.prompt_logprobs) positions.push_back(position_json(p));
    j["prompt_logprobs"] = std::move(positions);
  }
  return j;
}

}  // namespace vllm::cli
