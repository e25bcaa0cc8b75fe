#include "engine/kv/block_pool.h"

#include "base/logging.h"

namespace vllm {

BlockPool::BlockPool(int32_t num_blocks) : num_blocks_(num_blocks), in_use_(static_cast<size_t>(num_blocks), false) {
  free_.reserve(static_cast<size_t>(num_blocks));
  for (BlockId b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<BlockId> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const BlockId b = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(b)] = true;
  return b;
}

void BlockPool::free(BlockId block) {
  VLLM_CHECK(block >= 0 && block < num_blocks_ && in_use_[static_cast<size_t>(block)], "freeing a block not in use");
  in_use_[static_cast<size_t>(block)] = false;
  free_.push_back(block);
}

}  // namespace vllm
