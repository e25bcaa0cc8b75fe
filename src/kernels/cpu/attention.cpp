#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

inline int64_t block_offset(const PagedKVLayer& layer, int32_t block, int32_t kv_head) {
  return (static_cast<int64_t>(block) * layer.num_kv_heads + kv_head) * layer.block_size * layer.head_dim;
}

// The `group` query heads of one row that share a KV head: scores over keys
// [first_key, last_key], softmax, weighted sum of values.  Each key and value
// is read once for the whole group, and every head's arithmetic is the same
// as it would be alone.  q, out: [group, head_dim]; `scores` is scratch.
void attend_group(const float* q, int32_t group, const PagedKVLayer& layer, const int32_t* block_table, int32_t kv_head,
                  int32_t first_key, int32_t last_key, float scale, std::vector<float>& scores, float* out) {
  const int32_t hd = layer.head_dim;
  const int32_t bs = layer.block_size;
  const int32_t n = last_key - first_key + 1;
  // Scratch: [group, n] probabilities, then the group's 1 / denominators.
  const size_t num_probs = static_cast<size_t>(group) * static_cast<size_t>(n);
  if (scores.size() < num_probs + static_cast<size_t>(group)) scores.resize(num_probs + static_cast<size_t>(group));
  float* inv_denom = scores.data() + num_probs;
  // A block's keys for one head are a [block_size, head_dim] matrix: score
  // the group's queries against it with one call to the dot-product kernels.
  const cpu::DotTable& dot = cpu::active_dot_table();
  for (int32_t start = first_key - first_key % bs; start <= last_key; start += bs) {
    const float* keys = layer.key_cache + block_offset(layer, block_table[start / bs], kv_head);
    const int32_t from = std::max(start, first_key);
    const int32_t to = std::min(start + bs - 1, last_key);
    dot.f32(q, group, keys + static_cast<int64_t>(from - start) * hd, to - from + 1, hd,
            scores.data() + (from - first_key), n);
  }
  for (int32_t g = 0; g < group; ++g) {
    float* s = scores.data() + static_cast<size_t>(g) * static_cast<size_t>(n);
    float max_score = -std::numeric_limits<float>::infinity();
    for (int32_t i = 0; i < n; ++i) {
      s[i] *= scale;
      max_score = std::max(max_score, s[i]);
    }
    float denom = 0.0f;
    for (int32_t i = 0; i < n; ++i) {
      s[i] = std::exp(s[i] - max_score);
      denom += s[i];
    }
    inv_denom[g] = 1.0f / denom;
  }
  std::fill(out, out + static_cast<int64_t>(group) * hd, 0.0f);
  for (int32_t pos = first_key; pos <= last_key; ++pos) {
    const float* v =
        layer.value_cache + block_offset(layer, block_table[pos / bs], kv_head) + static_cast<int64_t>(pos % bs) * hd;
    for (int32_t g = 0; g < group; ++g) {
      const float p = scores[static_cast<size_t>(g) * static_cast<size_t>(n) + static_cast<size_t>(pos - first_key)];
      float* __restrict o = out + static_cast<int64_t>(g) * hd;
      for (int32_t d = 0; d < hd; ++d) o[d] += p * v[d];
    }
  }
  for (int32_t g = 0; g < group; ++g) {
    for (int32_t d = 0; d < hd; ++d) out[static_cast<int64_t>(g) * hd + d] *= inv_denom[g];
  }
}

}  // namespace

void write_kv_cache(const float* k, const float* v, const int32_t* slot_mapping, int64_t num_tokens,
                    const PagedKVLayer& layer) {
  const int64_t hd = layer.head_dim;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int32_t slot = slot_mapping[t];
    const int32_t block = slot / layer.block_size;
    const int32_t offset = slot % layer.block_size;
    for (int32_t h = 0; h < layer.num_kv_heads; ++h) {
      const int64_t dst = block_offset(layer, block, h) + static_cast<int64_t>(offset) * hd;
      const int64_t src = (t * layer.num_kv_heads + h) * hd;
      std::memcpy(layer.key_cache + dst, k + src, static_cast<size_t>(hd) * sizeof(float));
      std::memcpy(layer.value_cache + dst, v + src, static_cast<size_t>(hd) * sizeof(float));
    }
  }
}

void paged_attention(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                     float scale, int32_t sliding_window, float* out, ThreadPool& pool) {
  const int64_t num_tokens = meta.query_start_loc[meta.num_seqs];
  const int32_t group = num_heads / layer.num_kv_heads;
  const int32_t hd = layer.head_dim;
  // Row -> sequence, so that (row, head) pairs can be split evenly over threads.
  std::vector<int32_t> row_seq(static_cast<size_t>(num_tokens));
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    for (int32_t r = meta.query_start_loc[s]; r < meta.query_start_loc[s + 1]; ++r) row_seq[static_cast<size_t>(r)] = s;
  }
  const int32_t num_kv_heads = layer.num_kv_heads;
  const int64_t num_items = num_tokens * num_kv_heads;
  // Items dealt round-robin rather than in contiguous ranges: a causal
  // prompt's later rows attend to more keys, so contiguous halves would leave
  // one thread with most of the work.
  pool.run([&](int worker) {
    std::vector<float> scores;
    for (int64_t item = worker; item < num_items; item += pool.num_threads()) {
      const int64_t row = item / num_kv_heads;
      const int32_t kv_head = static_cast<int32_t>(item % num_kv_heads);
      const int32_t seq = row_seq[static_cast<size_t>(row)];
      const int32_t q_len = meta.query_start_loc[seq + 1] - meta.query_start_loc[seq];
      const int32_t seq_len = meta.seq_lens[seq];
      // The query rows are the last q_len tokens of the sequence.
      const int32_t pos = seq_len - q_len + static_cast<int32_t>(row - meta.query_start_loc[seq]);
      const int32_t first_key = sliding_window > 0 ? std::max(0, pos - sliding_window + 1) : 0;
      const int32_t* block_table = meta.block_tables + static_cast<int64_t>(seq) * meta.max_blocks_per_seq;
      const int64_t first_head = row * num_heads + static_cast<int64_t>(kv_head) * group;
      attend_group(q + first_head * hd, group, layer, block_table, kv_head, first_key, pos, scale, scores,
                   out + first_head * hd);
    }
  });
}

}  // namespace vllm::kernels
