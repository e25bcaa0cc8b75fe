// Speculative decoding's settings: what `--speculative-config` gives (vLLM's
// SpeculativeConfig keys), checked by validate().
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace vllm {

enum class SpeculativeMethod {
  kNgram,       // prompt lookup: drafts copied from where the sequence's last tokens occurred before
  kDraftModel,  // a smaller model of the same vocabulary, run greedily k tokens ahead
  kEagle,       // an EAGLE head: one decoder layer over the target's hidden states, run greedily k tokens ahead
  kEagle3,      // an EAGLE-3 head: the same over three of the target's layers' hidden states, its own vocabulary
};

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::kNgram;
  int32_t num_speculative_tokens = 0;  // k: drafts per request and step
  std::string model;  // draft_model: the draft model's directory or GGUF file; eagle, eagle3: the head's
  // ngram: the longest suffix of the sequence, of prompt_lookup_min to
  // prompt_lookup_max tokens, found earlier in it (vLLM's default 5 and 5).
  int32_t prompt_lookup_min = 5;
  int32_t prompt_lookup_max = 5;
  // No drafts for a step when at least this many requests run: a large
  // batch is no longer bound by reading the weights, and rejected drafts
  // cost it compute (vLLM's key, which has no default there: here 8, as
  // measured in docs/PERFORMANCE.md); 0: drafts at any batch size.
  int32_t disable_by_batch_size = 8;

  Status validate() const;
  // A proposer that runs a model of its own (draft_model, eagle): its KV
  // cache shares the target's blocks, k lookahead slots past each chunk.
  bool runs_a_model() const { return method != SpeculativeMethod::kNgram; }
};

}  // namespace vllm
