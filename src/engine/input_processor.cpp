#include "engine/input_processor.h"

#include <algorithm>

namespace vllm {
namespace {

Status check_logprobs_limit(const char* field, const std::optional<int32_t>& value, int32_t max_logprobs) {
  if (value && *value > max_logprobs) {
    return invalid_argument(std::string(field) + " must be at most " + std::to_string(max_logprobs) +
                            " (--max-logprobs), got " + std::to_string(*value) + ".")
        .with_param(field);
  }
  return Status::ok();
}

}  // namespace

Result<int32_t> truncated_prompt_length(int32_t truncate_prompt_tokens, int32_t max_model_len) {
  if (truncate_prompt_tokens == -1) return max_model_len;
  if (truncate_prompt_tokens < 1 || truncate_prompt_tokens > max_model_len) {
    return invalid_argument("truncate_prompt_tokens must be -1 or in [1, " + std::to_string(max_model_len) +
                            "] (max_model_len), got " + std::to_string(truncate_prompt_tokens))
        .with_param("truncate_prompt_tokens");
  }
  return truncate_prompt_tokens;
}

Result<ProcessedRequest> InputProcessor::process(const PromptInput& prompt, const SamplingParams& params) const {
  ProcessedRequest r;
  r.prompt_token_ids = prompt.token_ids ? *prompt.token_ids : tokenizer_.encode(prompt.text, prompt.add_special_tokens);
  const int32_t max_model_len = core_.config().config.scheduler.max_model_len;
  if (prompt.truncate_prompt_tokens) {
    VLLM_ASSIGN_OR_RETURN(const int32_t keep, truncated_prompt_length(*prompt.truncate_prompt_tokens, max_model_len));
    if (r.prompt_token_ids.size() > static_cast<size_t>(keep)) {
      r.prompt_token_ids.erase(r.prompt_token_ids.begin(), r.prompt_token_ids.end() - keep);
    }
  }
  r.params = params;
  if (params.max_tokens_from_context) {
    r.params.max_tokens = std::max<int64_t>(1, max_model_len - static_cast<int64_t>(r.prompt_token_ids.size()));
  }
  r.cache_salt = prompt.cache_salt;
  VLLM_RETURN_IF_ERROR(check_logprobs_limit("logprobs", params.logprobs, max_logprobs_));
  VLLM_RETURN_IF_ERROR(check_logprobs_limit("prompt_logprobs", params.prompt_logprobs, max_logprobs_));
  if (params.use_beam_search && params.output_kind != OutputKind::kFinalOnly) {
    return invalid_argument("beam search cannot stream: its beams are only known at the end.");
  }
  VLLM_RETURN_IF_ERROR(core_.check_request(r.prompt_token_ids, r.params));
  return r;
}

}  // namespace vllm
