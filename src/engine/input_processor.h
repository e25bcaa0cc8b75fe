// What every request goes through once, before the engine sees it (vLLM's
// InputProcessor): its prompt tokenised (text) and truncated
// (truncate_prompt_tokens), max_tokens defaulted to the rest of the context
// where the request left it to us, and every check against the model and
// the engine's limits, so that a bad request is refused with one clear error
// on the caller's thread (the server's input workers, never its I/O threads,
// never the engine thread).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine_core.h"
#include "engine/lora/lora_registry.h"
#include "engine/prompt_input.h"
#include "structured/structured_output.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

// How many prompt tokens truncate_prompt_tokens keeps (-1: max_model_len),
// or the error naming the field when it is out of range.
Result<int32_t> truncated_prompt_length(int32_t truncate_prompt_tokens, int32_t max_model_len);

// A request ready for the core: tokenised and checked.
struct ProcessedRequest {
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  std::string cache_salt;
  std::shared_ptr<const LoraAdapter> lora;  // the adapter PromptInput::lora_name names; null: the base model
};

class InputProcessor {
 public:
  // `core` checks prompts and parameters against the model and the KV
  // cache; `loras` finds the adapters prompts name (null: LoRA is off).
  InputProcessor(const Tokenizer& tokenizer, const EngineCore& core, LoraRegistry* loras, int32_t max_logprobs)
      : tokenizer_(tokenizer), core_(core), loras_(loras), max_logprobs_(max_logprobs) {}

  // Thread-safe: reads only what does not change after start-up, and the
  // grammar cache, which locks.  A structured output's grammar is compiled
  // here, on the caller's thread, never the engine's.
  Result<ProcessedRequest> process(const PromptInput& prompt, const SamplingParams& params) const;

 private:
  // Made on first use: the vocabulary's bytes take a pass over the tokenizer.
  structured::GrammarCache& grammars() const;

  mutable std::once_flag grammars_made_;
  mutable std::unique_ptr<structured::GrammarCache> grammars_;
  const Tokenizer& tokenizer_;
  const EngineCore& core_;
  LoraRegistry* loras_;
  int32_t max_logprobs_;
};

}  // namespace vllm
