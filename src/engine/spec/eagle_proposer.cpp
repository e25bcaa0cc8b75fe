#include "engine/spec/eagle_proposer.h"

#include <algorithm>

namespace vllm {

EagleProposer::EagleProposer(Model& head, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
                             bool resident_kv_cache, int64_t target_hidden_width)
    : runner_(head, pool, shape, num_blocks, resident_kv_cache),
      vocab_size_(static_cast<int32_t>(head.config().vocab_size)),
      hidden_size_(head.config().hidden_size),
      target_hidden_width_(target_hidden_width),
      max_context_length_(static_cast<int32_t>(std::min<int64_t>(head.config().max_context_length(), INT32_MAX))) {}

void EagleProposer::propose(std::span<DraftRequest> batch) {
  chain_.clear();
  input_hidden_.clear();
  const auto h = static_cast<size_t>(hidden_size_);
  const auto target_h = static_cast<size_t>(target_hidden_width_);
  // The first pass: guessing requests first, then those only kept up.
  for (const bool guessing : {true, false}) {
    for (DraftRequest& r : batch) {
      if (r.target_hidden.empty()) continue;  // no new hidden states: its cache is as far as it can be
      // Rows first .. end - 1: the positions the target computed and kept, within the head's context.
      const int32_t first = r.target_first_position;
      const int32_t end = std::min(r.num_computed_tokens, max_context_length_);
      // Guess j comes from the row at position num_tokens + j - 3.
      const int32_t max_drafts =
          end == r.num_tokens() - 1 ? std::min(r.max_drafts, max_context_length_ - r.num_tokens() + 2) : 0;
      if ((max_drafts > 0) != guessing || end <= first) continue;
      chain_.add(r, first, r.token_ids.subspan(static_cast<size_t>(first) + 1, static_cast<size_t>(end - first)),
                 max_drafts);
      input_hidden_.insert(
          input_hidden_.end(), r.target_hidden.begin(),
          r.target_hidden.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(end - first) * target_h));
    }
  }
  // A guess's row sits at the position before it, with the head's output for that position.
  for (bool first_pass = true; !chain_.done(); first_pass = false) {
    const std::span<const float> logits = runner_.execute(chain_.chunks(), input_hidden_.data(), !first_pass);
    const std::span<const float> outputs = runner_.logits_hidden_states();
    next_hidden_.clear();
    for (const size_t row : chain_.advance(logits, vocab_size_, -1)) {
      next_hidden_.insert(next_hidden_.end(), outputs.begin() + static_cast<ptrdiff_t>(row * h),
                          outputs.begin() + static_cast<ptrdiff_t>((row + 1) * h));
    }
    input_hidden_.swap(next_hidden_);
  }
}

}  // namespace vllm
