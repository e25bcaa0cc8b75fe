#include "server/completion_request.h"

#include "api/json_fields.h"
#include "api/sampling_fields.h"

namespace vllm::server {
namespace {

Status bad(const std::string& message, const std::string& param) { return invalid_argument(message).with_param(param); }

// "prompt": "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
Result<std::vector<PromptInput>> read_prompts(const Json& v) {
  std::vector<PromptInput> prompts;
  if (v.is_string()) {
    prompts.push_back(PromptInput::from_text(v.get<std::string>()));
    return prompts;
  }
  if (!v.is_array() || v.empty()) return bad("prompt must be a string, a list of strings or of token ids", "prompt");
  if (v[0].is_number_integer()) {
    VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, api::read_token_ids(v, "prompt"));
    prompts.push_back(PromptInput::from_token_ids(std::move(ids)));
    return prompts;
  }
  for (const Json& p : v) {
    if (p.is_string()) {
      prompts.push_back(PromptInput::from_text(p.get<std::string>()));
    } else if (p.is_array()) {
      VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, api::read_token_ids(p, "prompt"));
      if (ids.empty()) return bad("a token-id prompt must not be empty", "prompt");
      prompts.push_back(PromptInput::from_token_ids(std::move(ids)));
    } else {
      return bad("prompt must be a string, a list of strings or of token ids", "prompt");
    }
  }
  return prompts;
}

// Fields of the endpoint itself rather than of sampling; false if `key` is not one.
Result<bool> read_request_field(CompletionRequest& r, const std::string& key, const Json& v, bool& add_special_tokens,
                                std::string& cache_salt) {
  if (key == "model") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.model, api::read_string(v, key));
    }
  } else if (key == "prompt") {
    VLLM_ASSIGN_OR_RETURN(r.prompts, read_prompts(v));
  } else if (key == "stream") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.stream, api::read_bool(v, key));
    }
  } else if (key == "stream_options") {
    if (v.is_null()) return true;
    if (!v.is_object()) return bad("field 'stream_options' must be an object", key);
    if (v.contains("include_usage")) {
      VLLM_ASSIGN_OR_RETURN(r.include_usage, api::read_bool(v["include_usage"], key));
    }
  } else if (key == "echo") {
    VLLM_ASSIGN_OR_RETURN(r.echo, api::read_bool(v, key));
  } else if (key == "add_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(add_special_tokens, api::read_bool(v, key));
  } else if (key == "cache_salt") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(cache_salt, api::read_string(v, key));
    }
  } else if (key == "suffix") {
    if (!v.is_null()) return bad("suffix is not currently supported", key);
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<CompletionRequest> parse_completion_request(const std::string& body) {
  const Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("the request body is not valid JSON", "");
  if (!j.is_object()) return bad("the request body must be a JSON object", "");
  CompletionRequest r;
  api::SamplingFieldExtras extras;
  bool add_special_tokens = true;
  std::string cache_salt;
  for (const auto& [key, value] : j.items()) {
    VLLM_ASSIGN_OR_RETURN(bool known, read_request_field(r, key, value, add_special_tokens, cache_salt));
    if (known) continue;
    // Anything else that is not a sampling field is accepted and ignored (API.md §1).
    VLLM_ASSIGN_OR_RETURN(known, api::read_sampling_field(r.params, extras, key, value));
  }
  if (!j.contains("prompt")) return bad("prompt is required", "prompt");
  VLLM_RETURN_IF_ERROR(api::apply_sampling_extras(r.params, extras));
  if (j.contains("stream_options") && !j["stream_options"].is_null() && !r.stream) {
    return bad("stream_options is only allowed with stream: true", "stream_options");
  }
  if (r.stream && r.params.prompt_logprobs) return bad("prompt_logprobs is not allowed with stream", "prompt_logprobs");
  for (PromptInput& p : r.prompts) {
    p.add_special_tokens = add_special_tokens;
    p.cache_salt = cache_salt;
  }
  r.params.output_kind = r.stream ? OutputKind::kDelta : OutputKind::kFinalOnly;
  return r;
}

}  // namespace vllm::server
