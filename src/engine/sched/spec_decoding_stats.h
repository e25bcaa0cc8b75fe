// Speculative decoding's counters, with the meaning of vLLM's
// vllm:spec_decode_* metrics: one draft per request and step that had draft
// tokens scheduled, counted before stop conditions trim the output.
#pragma once

#include <cstdint>
#include <vector>

namespace vllm {

struct SpecDecodingStats {
  int64_t num_drafts = 0;
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // [position]: drafts whose token at that position was accepted.
  std::vector<int64_t> num_accepted_tokens_per_pos;

  void observe_draft(int32_t num_draft_tokens_in_draft, int32_t num_accepted) {
    ++num_drafts;
    num_draft_tokens += num_draft_tokens_in_draft;
    num_accepted_tokens += num_accepted;
    if (num_accepted_tokens_per_pos.size() < static_cast<size_t>(num_draft_tokens_in_draft)) {
      num_accepted_tokens_per_pos.resize(static_cast<size_t>(num_draft_tokens_in_draft), 0);
    }
    for (int32_t i = 0; i < num_accepted; ++i) ++num_accepted_tokens_per_pos[static_cast<size_t>(i)];
  }
  // Another engine's counts added (data-parallel replicas' together).
  SpecDecodingStats& operator+=(const SpecDecodingStats& o) {
    num_drafts += o.num_drafts;
    num_draft_tokens += o.num_draft_tokens;
    num_accepted_tokens += o.num_accepted_tokens;
    if (num_accepted_tokens_per_pos.size() < o.num_accepted_tokens_per_pos.size()) {
      num_accepted_tokens_per_pos.resize(o.num_accepted_tokens_per_pos.size(), 0);
    }
    for (size_t i = 0; i < o.num_accepted_tokens_per_pos.size(); ++i) {
      num_accepted_tokens_per_pos[i] += o.num_accepted_tokens_per_pos[i];
    }
    return *this;
  }
  // Accepted draft tokens over drafted ones; 0 before any draft.
  double acceptance_rate() const {
    return num_draft_tokens > 0 ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens)
                                : 0.0;
  }
  // Tokens a verification step yields on average: the accepted drafts and one of the target's own.
  double mean_acceptance_length() const {
    return num_drafts > 0 ? 1.0 + static_cast<double>(num_accepted_tokens) / static_cast<double>(num_drafts) : 0.0;
  }
};

}  // namespace vllm
