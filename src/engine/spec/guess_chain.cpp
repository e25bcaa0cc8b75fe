#include "engine/spec/guess_chain.h"

#include <algorithm>

namespace vllm {

void GuessChain::clear() {
  passes_.clear();
  chunks_.clear();
}

void GuessChain::add(DraftRequest& r, int32_t first_position, std::span<const int32_t> tokens, int32_t max_drafts) {
  ForwardChunk& chunk = chunks_.emplace_back();
  chunk.request_id = r.id;
  chunk.token_ids = tokens;
  chunk.num_computed_tokens = first_position;
  chunk.num_prompt_tokens = r.num_prompt_tokens;
  chunk.block_table = r.block_table;
  const bool guesses = max_drafts > 0;
  chunk.num_logits = guesses ? 1 : 0;
  if (!guesses) return;
  r.drafts.reserve(static_cast<size_t>(max_drafts));  // later passes' spans point into it
  passes_.push_back({&r, max_drafts});
}

std::span<const size_t> GuessChain::advance(std::span<const float> logits, int32_t vocab_size,
                                            int32_t position_offset) {
  kept_rows_.clear();
  for (size_t i = 0; i < passes_.size(); ++i) {
    DraftRequest& r = *passes_[i].request;
    const float* row = logits.data() + i * static_cast<size_t>(vocab_size);
    r.drafts.push_back(static_cast<int32_t>(std::max_element(row, row + vocab_size) - row));
    const auto guesses = static_cast<int32_t>(r.drafts.size());
    if (guesses == passes_[i].max_drafts) continue;
    const size_t kept = kept_rows_.size();
    passes_[kept] = passes_[i];
    chunks_[kept] = chunks_[i];  // the same request, block table and prompt length
    chunks_[kept].token_ids = std::span<const int32_t>(&r.drafts.back(), 1);
    chunks_[kept].num_computed_tokens = r.num_tokens() - 1 + guesses + position_offset;
    kept_rows_.push_back(i);
  }
  passes_.resize(kept_rows_.size());
  chunks_.resize(kept_rows_.size());
  return kept_rows_;
}

}  // namespace vllm
