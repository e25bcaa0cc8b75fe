#include "engine/kv/block_pool.h"

#include <gtest/gtest.h>

namespace vllm {
namespace {

TEST(BlockPoolTest, HandsOutLowestIdsFirstAndReusesFreedOnes) {
  BlockPool pool(3);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.free(0);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_FALSE(pool.allocate().has_value());
  pool.free(1);
  pool.free(0);
  pool.free(2);
  EXPECT_EQ(pool.num_free_blocks(), 3);
}

TEST(BlockPoolDeathTest, DoubleFreeIsAnInvariantViolation) {
  BlockPool pool(2);
  const BlockId b = *pool.allocate();
  pool.free(b);
  EXPECT_DEATH(pool.free(b), "freeing a block not in use");
}

}  // namespace
}  // namespace vllm
