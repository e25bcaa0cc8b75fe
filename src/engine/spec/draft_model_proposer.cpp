#include "engine/spec/draft_model_proposer.h"

#include <algorithm>

namespace vllm {

DraftModelProposer::DraftModelProposer(Model& draft, ThreadPool& pool, const KVCacheManager& kv_cache,
                                       const KVCacheShape& shape, int32_t num_blocks, bool resident_kv_cache)
    : kv_cache_(kv_cache),
      runner_(draft, pool, shape, num_blocks, resident_kv_cache),
      vocab_size_(static_cast<int32_t>(draft.config().vocab_size)),
      max_context_length_(static_cast<int32_t>(std::min<int64_t>(draft.config().max_context_length(), INT32_MAX))) {}

void DraftModelProposer::propose(std::span<const DraftRequest> batch) {
  passes_.clear();
  chunks_.clear();
  // The first pass: guessing requests first (logits row i is passes_[i]), then those only kept up.
  for (const bool guessing : {true, false}) {
    for (const DraftRequest& d : batch) {
      Request& r = *d.request;
      // Guesses go at positions num_tokens .. num_tokens + max_drafts - 1.
      const int32_t max_drafts = std::min(d.max_drafts, max_context_length_ - r.num_tokens());
      if ((max_drafts > 0) != guessing) continue;
      // A guessing request runs its unseen tokens up to its last one (the last
      // one again when nothing else is new: the request was not scheduled
      // last step); the others, those the target computed, within the draft's context.
      const int32_t first = guessing ? std::min(r.num_draft_kv_tokens, r.num_tokens() - 1) : r.num_draft_kv_tokens;
      const int32_t end = guessing ? r.num_tokens() : std::min(r.num_computed_tokens, max_context_length_);
      if (end <= first) continue;
      const std::span<const int32_t> unseen =
          std::span<const int32_t>(r.all_token_ids)
              .subspan(static_cast<size_t>(first), static_cast<size_t>(end - first));
      chunks_.push_back(draft_chunk(r, kv_cache_, first, unseen, guessing));
      r.num_draft_kv_tokens = end;
      if (!guessing) continue;
      r.draft_token_ids.reserve(static_cast<size_t>(max_drafts));  // later passes' spans point into it
      passes_.push_back({&r, max_drafts});
    }
  }
  while (!chunks_.empty()) {
    const std::span<const float> logits = runner_.execute(chunks_);
    // The next pass: one token, the last guess, of each request that wants more.
    size_t kept = 0;
    for (size_t i = 0; i < passes_.size(); ++i) {
      Request& r = *passes_[i].request;
      const float* row = logits.data() + i * static_cast<size_t>(vocab_size_);
      r.draft_token_ids.push_back(static_cast<int32_t>(std::max_element(row, row + vocab_size_) - row));
      if (static_cast<int32_t>(r.draft_token_ids.size()) == passes_[i].max_drafts) continue;
      // The guess's keys and values go in a lookahead slot; its row guesses the next.
      const int32_t position = r.num_tokens() + static_cast<int32_t>(r.draft_token_ids.size()) - 1;
      passes_[kept] = passes_[i];
      chunks_[kept] = chunks_[i];  // the same request, block table and prompt length
      chunks_[kept].token_ids = std::span<const int32_t>(&r.draft_token_ids.back(), 1);
      chunks_[kept].num_computed_tokens = position;
      ++kept;
    }
    passes_.resize(kept);
    chunks_.resize(kept);
  }
}

}  // namespace vllm
