#include "engine/kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace vllm {
namespace {

using Blocks = std::vector<BlockId>;

BlockHash hash_of(std::vector<int32_t> tokens, const std::optional<BlockHash>& parent = std::nullopt) {
  return hash_block_tokens(parent, tokens);
}

TEST(BlockHashTest, ChainsParentTokensAndExtraKeys) {
  const BlockHash a = hash_of({1, 2, 3, 4});
  EXPECT_EQ(a, hash_of({1, 2, 3, 4}));
  EXPECT_NE(a, hash_of({1, 2, 3, 5}));
  const BlockHash b = hash_of({5, 6, 7, 8}, a);
  EXPECT_NE(b, hash_of({5, 6, 7, 8}));  // the parent is part of the identity
  EXPECT_NE(b, hash_of({5, 6, 7, 8}, hash_of({9, 9, 9, 9})));
  EXPECT_NE(hash_block_tokens(a, std::vector<int32_t>{5, 6, 7, 8}, "tenant-a"),
            hash_block_tokens(a, std::vector<int32_t>{5, 6, 7, 8}, "tenant-b"));  // cache_salt isolates
}

TEST(BlockPoolTest, HandsOutBlocksInFreeQueueOrder) {
  BlockPool pool(4);
  EXPECT_EQ(*pool.get_new_blocks(2), (Blocks{0, 1}));
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_FALSE(pool.get_new_blocks(3).has_value());  // all or nothing
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.5);
}

TEST(BlockPoolTest, EvictsLeastRecentlyFreedFirst) {
  BlockPool pool(4);
  const Blocks first = *pool.get_new_blocks(4);
  pool.free_blocks(Blocks{2, 0});  // freed in this order
  pool.free_blocks(Blocks{3});
  pool.free_blocks(Blocks{1});
  EXPECT_EQ(*pool.get_new_blocks(4), (Blocks{2, 0, 3, 1}));
}

TEST(BlockPoolTest, RefCountsKeepSharedBlocksOutOfTheFreeQueue) {
  BlockPool pool(3);
  const Blocks a = *pool.get_new_blocks(1);
  pool.touch(a);  // a second user
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.free_blocks(a);
  EXPECT_EQ(pool.num_free_blocks(), 2);  // still held by one user
  pool.free_blocks(a);
  EXPECT_EQ(pool.num_free_blocks(), 3);
}

TEST(BlockPoolTest, FreedCachedBlockIsReusableUntilEvicted) {
  BlockPool pool(2);
  const Blocks a = *pool.get_new_blocks(1);
  const BlockHash h = hash_of({1, 2});
  pool.cache_full_block(a[0], h);
  pool.free_blocks(a);
  ASSERT_EQ(pool.get_cached_block(h), a[0]);
  pool.touch(Blocks{a[0]});  // a new request takes it back from the cache
  EXPECT_EQ(pool.ref_count(a[0]), 1);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.free_blocks(Blocks{a[0]});
  // Two new blocks: the cached one is evicted (it was freed last, so it goes second).
  EXPECT_EQ(*pool.get_new_blocks(2), (Blocks{1, 0}));
  EXPECT_FALSE(pool.get_cached_block(h).has_value());
}

TEST(BlockPoolTest, CachingCanBeTurnedOff) {
  BlockPool pool(1, /*enable_caching=*/false);
  const Blocks a = *pool.get_new_blocks(1);
  pool.cache_full_block(a[0], hash_of({1}));
  EXPECT_FALSE(pool.get_cached_block(hash_of({1})).has_value());
}

TEST(BlockPoolDeathTest, DoubleFreeIsAnInvariantViolation) {
  BlockPool pool(2);
  const Blocks b = *pool.get_new_blocks(1);
  pool.free_blocks(b);
  EXPECT_DEATH(pool.free_blocks(b), "freeing a block not in use");
}

}  // namespace
}  // namespace vllm
