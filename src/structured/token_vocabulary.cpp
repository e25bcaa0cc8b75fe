#include "structured/token_vocabulary.h"

#include <algorithm>

namespace vllm::structured {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eos_token_ids)
    : bytes_(std::move(token_bytes)), eos_(std::move(eos_token_ids)) {
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!bytes_[id].empty() && !is_eos(static_cast<int32_t>(id))) sorted_.push_back(static_cast<int32_t>(id));
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) { return bytes(a) < bytes(b); });
  shared_prefix_.resize(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& prev = bytes(sorted_[i - 1]);
    const std::string& cur = bytes(sorted_[i]);
    const auto n =
        std::mismatch(prev.begin(), prev.begin() + static_cast<std::ptrdiff_t>(std::min(prev.size(), cur.size())),
                      cur.begin())
            .first -
        prev.begin();
    shared_prefix_[i] = static_cast<int32_t>(n);
  }
}

bool TokenVocabulary::is_eos(int32_t id) const { return std::find(eos_.begin(), eos_.end(), id) != eos_.end(); }

}  // namespace vllm::structured
