#include "engine/spec/ngram_proposer.h"

#include <algorithm>

namespace vllm {

std::vector<int32_t> ngram_drafts(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t k) {
  const auto len = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(max_n, len - 1); n >= min_n; --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    // An occurrence at i < len - n is not the suffix itself.
    for (int64_t i = 0; i + n < len; ++i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      const int64_t start = i + n;
      const int64_t count = std::min<int64_t>(k, len - start);
      return std::vector<int32_t>(tokens.begin() + start, tokens.begin() + start + count);
    }
  }
  return {};
}

void NgramProposer::propose(std::span<DraftRequest> batch) {
  for (DraftRequest& d : batch) {
    if (d.max_drafts == 0) continue;
    d.drafts = ngram_drafts(d.token_ids, min_n_, max_n_, d.max_drafts);
  }
}

}  // namespace vllm
