// The input of one forward pass: a flattened batch of tokens from one or more
// sequences (prefill chunks and decode tokens mixed), as vLLM V1 lays it out.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace vllm {

struct ForwardBatch {
  const int32_t* token_ids = nullptr;    // [num_tokens]
  const int32_t* positions = nullptr;    // [num_tokens]: index of the token in its sequence
  const int32_t* prompt_lens = nullptr;  // [num_tokens]: how many prompt tokens its sequence has
  int64_t num_tokens = 0;
  kernels::AttentionMetadata attention;     // sequences, block tables, slot mapping
  const int32_t* logits_indices = nullptr;  // [num_logits]: rows whose logits are wanted
  int64_t num_logits = 0;
  // Speculative decoding's EAGLE heads read a hidden state of their target's
  // beside each token: [num_tokens, the target's hidden_size].
  const float* input_hidden = nullptr;
  // When set, every token's final (normed) hidden state is written here too,
  // [num_tokens, hidden_size]: what an EAGLE head reads of its target.
  float* hidden_states_out = nullptr;
};

// Per-layer views of the paged KV cache the forward pass reads and writes.
struct KVCacheView {
  std::vector<kernels::PagedKVLayer> layers;  // [num_hidden_layers]
};

}  // namespace vllm
