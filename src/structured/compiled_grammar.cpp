#include "structured/compiled_grammar.h"

namespace vllm::structured {
namespace {

// Masks kept per grammar (about 400 states of a 150k-token vocabulary; a
// JSON schema's grammar rarely has more); past this the cache starts again
// from empty.  With GrammarCache's 64 grammars, 512 MiB at most.
constexpr size_t kMaxCachedBytes = size_t{8} << 20;

}  // namespace

CompiledGrammar::CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
    : rules_(grammar), vocabulary_(std::move(vocabulary)) {}

std::shared_ptr<const StateMask> CompiledGrammar::cached_mask(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = masks_.find(key);
  return it == masks_.end() ? nullptr : it->second;
}

void CompiledGrammar::store_mask(const std::string& key, std::shared_ptr<const StateMask> mask) const {
  std::lock_guard lock(mutex_);
  const size_t bytes = key.size() + mask->allowed.size() * sizeof(uint32_t);
  if (cached_bytes_ + bytes > kMaxCachedBytes) {
    masks_.clear();
    cached_bytes_ = 0;
  }
  if (masks_.emplace(key, std::move(mask)).second) cached_bytes_ += bytes;
}

}  // namespace vllm::structured
