#include "structured/compiled_grammar.h"

#include <atomic>

namespace vllm::structured {
namespace {

// Masks kept per grammar, and by all grammars together: a schema with a few
// bounded strings has hundreds of states (their counts are states too), and
// a cache smaller than them is emptied again and again, each state's
// vocabulary walk paid anew.  A grammar that would pass either bound starts
// its own cache again from empty.
constexpr size_t kMaxCachedBytes = size_t{64} << 20;
constexpr size_t kMaxCachedBytesAllGrammars = size_t{512} << 20;
std::atomic<size_t> all_grammars_cached_bytes{0};

size_t entry_bytes(const std::string& key, const StateMask& mask) {
  return key.size() + mask.allowed.size() * sizeof(uint32_t) + mask.bytes_after.size();
}

}  // namespace

CompiledGrammar::CompiledGrammar(const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
    : rules_(grammar), vocabulary_(std::move(vocabulary)) {}

CompiledGrammar::~CompiledGrammar() { all_grammars_cached_bytes -= cached_bytes_; }

std::shared_ptr<const StateMask> CompiledGrammar::cached_mask(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = masks_.find(key);
  return it == masks_.end() ? nullptr : it->second;
}

void CompiledGrammar::store_mask(const std::string& key, std::shared_ptr<const StateMask> mask) const {
  std::lock_guard lock(mutex_);
  const size_t bytes = entry_bytes(key, *mask);
  if (cached_bytes_ + bytes > kMaxCachedBytes || all_grammars_cached_bytes + bytes > kMaxCachedBytesAllGrammars) {
    all_grammars_cached_bytes -= cached_bytes_;
    masks_.clear();
    cached_bytes_ = 0;
  }
  if (masks_.emplace(key, std::move(mask)).second) {
    cached_bytes_ += bytes;
    all_grammars_cached_bytes += bytes;
  }
}

void CompiledGrammar::replace_mask(const std::string& key, std::shared_ptr<const StateMask> mask) const {
  {
    std::lock_guard lock(mutex_);
    auto it = masks_.find(key);
    if (it != masks_.end()) {
      const size_t bytes = entry_bytes(key, *it->second);
      cached_bytes_ -= bytes;
      all_grammars_cached_bytes -= bytes;
      masks_.erase(it);
    }
  }
  store_mask(key, std::move(mask));
}

}  // namespace vllm::structured
