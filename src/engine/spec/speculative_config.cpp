#include "engine/spec/speculative_config.h"

#include <string>

namespace vllm {

// vLLM's rejection sampler verifies at most 128 drafts per request (MAX_SPEC_LEN).
constexpr int32_t kMaxSpeculativeTokens = 128;

Status SpeculativeConfig::validate() const {
  if (num_speculative_tokens < 1 || num_speculative_tokens > kMaxSpeculativeTokens) {
    return invalid_argument("num_speculative_tokens must be in [1, " + std::to_string(kMaxSpeculativeTokens) +
                            "], got " + std::to_string(num_speculative_tokens));
  }
  if (method == SpeculativeMethod::kDraftModel && model.empty()) {
    return invalid_argument("a draft_model needs the draft model's path (model)");
  }
  if ((method == SpeculativeMethod::kEagle || method == SpeculativeMethod::kEagle3) && model.empty()) {
    return invalid_argument("an EAGLE proposer needs the head's path (model)");
  }
  if (prompt_lookup_min < 1 || prompt_lookup_max < 1) {
    return invalid_argument("prompt_lookup_min and prompt_lookup_max must be at least 1");
  }
  if (prompt_lookup_min > prompt_lookup_max) {
    return invalid_argument("prompt_lookup_min (" + std::to_string(prompt_lookup_min) +
                            ") must not be larger than prompt_lookup_max (" + std::to_string(prompt_lookup_max) + ")");
  }
  if (disable_by_batch_size != 0 && disable_by_batch_size < 2) {
    return invalid_argument("disable_by_batch_size must be at least 2");
  }
  return Status::ok();
}

}  // namespace vllm
