// A pool of fixed-size KV blocks identified by integer ids.  Allocation and
// freeing are O(1).  (The engine-core issue adds prefix-cache hashing, ref
// counts and an LRU free queue on top of this.)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace vllm {

using BlockId = int32_t;

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  std::optional<BlockId> allocate();
  void free(BlockId block);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_.size()); }

 private:
  int32_t num_blocks_;
  std::vector<BlockId> free_;  // stack: lowest ids are handed out first
  std::vector<bool> in_use_;
};

}  // namespace vllm
