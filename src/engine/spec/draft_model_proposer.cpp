#include "engine/spec/draft_model_proposer.h"

#include <algorithm>

namespace vllm {

DraftModelProposer::DraftModelProposer(Model& draft, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
                                       bool resident_kv_cache)
    : runner_(draft, pool, shape, num_blocks, resident_kv_cache),
      vocab_size_(static_cast<int32_t>(draft.config().vocab_size)),
      max_context_length_(static_cast<int32_t>(std::min<int64_t>(draft.config().max_context_length(), INT32_MAX))) {}

void DraftModelProposer::propose(std::span<DraftRequest> batch) {
  chain_.clear();
  // The first pass: guessing requests first, then those only kept up.
  for (const bool guessing : {true, false}) {
    for (DraftRequest& r : batch) {
      // Guesses go at positions num_tokens .. num_tokens + max_drafts - 1.
      const int32_t max_drafts = std::min(r.max_drafts, max_context_length_ - r.num_tokens());
      if ((max_drafts > 0) != guessing) continue;
      // A guessing request runs its unseen tokens up to its last one (the last
      // one again when nothing else is new: the request was not scheduled
      // last step); the others, those the target computed, within the draft's context.
      int32_t& num_draft_kv_tokens = *r.num_draft_kv_tokens;
      const int32_t first = guessing ? std::min(num_draft_kv_tokens, r.num_tokens() - 1) : num_draft_kv_tokens;
      const int32_t end = guessing ? r.num_tokens() : std::min(r.num_computed_tokens, max_context_length_);
      if (end <= first) continue;
      chain_.add(r, first, r.token_ids.subspan(static_cast<size_t>(first), static_cast<size_t>(end - first)),
                 max_drafts);
      num_draft_kv_tokens = end;
    }
  }
  // Each guess's keys and values go in a lookahead slot at its own position; its row guesses the next.
  while (!chain_.done()) chain_.advance(runner_.execute(chain_.chunks()), vocab_size_, 0);
}

}  // namespace vllm
