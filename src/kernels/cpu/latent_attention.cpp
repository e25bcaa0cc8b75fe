// Multi-head latent attention (kernels.h): every head of a query row
// against one cached row per token, as DeepSeek's MLA runs once its
// up-projections are absorbed into the query and the output.  All heads
// share each row, so rows are read once per tile of keys for a block of
// heads, not once per head.  Portable code (the compiler vectorises the
// fixed-order sums): the arithmetic is the same on every ISA and for every
// batch, chunking and thread count.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "base/logging.h"
#include "kernels/cpu/attention.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

// Heads of one query row that share a pass over the rows.
constexpr int32_t kHeadsPerItem = 4;

// Sum of a[i] * b[i] as 16 interleaved partial sums added pairwise: a fixed
// order that the compiler vectorises.
float dot(const float* a, const float* b, int64_t n) {
  float part[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 16; ++k) part[k] += a[i + k] * b[i + k];
  }
  for (int k = 0; i < n; ++i, ++k) part[k] += a[i] * b[i];
  for (int width = 8; width >= 1; width /= 2) {
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  }
  return part[0];
}

int64_t row_offset(const PagedKVLayer& layer, int32_t block, int32_t offset) {
  return (static_cast<int64_t>(block) * layer.block_size + offset) * layer.head_dim;
}

// Row `pos` of a sequence as float32: in place for an F32 cache, widened
// into `buffer` for a BF16 one, and for an FP8 one times its scale.
const float* cached_row(const PagedKVLayer& layer, const int32_t* block_table, int32_t pos, float scale,
                        float* buffer) {
  const int64_t at = row_offset(layer, block_table[pos / layer.block_size], pos % layer.block_size);
  if (layer.dtype == DType::kF32) return static_cast<const float*>(layer.key_cache) + at;
  if (layer.dtype == DType::kBF16) {
    const uint16_t* row = static_cast<const uint16_t*>(layer.key_cache) + at;
    for (int32_t d = 0; d < layer.head_dim; ++d) buffer[d] = bf16_to_f32(row[d]);
  } else {
    const uint8_t* row = static_cast<const uint8_t*>(layer.key_cache) + at;
    for (int32_t d = 0; d < layer.head_dim; ++d) buffer[d] = e4m3_to_f32(row[d]) * scale;
  }
  return buffer;
}

struct LatentItem {
  const float* q;  // [num_heads, head_dim]: the item's first head
  int32_t num_heads;
  const int32_t* block_table;
  int32_t last_key;  // inclusive; keys from 0
  float* out;        // [num_heads, value_dim]
};

// One query row's block of heads, in tiles of kKeyTile keys, each an online
// softmax update as attention.h's rows have it.
void attend_latent(const PagedKVLayer& layer, const LatentItem& item, float scale, int32_t value_dim, float cache_scale,
                   std::vector<float>& scratch) {
  using cpu::kKeyTile;
  const int32_t hd = layer.head_dim, nh = item.num_heads;
  scratch.resize(static_cast<size_t>(kKeyTile) * hd + static_cast<size_t>(nh) * (kKeyTile + value_dim + 2));
  float* widened = scratch.data();                                // [kKeyTile, hd]
  float* scores = widened + static_cast<int64_t>(kKeyTile) * hd;  // [nh, kKeyTile]
  float* acc = scores + static_cast<int64_t>(nh) * kKeyTile;      // [nh, value_dim]
  float* run_max = acc + static_cast<int64_t>(nh) * value_dim;    // [nh]
  float* denom = run_max + nh;                                    // [nh]
  std::fill(acc, acc + static_cast<int64_t>(nh) * value_dim, 0.0f);
  std::fill(run_max, run_max + nh, -std::numeric_limits<float>::infinity());
  std::fill(denom, denom + nh, 0.0f);
  const float* rows[kKeyTile];
  for (int32_t tile = 0; tile <= item.last_key; tile += kKeyTile) {
    const int32_t count = std::min(kKeyTile, item.last_key + 1 - tile);
    for (int32_t j = 0; j < count; ++j) {
      rows[j] = cached_row(layer, item.block_table, tile + j, cache_scale, widened + static_cast<int64_t>(j) * hd);
    }
    for (int32_t h = 0; h < nh; ++h) {
      const float* q = item.q + static_cast<int64_t>(h) * hd;
      float* s = scores + static_cast<int64_t>(h) * kKeyTile;
      for (int32_t j = 0; j < count; ++j) s[j] = dot(q, rows[j], hd) * scale;
      float tile_max = -std::numeric_limits<float>::infinity();
      for (int32_t j = 0; j < count; ++j) tile_max = std::max(tile_max, s[j]);
      const float new_max = std::max(run_max[h], tile_max);
      const float corr =
          run_max[h] == -std::numeric_limits<float>::infinity() ? 0.0f : cpu::exp_poly(run_max[h] - new_max);
      float sum = 0.0f;
      for (int32_t j = 0; j < count; ++j) {
        s[j] = cpu::exp_poly(s[j] - new_max);
        sum += s[j];
      }
      denom[h] = denom[h] * corr + sum;
      run_max[h] = new_max;
      float* a = acc + static_cast<int64_t>(h) * value_dim;
      for (int32_t d = 0; d < value_dim; ++d) a[d] *= corr;
      for (int32_t j = 0; j < count; ++j) {
        const float p = s[j];
        const float* row = rows[j];
        for (int32_t d = 0; d < value_dim; ++d) a[d] += p * row[d];
      }
    }
  }
  for (int32_t h = 0; h < nh; ++h) {
    for (int32_t d = 0; d < value_dim; ++d) {
      item.out[static_cast<int64_t>(h) * value_dim + d] = acc[static_cast<int64_t>(h) * value_dim + d] / denom[h];
    }
  }
}

}  // namespace

void write_latent_cache(const float* rows, const int32_t* slot_mapping, int64_t num_tokens, const PagedKVLayer& layer,
                        float scale) {
  const int32_t hd = layer.head_dim, bs = layer.block_size;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t at = row_offset(layer, slot_mapping[t] / bs, slot_mapping[t] % bs);
    const float* row = rows + t * hd;
    switch (layer.dtype) {
      case DType::kF32:
        std::memcpy(static_cast<float*>(layer.key_cache) + at, row, static_cast<size_t>(hd) * sizeof(float));
        break;
      case DType::kBF16:
        for (int32_t d = 0; d < hd; ++d) static_cast<uint16_t*>(layer.key_cache)[at + d] = f32_to_bf16(row[d]);
        break;
      case DType::kF8E4M3:
        for (int32_t d = 0; d < hd; ++d) static_cast<uint8_t*>(layer.key_cache)[at + d] = f32_to_e4m3(row[d] / scale);
        break;
      default:
        VLLM_CHECK(false, "KV cache must be F32, BF16 or FP8 E4M3");
    }
  }
}

void latent_attention(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                      float scale, int32_t value_dim, float* out, ThreadPool& pool, float cache_scale) {
  VLLM_CHECK(value_dim <= layer.head_dim, "latent attention's values are a prefix of its rows");
  const int64_t num_tokens = meta.query_start_loc[meta.num_seqs];
  const int32_t blocks_per_row = (num_heads + kHeadsPerItem - 1) / kHeadsPerItem;
  // Kept across calls (attention runs once per layer per step); the workers
  // read the caller's list through this reference.
  thread_local std::vector<LatentItem> caller_items;
  std::vector<LatentItem>& items = caller_items;
  items.clear();
  items.reserve(static_cast<size_t>(num_tokens * blocks_per_row));
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    const int32_t begin = meta.query_start_loc[s], end = meta.query_start_loc[s + 1];
    for (int32_t r = begin; r < end; ++r) {
      // The query rows are the last (end - begin) tokens of the sequence.
      const int32_t pos = meta.seq_lens[s] - (end - begin) + (r - begin);
      for (int32_t h = 0; h < num_heads; h += kHeadsPerItem) {
        items.push_back({q + (static_cast<int64_t>(r) * num_heads + h) * layer.head_dim,
                         std::min(kHeadsPerItem, num_heads - h),
                         meta.block_tables + static_cast<int64_t>(s) * meta.max_blocks_per_seq, pos,
                         out + (static_cast<int64_t>(r) * num_heads + h) * value_dim});
      }
    }
  }
  // Dealt round-robin: a causal prompt's later rows see more keys.
  pool.run([&](int worker) {
    thread_local std::vector<float> scratch;
    for (size_t i = static_cast<size_t>(worker); i < items.size(); i += static_cast<size_t>(pool.num_threads())) {
      attend_latent(layer, items[i], scale, value_dim, cache_scale, scratch);
    }
  });
}

}  // namespace vllm::kernels
