// The input of one forward pass: a flattened batch of tokens from one or more
// sequences (prefill chunks and decode tokens mixed), as vLLM V1 lays it out.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace vllm {

// Which hidden states a forward pass writes out for every token, for an
// EAGLE head that reads them: the final (normed) one when `layers` is empty
// (EAGLE), else the residual stream entering each of these layers,
// concatenated in this order (EAGLE-3's auxiliary hidden states).
struct HiddenStateTap {
  std::vector<int32_t> layers;
  int64_t width(int64_t hidden_size) const {
    return static_cast<int64_t>(layers.empty() ? 1 : layers.size()) * hidden_size;
  }
};

struct ForwardBatch {
  const int32_t* token_ids = nullptr;    // [num_tokens]
  const int32_t* positions = nullptr;    // [num_tokens]: index of the token in its sequence
  const int32_t* prompt_lens = nullptr;  // [num_tokens]: how many prompt tokens its sequence has
  int64_t num_tokens = 0;
  kernels::AttentionMetadata attention;     // sequences, block tables, slot mapping
  const int32_t* logits_indices = nullptr;  // [num_logits]: rows whose logits are wanted
  int64_t num_logits = 0;
  // [num_tokens]: each token's LoRA adapter slot (Model::set_lora), -1 for
  // none; null when no token has one.
  const int32_t* lora_slots = nullptr;
  // Speculative decoding's EAGLE heads read a hidden state beside each token:
  // their target's (HiddenStateTap: [num_tokens, its width]), or in the passes
  // after the first their own output for the previous position
  // ([num_tokens, hidden_size], input_hidden_from_head).
  const float* input_hidden = nullptr;
  bool input_hidden_from_head = false;
  // When set, what `tap` names of every token is written here too,
  // [num_tokens, tap->width(hidden_size)]: what an EAGLE head reads of its target.
  float* hidden_states_out = nullptr;
  const HiddenStateTap* tap = nullptr;
};

// Per-layer views of the paged KV cache the forward pass reads and writes.
struct KVCacheView {
  std::vector<kernels::PagedKVLayer> layers;  // [num_hidden_layers]
};

}  // namespace vllm
