#include "cli/batch_requests.h"

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

Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults) {
  const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("not valid JSON");
  if (!j.is_object()) return invalid_argument("not a JSON object");
  BatchRequest r;
  r.params = defaults;
  bool has_prompt = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "prompt") {
      if (!value.is_string()) return invalid_argument("field 'prompt' must be a string");
      r.prompt.text = value.get<std::string>();
      has_prompt = true;
    } else if (key == "prompt_token_ids") {
      VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                            field_as<std::vector<int32_t>>(value, key, "an array of token ids"));
      r.prompt.token_ids = std::move(ids);
      has_prompt = true;
    } else if (key == "max_tokens") {
      if (!value.is_number_integer()) return invalid_argument("field 'max_tokens' must be an integer");
      r.params.max_tokens = value.get<int64_t>();
    } else if (key == "temperature") {
      if (!value.is_number()) return invalid_argument("field 'temperature' must be a number");
      r.params.temperature = value.get<double>();
    } else if (key == "seed") {
      if (value.is_null()) {
        r.params.seed.reset();
      } else {
        if (!value.is_number_integer()) return invalid_argument("field 'seed' must be an integer");
        r.params.seed = static_cast<uint64_t>(value.get<int64_t>());
      }
    } else if (key == "ignore_eos") {
      if (!value.is_boolean()) return invalid_argument("field 'ignore_eos' must be true or false");
      r.params.ignore_eos = value.get<bool>();
    } else if (key == "cache_salt") {
      if (!value.is_string()) return invalid_argument("field 'cache_salt' must be a string");
      r.prompt.cache_salt = value.get<std::string>();
    } else {
      return invalid_argument("unknown field '" + key + "'");
    }
  }
  if (!has_prompt) return invalid_argument("needs 'prompt' or 'prompt_token_ids'");
  if (j.contains("prompt") && j.contains("prompt_token_ids")) {
    return invalid_argument("give 'prompt' or 'prompt_token_ids', not both");
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
    o["finish_reason"] = c.finish_reason ? OrderedJson(finish_reason_name(*c.finish_reason)) : OrderedJson(nullptr);
    outputs.push_back(std::move(o));
  }
  j["outputs"] = std::move(outputs);
  return j;
}

}  // namespace vllm::cli
