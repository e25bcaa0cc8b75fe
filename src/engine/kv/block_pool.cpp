#include "engine/kv/block_pool.h"

#include "base/logging.h"

namespace vllm {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : enable_caching_(enable_caching), blocks_(static_cast<size_t>(num_blocks)) {
  for (BlockId b = 0; b < num_blocks; ++b) push_free(b);
}

void BlockPool::push_free(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.prev = free_tail_;
  blk.next = -1;
  if (free_tail_ >= 0) {
    blocks_[static_cast<size_t>(free_tail_)].next = b;
  } else {
    free_head_ = b;
  }
  free_tail_ = b;
  blk.in_free_queue = true;
  ++num_free_;
}

void BlockPool::remove_free(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  VLLM_CHECK(blk.in_free_queue, "block is not in the free queue");
  if (blk.prev >= 0) {
    blocks_[static_cast<size_t>(blk.prev)].next = blk.next;
  } else {
    free_head_ = blk.next;
  }
  if (blk.next >= 0) {
    blocks_[static_cast<size_t>(blk.next)].prev = blk.prev;
  } else {
    free_tail_ = blk.prev;
  }
  blk.prev = blk.next = -1;
  blk.in_free_queue = false;
  --num_free_;
}

void BlockPool::evict_hash(BlockId b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (!blk.hash) return;
  auto it = cached_.find(*blk.hash);
  if (it != cached_.end() && it->second == b) cached_.erase(it);
  blk.hash.reset();
}

std::optional<std::vector<BlockId>> BlockPool::get_new_blocks(int32_t n) {
  if (n > num_free_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const BlockId b = free_head_;
    remove_free(b);
    evict_hash(b);
    blocks_[static_cast<size_t>(b)].ref_count = 1;
    out.push_back(b);
  }
  return out;
}

std::optional<BlockId> BlockPool::get_cached_block(const BlockHash& hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    Block& blk = blocks_[static_cast<size_t>(b)];
    if (blk.ref_count == 0) remove_free(b);
    ++blk.ref_count;
  }
}

void BlockPool::free_blocks(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    Block& blk = blocks_[static_cast<size_t>(b)];
    VLLM_CHECK(blk.ref_count > 0, "freeing a block not in use");
    if (--blk.ref_count == 0) push_free(b);
  }
}

void BlockPool::cache_full_block(BlockId block, const BlockHash& hash) {
  if (!enable_caching_) return;
  Block& blk = blocks_[static_cast<size_t>(block)];
  VLLM_CHECK(!blk.hash.has_value(), "block is already cached");
  // Identical content computed twice keeps the first block in the map; the
  // second stays usable by its owner (block tables only grow, as in vLLM).
  blk.hash = hash;
  cached_.emplace(hash, block);
}

}  // namespace vllm
