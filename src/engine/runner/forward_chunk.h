// One sequence's share of a forward pass: tokens from a position on, the
// block table that addresses its keys and values, and how many trailing rows
// need logits.  ModelRunner flattens a list of them into one ForwardBatch.
#pragma once

#include <cstdint>
#include <span>

#include "engine/kv/kv_cache_manager.h"

namespace vllm {

struct ForwardChunk {
  RequestId request_id = 0;
  std::span<const int32_t> token_ids;        // known tokens computed in this pass
  std::span<const int32_t> draft_token_ids;  // then these guesses, to be verified
  int32_t num_computed_tokens = 0;           // position of token_ids[0] in the sequence
  int32_t num_prompt_tokens = 0;             // of the whole sequence
  std::span<const BlockId> block_table;      // covers num_computed_tokens + num_new_tokens() tokens
  int32_t num_logits = 0;                    // trailing rows whose logits are wanted
  int32_t lora_slot = -1;                    // the LoRA adapter slot its tokens compute with (Model::set_lora)

  int32_t num_draft_tokens() const { return static_cast<int32_t>(draft_token_ids.size()); }
  int32_t num_new_tokens() const { return static_cast<int32_t>(token_ids.size()) + num_draft_tokens(); }
  // The i-th token computed in this pass, draft or not.
  int32_t new_token(int32_t i) const {
    const auto n = static_cast<int32_t>(token_ids.size());
    return i < n ? token_ids[static_cast<size_t>(i)] : draft_token_ids[static_cast<size_t>(i - n)];
  }
};

}  // namespace vllm
