// Latent attention (kernels.h) against a float64 loop over contiguous rows:
// scattered blocks, a mixed batch (fresh prefill, decode with a long
// context, a chunk after a cached prefix), every cache dtype (an FP8 one
// scaled), any thread count giving the same bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

constexpr int32_t kHeads = 6;    // more than one block of heads per row, the last one short
constexpr int32_t kRowDim = 40;  // kv_lora_rank 32 + rope 8
constexpr int32_t kValueDim = 32;
constexpr int32_t kBlockSize = 8;
constexpr int32_t kNumBlocks = 64;
constexpr float kScale = 0.3f;
// An FP8 cache's scale: normal rows mostly within E4M3's range, |x| > 4.48 saturated.
constexpr float kFp8CacheScale = 0.01f;
// {context, queried}: a fresh prefill, a decode token past a tile of 64 keys, a chunk after a cached prefix.
const std::vector<std::pair<int32_t, int32_t>> kSeqs = {{9, 9}, {150, 1}, {70, 11}};

struct Batch {
  std::vector<std::vector<float>> rows;  // per sequence [len, kRowDim]: the whole context
  std::vector<int32_t> query_start, seq_lens, block_tables, slots;
  int32_t max_blocks = 0;
  std::vector<float> q;  // [query tokens, kHeads, kRowDim]
};

Batch make_batch() {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> dist;
  std::vector<int32_t> free_blocks(kNumBlocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  Batch b;
  for (const auto& [len, queried] : kSeqs) b.max_blocks = std::max(b.max_blocks, (len + kBlockSize - 1) / kBlockSize);
  b.query_start.push_back(0);
  size_t next_block = 0;
  for (const auto& [len, queried] : kSeqs) {
    std::vector<float>& rows = b.rows.emplace_back(static_cast<size_t>(len * kRowDim));
    for (float& x : rows) x = dist(rng);
    std::vector<int32_t> table(static_cast<size_t>(b.max_blocks), 0);
    for (int32_t i = 0; i < (len + kBlockSize - 1) / kBlockSize; ++i)
      table[static_cast<size_t>(i)] = free_blocks[next_block++];
    for (int32_t pos = 0; pos < len; ++pos) {
      b.slots.push_back(table[static_cast<size_t>(pos / kBlockSize)] * kBlockSize + pos % kBlockSize);
    }
    b.block_tables.insert(b.block_tables.end(), table.begin(), table.end());
    b.seq_lens.push_back(len);
    b.query_start.push_back(b.query_start.back() + queried);
    for (int32_t i = 0; i < queried * kHeads * kRowDim; ++i) b.q.push_back(dist(rng));
  }
  return b;
}

// What a cache of `dtype` gives back for x.
float stored(float x, DType dtype) {
  if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(x));
  if (dtype == DType::kF8E4M3) return e4m3_to_f32(f32_to_e4m3(x / kFp8CacheScale)) * kFp8CacheScale;
  return x;
}

std::vector<float> run(const Batch& b, DType dtype, int threads) {
  std::vector<uint8_t> cache(static_cast<size_t>(kNumBlocks * kBlockSize * kRowDim) * dtype_size(dtype));
  PagedKVLayer layer{cache.data(), nullptr, dtype, kNumBlocks, kBlockSize, 1, kRowDim};
  size_t slot = 0;
  for (const std::vector<float>& rows : b.rows) {
    const auto len = static_cast<int64_t>(rows.size() / kRowDim);
    write_latent_cache(rows.data(), b.slots.data() + slot, len, layer, kFp8CacheScale);
    slot += static_cast<size_t>(len);
  }
  AttentionMetadata meta{static_cast<int32_t>(kSeqs.size()),
                         b.query_start.data(),
                         b.seq_lens.data(),
                         b.block_tables.data(),
                         b.max_blocks,
                         nullptr};
  std::vector<float> out(static_cast<size_t>(b.query_start.back() * kHeads * kValueDim));
  ThreadPool pool(threads);
  latent_attention(b.q.data(), kHeads, layer, meta, kScale, kValueDim, out.data(), pool, kFp8CacheScale);
  return out;
}

void expect_matches_reference(DType dtype, double tolerance) {
  const Batch b = make_batch();
  const std::vector<float> out = run(b, dtype, 1);
  for (size_t s = 0; s < kSeqs.size(); ++s) {
    const auto [len, queried] = kSeqs[s];
    for (int32_t i = 0; i < queried; ++i) {
      const int32_t row = b.query_start[s] + i, pos = len - queried + i;
      for (int32_t h = 0; h < kHeads; ++h) {
        const float* q = b.q.data() + (static_cast<int64_t>(row) * kHeads + h) * kRowDim;
        std::vector<double> scores;
        for (int32_t j = 0; j <= pos; ++j) {
          double d = 0;
          for (int32_t x = 0; x < kRowDim; ++x)
            d += double{q[x]} * stored(b.rows[s][static_cast<size_t>(j * kRowDim + x)], dtype);
          scores.push_back(d * kScale);
        }
        const double mx = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& e : scores) sum += (e = std::exp(e - mx));
        for (int32_t x = 0; x < kValueDim; ++x) {
          double expected = 0;
          for (int32_t j = 0; j <= pos; ++j) {
            expected +=
                scores[static_cast<size_t>(j)] / sum * stored(b.rows[s][static_cast<size_t>(j * kRowDim + x)], dtype);
          }
          EXPECT_NEAR(out[(static_cast<size_t>(row) * kHeads + h) * kValueDim + x], expected, tolerance)
              << "seq " << s << " row " << i << " head " << h << " dim " << x;
        }
      }
    }
  }
}

TEST(LatentAttentionTest, MatchesFloat64WithAnF32Cache) { expect_matches_reference(DType::kF32, 2e-5); }

TEST(LatentAttentionTest, MatchesFloat64OverTheBf16RoundedRowsOfABf16Cache) {
  expect_matches_reference(DType::kBF16, 2e-5);
}

TEST(LatentAttentionTest, MatchesFloat64OverTheScaledCodesOfAnFp8Cache) {
  expect_matches_reference(DType::kF8E4M3, 2e-5);
}

TEST(LatentAttentionTest, SameBitsForAnyThreadCount) {
  const Batch b = make_batch();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) EXPECT_EQ(run(b, dtype, 1), run(b, dtype, 3));
}

}  // namespace
}  // namespace vllm::kernels
