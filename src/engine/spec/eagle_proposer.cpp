#include "engine/spec/eagle_proposer.h"

#include <algorithm>

namespace vllm {

EagleProposer::EagleProposer(Model& head, ThreadPool& pool, const KVCacheManager& kv_cache, const KVCacheShape& shape,
                             int32_t num_blocks, bool resident_kv_cache, int64_t target_hidden_width)
    : kv_cache_(kv_cache),
      runner_(head, pool, shape, num_blocks, resident_kv_cache),
      vocab_size_(static_cast<int32_t>(head.config().vocab_size)),
      hidden_size_(head.config().hidden_size),
      target_hidden_width_(target_hidden_width),
      max_context_length_(static_cast<int32_t>(std::min<int64_t>(head.config().max_context_length(), INT32_MAX))) {}

void EagleProposer::propose(std::span<const DraftRequest> batch) {
  passes_.clear();
  chunks_.clear();
  input_hidden_.clear();
  const auto h = static_cast<size_t>(hidden_size_);
  const auto target_h = static_cast<size_t>(target_hidden_width_);
  // The first pass: guessing requests first (logits row i is passes_[i]), then those only kept up.
  for (const bool guessing : {true, false}) {
    for (const DraftRequest& d : batch) {
      if (d.target_hidden.empty()) continue;  // no new hidden states: its cache is as far as it can be
      Request& r = *d.request;
      // Rows first .. end - 1: the positions the target computed and kept, within the head's context.
      const int32_t first = d.target_first_position;
      const int32_t end = std::min(r.num_computed_tokens, max_context_length_);
      // Guess j comes from the row at position num_tokens + j - 3.
      const int32_t max_drafts =
          end == r.num_tokens() - 1 ? std::min(d.max_drafts, max_context_length_ - r.num_tokens() + 2) : 0;
      if ((max_drafts > 0) != guessing || end <= first) continue;
      const std::span<const int32_t> next_tokens =
          std::span<const int32_t>(r.all_token_ids)
              .subspan(static_cast<size_t>(first) + 1, static_cast<size_t>(end - first));
      chunks_.push_back(draft_chunk(r, kv_cache_, first, next_tokens, guessing));
      input_hidden_.insert(
          input_hidden_.end(), d.target_hidden.begin(),
          d.target_hidden.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(end - first) * target_h));
      if (!guessing) continue;
      r.draft_token_ids.reserve(static_cast<size_t>(max_drafts));  // later passes' spans point into it
      passes_.push_back({&r, max_drafts});
    }
  }
  for (bool first_pass = true; !chunks_.empty(); first_pass = false) {
    const std::span<const float> logits = runner_.execute(chunks_, input_hidden_.data(), !first_pass);
    const std::span<const float> outputs = runner_.logits_hidden_states();
    // The next pass: the last guess of each request that wants more, with the head's output as its hidden state.
    next_hidden_.clear();
    size_t kept = 0;
    for (size_t i = 0; i < passes_.size(); ++i) {
      Request& r = *passes_[i].request;
      const float* row = logits.data() + i * static_cast<size_t>(vocab_size_);
      r.draft_token_ids.push_back(static_cast<int32_t>(std::max_element(row, row + vocab_size_) - row));
      if (static_cast<int32_t>(r.draft_token_ids.size()) == passes_[i].max_drafts) continue;
      passes_[kept] = passes_[i];
      chunks_[kept] = chunks_[i];  // the same request, block table and prompt length
      chunks_[kept].token_ids = std::span<const int32_t>(&r.draft_token_ids.back(), 1);
      chunks_[kept].num_computed_tokens = r.num_tokens() + static_cast<int32_t>(r.draft_token_ids.size()) - 2;
      next_hidden_.insert(next_hidden_.end(), outputs.begin() + static_cast<ptrdiff_t>(i * h),
                          outputs.begin() + static_cast<ptrdiff_t>((i + 1) * h));
      ++kept;
    }
    passes_.resize(kept);
    chunks_.resize(kept);
    input_hidden_.swap(next_hidden_);
  }
}

}  // namespace vllm
