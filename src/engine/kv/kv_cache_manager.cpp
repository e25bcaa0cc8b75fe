#include "engine/kv/kv_cache_manager.h"

#include <algorithm>

#include "base/logging.h"

namespace vllm {

KVCacheManager::KVCacheManager(int32_t num_blocks, int32_t block_size, bool enable_caching,
                               bool recompute_last_hit_block)
    : block_size_(block_size),
      enable_caching_(enable_caching),
      recompute_last_hit_block_(recompute_last_hit_block),
      pool_(num_blocks, enable_caching) {}

ComputedBlocks KVCacheManager::get_computed_blocks(std::span<const int32_t> tokens, const std::string& cache_salt) {
  ComputedBlocks out;
  if (!enable_caching_ || tokens.empty()) return out;
  out.num_query_tokens = static_cast<int32_t>(tokens.size());
  // Only blocks that end before the last token: it must be computed.
  const size_t max_blocks = (tokens.size() - 1) / static_cast<size_t>(block_size_);
  std::optional<BlockHash> parent;
  for (size_t b = 0; b < max_blocks; ++b) {
    const BlockHash h = hash_block_tokens(
        parent, tokens.subspan(b * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_)), cache_salt);
    const std::optional<BlockId> hit = pool_.get_cached_block(h);
    if (!hit) break;
    out.blocks.push_back(*hit);
    parent = h;
  }
  if (recompute_last_hit_block_ && !out.blocks.empty()) out.blocks.pop_back();
  out.num_computed_tokens = static_cast<int32_t>(out.blocks.size()) * block_size_;
  return out;
}

bool KVCacheManager::allocate_slots(RequestId id, int32_t num_tokens, const ComputedBlocks& computed) {
  auto it = requests_.find(id);
  const bool is_new = it == requests_.end();
  const size_t have = is_new ? computed.blocks.size() : it->second.blocks.size();
  const auto needed = static_cast<size_t>((num_tokens + block_size_ - 1) / block_size_);
  const auto num_new = static_cast<int32_t>(needed > have ? needed - have : 0);
  // Cached blocks nobody holds sit in the free queue: taking them uses it up too.
  int32_t evictable = 0;
  if (is_new) {
    for (BlockId b : computed.blocks) evictable += pool_.ref_count(b) == 0;
  }
  if (num_new + evictable > pool_.num_free_blocks()) return false;
  if (is_new) {
    it = requests_.emplace(id, RequestBlocks{}).first;
    pool_.touch(computed.blocks);
    it->second.blocks = computed.blocks;
    // Counted on success only, so a request that waits for blocks is not counted again each step.
    stats_.queries_tokens += computed.num_query_tokens;
    stats_.hits_tokens += computed.num_computed_tokens;
  }
  std::optional<std::vector<BlockId>> fresh = pool_.get_new_blocks(num_new);
  VLLM_CHECK(fresh.has_value(), "free-block count was checked above");
  it->second.blocks.insert(it->second.blocks.end(), fresh->begin(), fresh->end());
  return true;
}

void KVCacheManager::cache_full_blocks(RequestId id, std::span<const int32_t> tokens, int32_t num_full_tokens,
                                       const std::string& cache_salt) {
  if (!enable_caching_) return;
  RequestBlocks& req = requests_.at(id);
  const size_t full = std::min(static_cast<size_t>(num_full_tokens / block_size_), req.blocks.size());
  for (size_t b = req.hashes.size(); b < full; ++b) {
    const std::optional<BlockHash> parent = b == 0 ? std::nullopt : std::optional<BlockHash>(req.hashes[b - 1]);
    const BlockHash h = hash_block_tokens(
        parent, tokens.subspan(b * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_)), cache_salt);
    req.hashes.push_back(h);
    // Already cached: by this very block (taken from the cache), or by
    // another that computed the same prefix first, which stays the one cached.
    if (!pool_.get_cached_block(h)) pool_.cache_full_block(req.blocks[b], h);
  }
}

void KVCacheManager::free(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  std::vector<BlockId> reversed(it->second.blocks.rbegin(), it->second.blocks.rend());
  pool_.free_blocks(reversed);
  requests_.erase(it);
}

const std::vector<BlockId>& KVCacheManager::block_table(RequestId id) const { return requests_.at(id).blocks; }

}  // namespace vllm
