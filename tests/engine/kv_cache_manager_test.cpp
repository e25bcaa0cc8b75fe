#include "engine/kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace vllm {
namespace {

using Blocks = std::vector<BlockId>;

std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(KVCacheManagerTest, SecondRequestReusesTheSharedPrefixBlocks) {
  KVCacheManager m(10, 4, true);
  const auto a = iota_tokens(10);
  ComputedBlocks none = m.get_computed_blocks(a, "");
  EXPECT_TRUE(none.blocks.empty());
  ASSERT_TRUE(m.allocate_slots(1, 10, none));
  EXPECT_EQ(m.block_table(1), (Blocks{0, 1, 2}));
  m.cache_full_blocks(1, a, 10, "");  // blocks 0 and 1 are full

  auto b = iota_tokens(8);
  b.push_back(100);
  b.push_back(101);
  const ComputedBlocks hit = m.get_computed_blocks(b, "");
  EXPECT_EQ(hit.blocks, (Blocks{0, 1}));
  EXPECT_EQ(hit.num_computed_tokens, 8);
  ASSERT_TRUE(m.allocate_slots(2, 10, hit));
  EXPECT_EQ(m.block_table(2), (Blocks{0, 1, 3}));
  EXPECT_EQ(m.pool().ref_count(0), 2);
  EXPECT_EQ(m.prefix_cache_stats().queries_tokens, 20);
  EXPECT_EQ(m.prefix_cache_stats().hits_tokens, 8);
}

TEST(KVCacheManagerTest, HitStopsOneTokenShortOfTheWholePrompt) {
  KVCacheManager m(10, 4, true);
  const auto a = iota_tokens(8);
  ASSERT_TRUE(m.allocate_slots(1, 8));
  m.cache_full_blocks(1, a, 8, "");
  // The same 8-token prompt: only the first block, so the last token is computed.
  EXPECT_EQ(m.get_computed_blocks(a, "").blocks, (Blocks{0}));
}

// For an EAGLE head (vLLM's use_eagle): the last block of a hit is computed again.
TEST(KVCacheManagerTest, RecomputingTheLastHitBlockHitsOneBlockLess) {
  KVCacheManager m(10, 4, true, /*recompute_last_hit_block=*/true);
  const auto a = iota_tokens(10);
  ASSERT_TRUE(m.allocate_slots(1, 10, m.get_computed_blocks(a, "")));
  m.cache_full_blocks(1, a, 10, "");  // blocks 0 and 1 are full
  const ComputedBlocks hit = m.get_computed_blocks(a, "");
  EXPECT_EQ(hit.blocks, (Blocks{0}));
  EXPECT_EQ(hit.num_computed_tokens, 4);
  EXPECT_TRUE(m.get_computed_blocks(iota_tokens(6), "").blocks.empty());  // one block hit, recomputed
}

TEST(KVCacheManagerTest, FinishedRequestsLeaveTheirBlocksCached) {
  KVCacheManager m(4, 4, true);
  const auto a = iota_tokens(9);
  ASSERT_TRUE(m.allocate_slots(1, 9));
  m.cache_full_blocks(1, a, 9, "");
  m.free(1);
  EXPECT_EQ(m.pool().num_free_blocks(), 4);
  const ComputedBlocks hit = m.get_computed_blocks(a, "");
  EXPECT_EQ(hit.blocks, (Blocks{0, 1}));
  ASSERT_TRUE(m.allocate_slots(2, 9, hit));
  EXPECT_EQ(m.block_table(2), (Blocks{0, 1, 3}));  // block 2 was freed first (tail first), so 3 is next
}

TEST(KVCacheManagerTest, CacheSaltSeparatesTenants) {
  KVCacheManager m(10, 4, true);
  const auto a = iota_tokens(9);
  ASSERT_TRUE(m.allocate_slots(1, 9));
  m.cache_full_blocks(1, a, 9, "tenant-a");
  EXPECT_EQ(m.get_computed_blocks(a, "tenant-a").blocks.size(), 2u);
  EXPECT_TRUE(m.get_computed_blocks(a, "tenant-b").blocks.empty());
}

TEST(KVCacheManagerTest, FailedAllocationChangesNothing) {
  KVCacheManager m(3, 4, true);
  ASSERT_TRUE(m.allocate_slots(1, 5));   // 2 blocks
  EXPECT_FALSE(m.allocate_slots(2, 8));  // needs 2, 1 free
  EXPECT_EQ(m.pool().num_free_blocks(), 1);
  EXPECT_TRUE(m.allocate_slots(1, 12));  // grows by one block
  EXPECT_EQ(m.block_table(1).size(), 3u);
  EXPECT_FALSE(m.allocate_slots(1, 13));
}

// Taking a cached block that nobody holds uses up a free block too.
TEST(KVCacheManagerTest, CountsEvictableCachedBlocksAgainstTheFreePool) {
  KVCacheManager m(3, 4, true);
  const auto a = iota_tokens(9);
  ASSERT_TRUE(m.allocate_slots(1, 9));
  m.cache_full_blocks(1, a, 9, "");
  m.free(1);
  const ComputedBlocks hit = m.get_computed_blocks(a, "");  // 2 cached, free blocks
  ASSERT_EQ(hit.blocks.size(), 2u);
  EXPECT_FALSE(m.allocate_slots(2, 16, hit));  // 2 cached + 2 new > 3 free
  EXPECT_EQ(m.pool().num_free_blocks(), 3);
  EXPECT_TRUE(m.allocate_slots(2, 12, hit));  // 2 cached + 1 new
}

TEST(KVCacheManagerTest, CachingOffNeverHits) {
  KVCacheManager m(10, 4, false);
  const auto a = iota_tokens(9);
  ASSERT_TRUE(m.allocate_slots(1, 9));
  m.cache_full_blocks(1, a, 9, "");
  EXPECT_TRUE(m.get_computed_blocks(a, "").blocks.empty());
  EXPECT_EQ(m.prefix_cache_stats().queries_tokens, 0);
}

}  // namespace
}  // namespace vllm
