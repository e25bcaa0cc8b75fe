#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

// Small shapes (block and head smaller than a vector) and smollm-135m's
// (9 heads on 3 KV heads of 64 dimensions, blocks of 16).
struct Shape {
  int32_t heads, kv_heads, head_dim, block_size, num_blocks;
  std::vector<std::pair<int32_t, int32_t>> seqs;  // {context, queried}: fresh prefill, decode, cached-prefix chunk
};
const Shape kSmall{4, 2, 8, 4, 32, {{7, 7}, {13, 1}, {22, 9}}};
const Shape kSmollm{9, 3, 64, 16, 64, {{150, 150}, {300, 1}, {200, 37}}};
// A head of 48 dimensions (one 32-dimension block of a BF16 value row and 16
// in order) in blocks of 8 keys (fewer keys than an AVX-512 vector has lanes).
const Shape kUneven{6, 2, 48, 8, 96, {{70, 70}, {90, 1}, {80, 11}}};
// Heads of 128 dimensions (a group of 4) in blocks of 8 keys, fewer than one
// 16-key score tile; and of 96 (three 32-dimension chunks) in blocks of 32,
// a group of 7 (a tile's rows hold parts of several tokens).
const Shape kWideHeads{8, 2, 128, 8, 96, {{130, 130}, {200, 1}, {150, 45}}};
const Shape kOddGroup{14, 2, 96, 32, 48, {{100, 100}, {300, 1}, {140, 23}}};
// An odd head_dim (F32 and FP8 caches only: BF16 pairs dimensions).
const Shape kOddHeadDim{6, 3, 9, 4, 64, {{19, 19}, {40, 1}, {30, 6}}};

struct Sequence {
  std::vector<float> k, v;  // [len, kv_heads, head_dim]: the whole context
  int32_t num_query = 0;    // the last num_query tokens are queried this step
  std::vector<int32_t> blocks;
};

// A layer's cache of any dtype, every slot NaN until written (an FP8 NaN
// code reads as 480: as plain a mistake).
struct KvCache {
  std::vector<float> f32_keys, f32_values;
  std::vector<uint16_t> bf16_keys, bf16_values;
  std::vector<uint8_t> fp8_keys, fp8_values;
  PagedKVLayer layer;

  KvCache(DType dtype, int32_t blocks, int32_t block_size, int32_t kv_heads, int32_t head_dim) {
    const auto elements = static_cast<size_t>(blocks) * kv_heads * block_size * head_dim;
    const auto filled = [&](auto& keys, auto& values, auto unwritten) {
      keys.assign(elements, unwritten);
      values.assign(elements, unwritten);
      return std::pair<void*, void*>{keys.data(), values.data()};
    };
    const auto [keys, values] = dtype == DType::kBF16     ? filled(bf16_keys, bf16_values, uint16_t{0x7fc0})
                                : dtype == DType::kF8E4M3 ? filled(fp8_keys, fp8_values, uint8_t{0x7f})
                                                          : filled(f32_keys, f32_values, float{NAN});
    layer = {keys, values, dtype, blocks, block_size, kv_heads, head_dim};
  }
  KvCache(const KvCache&) = delete;  // layer points into this object's vectors
  KvCache& operator=(const KvCache&) = delete;
};

// Naive causal attention over a contiguous copy of the context, in float64.
std::vector<double> reference(const Shape& shape, const float* q, const Sequence& s, int32_t window, float softcap) {
  const int32_t kHeads = shape.heads, kKvHeads = shape.kv_heads, kHeadDim = shape.head_dim;
  const auto len = static_cast<int32_t>(s.k.size() / (kKvHeads * kHeadDim));
  std::vector<double> out(static_cast<size_t>(s.num_query * kHeads * kHeadDim), 0.0);
  for (int32_t i = 0; i < s.num_query; ++i) {
    const int32_t pos = len - s.num_query + i;
    for (int32_t h = 0; h < kHeads; ++h) {
      const int32_t kvh = h / (kHeads / kKvHeads);
      const int32_t first = window > 0 ? std::max(0, pos - window + 1) : 0;
      std::vector<double> p;
      double mx = -1e300;
      for (int32_t j = first; j <= pos; ++j) {
        double d = 0;
        for (int32_t x = 0; x < kHeadDim; ++x) {
          d += static_cast<double>(q[(i * kHeads + h) * kHeadDim + x]) *
               s.k[static_cast<size_t>((j * kKvHeads + kvh) * kHeadDim + x)];
        }
        d /= std::sqrt(static_cast<double>(kHeadDim));
        p.push_back(softcap > 0 ? softcap * std::tanh(d / softcap) : d);
        mx = std::max(mx, p.back());
      }
      double sum = 0;
      for (auto& e : p) sum += (e = std::exp(e - mx));
      for (int32_t j = first; j <= pos; ++j) {
        for (int32_t x = 0; x < kHeadDim; ++x) {
          out[static_cast<size_t>((i * kHeads + h) * kHeadDim + x)] +=
              p[static_cast<size_t>(j - first)] / sum * s.v[static_cast<size_t>((j * kKvHeads + kvh) * kHeadDim + x)];
        }
      }
    }
  }
  return out;
}

// What a cache of `dtype` gives back for x: x itself, BF16-rounded, or an
// FP8 cache's E4M3 number nearest x / scale (saturated), times the scale.
float as_cached(float x, DType dtype, float scale) {
  if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(x));
  if (dtype == DType::kF8E4M3) return e4m3_to_f32(f32_to_e4m3(x / scale)) * scale;
  return x;
}

// Scales for an FP8 cache: ones that leave most values within E4M3's range,
// and some beyond it (a value scale of 0.004 saturates |v| > 1.79, a few
// percent of the normal values here).
const KVScales kFp8Scales{0.03f, 0.004f};

// Every ISA's output for the batch, checked against the float64 reference
// (over the values as the cache holds them: as_cached).
std::vector<float> run_case(const Shape& shape, int32_t window, DType dtype, float softcap) {
  const KVScales scales = dtype == DType::kF8E4M3 ? kFp8Scales : KVScales{};
  const int32_t kHeads = shape.heads, kKvHeads = shape.kv_heads, kHeadDim = shape.head_dim;
  const int32_t kBlockSize = shape.block_size, kNumBlocks = shape.num_blocks;
  std::mt19937_64 rng(42);
  std::normal_distribution<float> dist;
  // A mixed batch: a fresh prefill, a decode token with a long context, and
  // a prefill chunk whose first tokens are already cached.
  const std::vector<std::pair<int32_t, int32_t>>& shapes = shape.seqs;
  std::vector<int32_t> free_blocks(kNumBlocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);  // scattered physical blocks
  // Slots nobody wrote hold NaN, so that reading one shows.
  KvCache cache(dtype, kNumBlocks, kBlockSize, kKvHeads, kHeadDim);
  const PagedKVLayer& layer = cache.layer;

  std::vector<Sequence> seqs;
  std::vector<float> q, step_k, step_v;
  std::vector<int32_t> query_start{0}, seq_lens, slots;
  const int32_t max_blocks = kNumBlocks / static_cast<int32_t>(shapes.size());
  std::vector<int32_t> block_tables(shapes.size() * max_blocks, -1);
  for (size_t s = 0; s < shapes.size(); ++s) {
    Sequence seq;
    const auto [len, nq] = shapes[s];
    seq.num_query = nq;
    for (int32_t b = 0; b * kBlockSize < len; ++b) {
      seq.blocks.push_back(free_blocks.back());
      free_blocks.pop_back();
      block_tables[s * max_blocks + static_cast<size_t>(b)] = seq.blocks.back();
    }
    for (int32_t t = 0; t < len * kKvHeads * kHeadDim; ++t) {
      seq.k.push_back(dist(rng));
      seq.v.push_back(dist(rng));
    }
    // What the reference sees: the cache's values.
    Sequence stored = seq;
    for (float& x : stored.k) x = as_cached(x, dtype, scales.key);
    for (float& x : stored.v) x = as_cached(x, dtype, scales.value);
    // Earlier tokens were written by earlier steps; this step writes the queried ones.
    std::vector<int32_t> earlier_slots;
    for (int32_t pos = 0; pos < len; ++pos) {
      const int32_t slot = seq.blocks[static_cast<size_t>(pos / kBlockSize)] * kBlockSize + pos % kBlockSize;
      const float* kp = seq.k.data() + pos * kKvHeads * kHeadDim;
      const float* vp = seq.v.data() + pos * kKvHeads * kHeadDim;
      if (pos < len - nq) {
        write_kv_cache(kp, vp, &slot, 1, layer, scales);
      } else {
        slots.push_back(slot);
        step_k.insert(step_k.end(), kp, kp + kKvHeads * kHeadDim);
        step_v.insert(step_v.end(), vp, vp + kKvHeads * kHeadDim);
        for (int32_t x = 0; x < kHeads * kHeadDim; ++x) q.push_back(dist(rng));
      }
    }
    query_start.push_back(query_start.back() + nq);
    seq_lens.push_back(len);
    seqs.push_back(std::move(stored));
  }
  const int64_t num_tokens = query_start.back();
  write_kv_cache(step_k.data(), step_v.data(), slots.data(), num_tokens, layer, scales);
  AttentionMetadata meta{static_cast<int32_t>(seqs.size()),
                         query_start.data(),
                         seq_lens.data(),
                         block_tables.data(),
                         max_blocks,
                         slots.data()};
  std::vector<float> out(static_cast<size_t>(num_tokens * kHeads * kHeadDim));
  ThreadPool pool(2);
  paged_attention(q.data(), kHeads, layer, meta, 1.0f / std::sqrt(static_cast<float>(kHeadDim)), window, softcap,
                  out.data(), pool, scales);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t row0 = query_start[s];
    const auto expected = reference(shape, q.data() + row0 * kHeads * kHeadDim, seqs[s], window, softcap);
    for (size_t i = 0; i < expected.size(); ++i) {
      const float got = out[static_cast<size_t>(row0 * kHeads * kHeadDim) + i];
      if (std::abs(got - expected[i]) > 1e-5) {
        ADD_FAILURE() << cpu_isa() << " " << dtype_name(dtype) << " seq " << s << " element " << i << ": " << got
                      << " vs " << expected[i];
        return out;
      }
    }
  }
  return out;
}

// The reference check on every ISA, and attention.h's promise: all ISAs
// compute the same arithmetic, so their outputs are equal bit for bit; all
// but AMX's tiles over a BF16 or FP8 cache (heads of 32k dimensions), a
// second arithmetic that only the reference bounds.
void run_every_isa(const Shape& shape, int32_t window, float softcap = 0) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    if (dtype == DType::kBF16 && shape.head_dim % 2 != 0) continue;
    ASSERT_TRUE(force_cpu_isa("scalar").is_ok());
    const std::vector<float> scalar = run_case(shape, window, dtype, softcap);
    for (const char* isa : {"avx2", "avx512", "amx"}) {
      if (!force_cpu_isa(isa).is_ok()) continue;  // not on this CPU
      const std::vector<float> out = run_case(shape, window, dtype, softcap);
      if (std::string(isa) == "amx" && dtype != DType::kF32 && shape.head_dim % 32 == 0) continue;
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], scalar[i]) << isa << " " << dtype_name(dtype) << " element " << i;
      }
    }
  }
  ASSERT_TRUE(force_cpu_isa("auto").is_ok());
}

TEST(PagedAttentionTest, MixedBatchOverScatteredBlocksMatchesContiguousReference) { run_every_isa(kSmall, 0); }

TEST(PagedAttentionTest, SlidingWindowLimitsTheKeys) { run_every_isa(kSmall, 5); }

TEST(PagedAttentionTest, SmollmShapesMatchTheReference) { run_every_isa(kSmollm, 0); }

TEST(PagedAttentionTest, SmollmShapesWithASlidingWindow) { run_every_isa(kSmollm, 70); }

TEST(PagedAttentionTest, UnevenHeadAndBlockSizesMatchTheReference) { run_every_isa(kUneven, 0); }

TEST(PagedAttentionTest, WideHeadsInSmallBlocksMatchTheReference) {
  run_every_isa(kWideHeads, 0);
  run_every_isa(kWideHeads, 37);
}

TEST(PagedAttentionTest, SevenHeadsPerKvHeadMatchTheReference) { run_every_isa(kOddGroup, 0); }

TEST(PagedAttentionTest, OddHeadDimMatchesTheReference) {
  run_every_isa(kOddHeadDim, 0);
  run_every_isa(kOddHeadDim, 6);
}

// Gemma 2's logit soft-capping (a small cap, so that it changes the result).
TEST(PagedAttentionTest, SoftCappedScoresMatchTheReference) {
  run_every_isa(kSmall, 0, 0.5f);
  run_every_isa(kSmollm, 70, 0.7f);
}

// A row's result depends only on its own query and keys: each token of a
// prompt attended in one prefill step equals, bit for bit, the same token
// attended alone as a decode step (the cache holding the keys past it, which
// it must not see), on every ISA (AMX's tiles hold up to 16 rows together,
// the others read up to 8 rows together), soft-capped or not, for
// smollm-135m's heads and stories260k's (8 dimensions, 2 heads per KV head).
TEST(PagedAttentionTest, PrefillRowsEqualTheSameRowsDecodedAlone) {
  struct Heads {
    int32_t heads, kv_heads, head_dim;
  };
  constexpr int32_t kBlockSize = 16, kLen = 150;
  for (const Heads shape : {Heads{9, 3, 64}, Heads{8, 4, 8}}) {
    const int32_t kHeads = shape.heads, kKvHeads = shape.kv_heads, kHeadDim = shape.head_dim;
    std::mt19937_64 rng(7);
    std::normal_distribution<float> dist;
    std::vector<float> k(kLen * kKvHeads * kHeadDim), v(k.size()), q(kLen * kHeads * kHeadDim);
    for (auto* x : {&k, &v, &q}) {
      for (float& e : *x) e = dist(rng);
    }
    constexpr int32_t kBlocks = (kLen + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> block_table(kBlocks), slots(kLen);
    for (int32_t b = 0; b < kBlocks; ++b) block_table[b] = kBlocks - 1 - b;  // scattered: reversed
    for (int32_t t = 0; t < kLen; ++t) slots[t] = block_table[t / kBlockSize] * kBlockSize + t % kBlockSize;
    ThreadPool pool(2);
    for (const char* isa : {"scalar", "avx2", "avx512", "amx"}) {
      if (!force_cpu_isa(isa).is_ok()) continue;
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
        KvCache cache(dtype, kBlocks, kBlockSize, kKvHeads, kHeadDim);
        const PagedKVLayer& layer = cache.layer;
        const KVScales scales = dtype == DType::kF8E4M3 ? kFp8Scales : KVScales{};
        write_kv_cache(k.data(), v.data(), slots.data(), kLen, layer, scales);
        const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
        for (const float softcap : {0.0f, 0.7f}) {
          const int32_t prefill_start[] = {0, kLen}, prefill_len[] = {kLen};
          AttentionMetadata prefill{1, prefill_start, prefill_len, block_table.data(), kBlocks, slots.data()};
          std::vector<float> together(q.size());
          paged_attention(q.data(), kHeads, layer, prefill, scale, 0, softcap, together.data(), pool, scales);
          for (int32_t t : {0, 7, 8, 15, 16, 63, 64, 65, 100, 143, 149}) {
            const int32_t decode_start[] = {0, 1}, decode_len[] = {t + 1};
            AttentionMetadata decode{1, decode_start, decode_len, block_table.data(), kBlocks, slots.data() + t};
            std::vector<float> alone(kHeads * kHeadDim);
            paged_attention(q.data() + t * kHeads * kHeadDim, kHeads, layer, decode, scale, 0, softcap, alone.data(),
                            pool, scales);
            for (int32_t i = 0; i < kHeads * kHeadDim; ++i) {
              ASSERT_EQ(alone[i], together[t * kHeads * kHeadDim + i])
                  << isa << " " << dtype_name(dtype) << " head_dim " << kHeadDim << " softcap " << softcap << " token "
                  << t;
            }
          }
        }
      }
    }
  }
  ASSERT_TRUE(force_cpu_isa("auto").is_ok());
}

}  // namespace
}  // namespace vllm::kernels
