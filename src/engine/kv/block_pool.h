// The pool of KV blocks, as vLLM V1's BlockPool: blocks are integer ids with
// ref counts; free blocks wait in a queue in eviction order (least recently
// freed first); a full block can carry its prefix hash, and freed blocks
// keep it, so a later request can take them back from the cache until they
// are evicted for reuse.  Every operation is O(1) per block.  Ids and hashes
// only: the KV memory lives in runner/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_hash.h"

namespace vllm {

using BlockId = int32_t;

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, bool enable_caching = true);

  // n blocks from the head of the free queue (ref count 1), evicting any
  // cached hash they carry; nullopt (and nothing taken) if fewer are free.
  std::optional<std::vector<BlockId>> get_new_blocks(int32_t n);

  // The block caching this prefix hash, if any.
  std::optional<BlockId> get_cached_block(const BlockHash& hash) const;

  // Takes a reference to blocks found in the cache (leaving the free queue
  // if they were free).
  void touch(std::span<const BlockId> blocks);

  // Drops one reference from each; blocks reaching zero join the tail of the
  // free queue in the given order (callers pass a request's blocks in
  // reverse, so its tail is evicted before its shared prefix).
  void free_blocks(std::span<const BlockId> blocks);

  // Records that `block`, now full, holds the prefix named by `hash`.
  void cache_full_block(BlockId block, const BlockHash& hash);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free_blocks() const { return num_free_; }
  int32_t ref_count(BlockId block) const { return blocks_[static_cast<size_t>(block)].ref_count; }
  // Fraction of blocks in use (ref count > 0).
  double usage() const { return 1.0 - static_cast<double>(num_free_) / static_cast<double>(blocks_.size()); }

 private:
  struct Block {
    int32_t ref_count = 0;
    std::optional<BlockHash> hash;
    BlockId prev = -1, next = -1;  // free-queue links
    bool in_free_queue = false;
  };
  struct HashOf {
    size_t operator()(const BlockHash& h) const {
      size_t v;
      static_assert(sizeof v <= sizeof(BlockHash));
      __builtin_memcpy(&v, h.data(), sizeof v);
      return v;
    }
  };

  void push_free(BlockId b);
  void remove_free(BlockId b);
  void evict_hash(BlockId b);

  bool enable_caching_;
  std::vector<Block> blocks_;
  BlockId free_head_ = -1, free_tail_ = -1;
  int32_t num_free_ = 0;
  std::unordered_map<BlockHash, BlockId, HashOf> cached_;
};

}  // namespace vllm
