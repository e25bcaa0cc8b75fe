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

struct Sequence {
  std::vector<float> k, v;  // [len, kv_heads, head_dim]: the whole context
  int32_t num_query = 0;    // the last num_query tokens are queried this step
  std::vector<int32_t> blocks;
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

// Every ISA's output for the batch, checked against the float64 reference
// (over the values as the cache holds them: BF16-rounded for a BF16 cache).
std::vector<float> run_case(const Shape& shape, int32_t window, DType dtype, float softcap) {
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
  const size_t elements = static_cast<size_t>(kNumBlocks * kKvHeads * kBlockSize * kHeadDim);
  std::vector<float> f32_keys(elements, NAN), f32_values(elements, NAN);
  std::vector<uint16_t> bf16_keys(elements, 0x7fc0), bf16_values(elements, 0x7fc0);
  const bool bf16 = dtype == DType::kBF16;
  PagedKVLayer layer{bf16 ? static_cast<void*>(bf16_keys.data()) : f32_keys.data(),
                     bf16 ? static_cast<void*>(bf16_values.data()) : f32_values.data(),
                     dtype,
                     kNumBlocks,
                     kBlockSize,
                     kKvHeads,
                     kHeadDim};

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
    if (bf16) {
      for (float& x : stored.k) x = bf16_to_f32(f32_to_bf16(x));
      for (float& x : stored.v) x = bf16_to_f32(f32_to_bf16(x));
    }
    // Earlier tokens were written by earlier steps; this step writes the queried ones.
    std::vector<int32_t> earlier_slots;
    for (int32_t pos = 0; pos < len; ++pos) {
      const int32_t slot = seq.blocks[static_cast<size_t>(pos / kBlockSize)] * kBlockSize + pos % kBlockSize;
      const float* kp = seq.k.data() + pos * kKvHeads * kHeadDim;
      const float* vp = seq.v.data() + pos * kKvHeads * kHeadDim;
      if (pos < len - nq) {
        write_kv_cache(kp, vp, &slot, 1, layer);
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
  write_kv_cache(step_k.data(), step_v.data(), slots.data(), num_tokens, layer);
  AttentionMetadata meta{static_cast<int32_t>(seqs.size()),
                         query_start.data(),
                         seq_lens.data(),
                         block_tables.data(),
                         max_blocks,
                         slots.data()};
  std::vector<float> out(static_cast<size_t>(num_tokens * kHeads * kHeadDim));
  ThreadPool pool(2);
  paged_attention(q.data(), kHeads, layer, meta, 1.0f / std::sqrt(static_cast<float>(kHeadDim)), window, softcap,
                  out.data(), pool);
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
// compute the same arithmetic, so their outputs are equal bit for bit.
void run_every_isa(const Shape& shape, int32_t window, float softcap = 0) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    ASSERT_TRUE(force_cpu_isa("scalar").is_ok());
    const std::vector<float> scalar = run_case(shape, window, dtype, softcap);
    for (const char* isa : {"avx2", "avx512"}) {
      if (!force_cpu_isa(isa).is_ok()) continue;  // not on this CPU
      const std::vector<float> out = run_case(shape, window, dtype, softcap);
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

// Gemma 2's logit soft-capping (a small cap, so that it changes the result).
TEST(PagedAttentionTest, SoftCappedScoresMatchTheReference) {
  run_every_isa(kSmall, 0, 0.5f);
  run_every_isa(kSmollm, 70, 0.7f);
}

}  // namespace
}  // namespace vllm::kernels
