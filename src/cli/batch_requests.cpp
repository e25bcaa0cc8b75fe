#include "cli/batch_requests.h"

#include <fstream>
#include <iostream>

#include "api/json_fields.h"
#include "api/output_json.h"
#include "api/sampling_fields.h"
#include "api/structured_output_fields.h"

namespace vllm::cli {

namespace {

// The prompt, cache_salt and lora fields; false if `key` is none of them.
Result<bool> read_prompt_field(PromptInput& prompt, const std::string& key, const Json& v) {
  if (key == "prompt") {
    VLLM_ASSIGN_OR_RETURN(prompt.text, api::read_string(v, key));
  } else if (key == "prompt_token_ids") {
    VLLM_ASSIGN_OR_RETURN(prompt.token_ids, api::read_token_ids(v, key));
  } else if (key == "cache_salt") {
    VLLM_ASSIGN_OR_RETURN(prompt.cache_salt, api::read_string(v, key));
  } else if (key == "lora") {  // a --lora-modules name; absent: the base model
    VLLM_ASSIGN_OR_RETURN(prompt.lora_name, api::read_string(v, key));
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults) {
  VLLM_ASSIGN_OR_RETURN(const Json j, api::parse_json_object(line));
  BatchRequest r;
  r.params = defaults;
  api::SamplingFieldExtras extras;
  for (const auto& [key, value] : j.items()) {
    VLLM_ASSIGN_OR_RETURN(bool prompt_field, read_prompt_field(r.prompt, key, value));
    if (prompt_field) continue;
    VLLM_ASSIGN_OR_RETURN(bool sampling_field, api::read_sampling_field(r.params, extras, key, value));
    if (!sampling_field) return invalid_argument("unknown field '" + key + "'");
  }
  const bool has_text = j.contains("prompt"), has_ids = j.contains("prompt_token_ids");
  if (!has_text && !has_ids) return invalid_argument("needs 'prompt' or 'prompt_token_ids'");
  if (has_text && has_ids) return invalid_argument("give 'prompt' or 'prompt_token_ids', not both");
  VLLM_RETURN_IF_ERROR(api::apply_sampling_extras(r.params, extras));
  api::keep_schema_key_order(line, r.params.structured_outputs);
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

// {"<token id>": logprob} for the chosen token and the top candidates.
OrderedJson position_json(const PositionLogprobs& p) {
  OrderedJson j = OrderedJson::object();
  j[std::to_string(p.chosen.token_id)] = api::reported_logprob(p.chosen.logprob);
  for (const TokenLogprob& t : p.top) j[std::to_string(t.token_id)] = api::reported_logprob(t.logprob);
  return j;
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
    o["finish_reason"] = api::finish_reason_json(c.finish_reason);
    o["stop_reason"] = api::stop_reason_json(c.stop_reason);
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
