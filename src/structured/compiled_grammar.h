// A grammar ready to constrain generation over one vocabulary, shared by
// every request that uses the same constraint.  It keeps the token masks of
// the states it has met: the states of a JSON string's characters, of a
// number's digits, of the space between fields recur at every step and in
// every request, so most steps find their mask here.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"
#include "structured/pushdown.h"
#include "structured/token_vocabulary.h"

namespace vllm::structured {

// One bit per token: bit t % 32 of word t / 32.
using TokenBitmask = std::vector<uint32_t>;

inline size_t bitmask_words(int32_t vocab_size) { return (static_cast<size_t>(vocab_size) + 31) / 32; }
inline bool bitmask_has(const uint32_t* mask, int32_t token) {
  return ((mask[static_cast<size_t>(token) / 32] >> (static_cast<uint32_t>(token) % 32)) & 1) != 0;
}

// What a state allows next, and the most bytes any of those tokens leaves
// to be written before the grammar may end (which says when a request
// near its max_tokens must be steered towards an end).
struct StateMask {
  TokenBitmask allowed;
  int64_t most_bytes_to_finish = 0;
  // Per token, the bytes it leaves to write (saturated at kSaturated); made
  // the first time a request near its max_tokens needs them, so that later
  // ones filter the cached mask instead of walking the vocabulary again.
  static constexpr uint8_t kSaturated = 255;
  std::vector<uint8_t> bytes_after;
};

class CompiledGrammar {
 public:
  // `grammar` must be valid (Grammar::validate()).
  CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const PushdownRules& rules() const { return rules_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  // The mask of the state with this state_key(), if it was stored (thread-safe).
  std::shared_ptr<const StateMask> cached_mask(const std::string& key) const;
  void store_mask(const std::string& key, std::shared_ptr<const StateMask> mask) const;
  // The same state's mask, now with more in it (its bytes_after).
  void replace_mask(const std::string& key, std::shared_ptr<const StateMask> mask) const;

 private:
  PushdownRules rules_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const StateMask>> masks_;
  mutable size_t cached_bytes_ = 0;
};

}  // namespace vllm::structured
