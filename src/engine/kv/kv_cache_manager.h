// Per-request KV block tables over the BlockPool, with automatic prefix
// caching (vLLM V1's KVCacheManager).  The scheduler asks which leading
// blocks of a new request are already cached, then allocates slots for the
// tokens it schedules; full blocks are hashed and cached as they fill.
// Ids and hashes only — no tensors.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_pool.h"

namespace vllm {

using RequestId = int64_t;

// Leading blocks of a request found in the prefix cache.
struct ComputedBlocks {
  std::vector<BlockId> blocks;
  int32_t num_computed_tokens = 0;  // blocks.size() * block_size
  int32_t num_query_tokens = 0;     // tokens looked up (0 with caching off)
};

struct PrefixCacheStats {
  int64_t queries_tokens = 0;  // prompt tokens looked up
  int64_t hits_tokens = 0;     // of those, found cached
};

class KVCacheManager {
 public:
  // `recompute_last_hit_block`: a hit leaves its last block to be computed
  // again (vLLM does so for EAGLE heads: the head's keys and values at a
  // block's last position depend on the token after it, which the block's
  // hash does not cover).
  KVCacheManager(int32_t num_blocks, int32_t block_size, bool enable_caching, bool recompute_last_hit_block = false);

  // The longest cached prefix of `tokens` in whole blocks, stopping at least
  // one token short of the end so that the last token's logits are computed
  // (and a block shorter with recompute_last_hit_block).
  // `cache_salt` is an extra key: requests with different salts share nothing.
  ComputedBlocks get_computed_blocks(std::span<const int32_t> tokens, const std::string& cache_salt);

  // Makes request `id` own enough blocks for `num_tokens` tokens in all.
  // On its first call `computed` (from get_computed_blocks) is taken over
  // and counted in the prefix-cache stats.
  // Returns false, changing nothing, when the pool cannot supply them.
  bool allocate_slots(RequestId id, int32_t num_tokens, const ComputedBlocks& computed = {});

  // Hashes and caches the request's blocks that `num_full_tokens` of its
  // `tokens` fill completely.
  void cache_full_blocks(RequestId id, std::span<const int32_t> tokens, int32_t num_full_tokens,
                         const std::string& cache_salt);

  // Returns the request's blocks to the pool, its tail first, so that shared
  // prefix blocks are the last to be evicted.
  void free(RequestId id);

  const std::vector<BlockId>& block_table(RequestId id) const;
  int32_t block_size() const { return block_size_; }
  const BlockPool& pool() const { return pool_; }
  const PrefixCacheStats& prefix_cache_stats() const { return stats_; }

 private:
  struct RequestBlocks {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes;  // of its first hashes.size() blocks
  };

  int32_t block_size_;
  bool enable_caching_;
  bool recompute_last_hit_block_;
  BlockPool pool_;
  std::unordered_map<RequestId, RequestBlocks> requests_;
  PrefixCacheStats stats_;
};

}  // namespace vllm
