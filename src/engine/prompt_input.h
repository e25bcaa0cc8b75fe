// A request's prompt as callers give it to the engine (the input processor
// turns it into token ids).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vllm {

// A prompt as text (tokenised with special tokens, e.g. BOS) or as token ids.
struct PromptInput {
  std::string text;
  std::optional<std::vector<int32_t>> token_ids;  // wins over text when set
  std::string cache_salt;                         // prefix-cache isolation: only equal salts share blocks
  std::string lora_name;                          // the LoRA adapter it runs with; empty: the base model
  bool add_special_tokens = true;                 // text only: e.g. BOS, as the tokenizer's post-processor says
  // Keep only the last k prompt tokens (vLLM's truncate_prompt_tokens); -1: the context length.
  std::optional<int32_t> truncate_prompt_tokens = std::nullopt;

  static PromptInput from_text(std::string text) { return {std::move(text), std::nullopt, {}, {}, true}; }
  static PromptInput from_token_ids(std::vector<int32_t> ids) { return {{}, std::move(ids), {}, {}, true}; }
};

}  // namespace vllm
