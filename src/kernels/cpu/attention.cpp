#include <algorithm>
#include <array>
#include <vector>

#include "base/logging.h"
#include "kernels/cpu/e4m3_widening.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

inline int64_t block_offset(const PagedKVLayer& layer, int32_t block, int32_t kv_head) {
  return (static_cast<int64_t>(block) * layer.num_kv_heads + kv_head) * layer.block_size * layer.head_dim;
}

int64_t element_key_offset(int32_t d, int32_t j, int32_t block_size) {
  return static_cast<int64_t>(d) * block_size + j;
}
int64_t element_value_offset(int32_t c, int32_t) { return c; }

// Each token's keys and values, `store`d as T, in their slots.
template <typename T, int64_t (*KeyOffset)(int32_t, int32_t, int32_t), int64_t (*ValueOffset)(int32_t, int32_t),
          typename StoreKey, typename StoreValue>
void write_slots(const float* k, const float* v, const int32_t* slot_mapping, int64_t num_tokens,
                 const PagedKVLayer& layer, const StoreKey& store_key, const StoreValue& store_value) {
  const int32_t hd = layer.head_dim, bs = layer.block_size;
  T* keys = static_cast<T*>(layer.key_cache);
  T* values = static_cast<T*>(layer.value_cache);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int32_t block = slot_mapping[t] / bs;
    const int32_t offset = slot_mapping[t] % bs;
    for (int32_t h = 0; h < layer.num_kv_heads; ++h) {
      const int64_t base = block_offset(layer, block, h);
      const float* key = k + (t * layer.num_kv_heads + h) * hd;
      const float* value = v + (t * layer.num_kv_heads + h) * hd;
      for (int32_t d = 0; d < hd; ++d) keys[base + KeyOffset(d, offset, bs)] = store_key(key[d]);
      T* value_row = values + base + static_cast<int64_t>(offset) * hd;
      for (int32_t d = 0; d < hd; ++d) value_row[ValueOffset(d, hd)] = store_value(value[d]);
    }
  }
}

}  // namespace

void write_kv_cache(const float* k, const float* v, const int32_t* slot_mapping, int64_t num_tokens,
                    const PagedKVLayer& layer, const KVScales& scales) {
  switch (layer.dtype) {
    case DType::kF32: {
      const auto as_is = [](float x) { return x; };
      return write_slots<float, element_key_offset, element_value_offset>(k, v, slot_mapping, num_tokens, layer, as_is,
                                                                          as_is);
    }
    case DType::kBF16:
      VLLM_CHECK(layer.head_dim % 2 == 0, "a BF16 KV cache needs an even head_dim");
      return write_slots<uint16_t, cpu::bf16_key_offset, cpu::bf16_value_offset>(k, v, slot_mapping, num_tokens, layer,
                                                                                 f32_to_bf16, f32_to_bf16);
    case DType::kF8E4M3:
      // As vLLM stores an FP8 cache: x / scale to the nearest E4M3 number, saturated.
      return write_slots<uint8_t, element_key_offset, element_value_offset>(
          k, v, slot_mapping, num_tokens, layer, [&](float x) { return f32_to_e4m3(x / scales.key); },
          [&](float x) { return f32_to_e4m3(x / scales.value); });
    default:
      VLLM_CHECK(false, "KV cache must be F32, BF16 or FP8 E4M3");
  }
}

namespace {

// paged_attention on matrix units: each sequence's query rows (token by
// token, the group's heads of each) in blocks of up to kAttentionBlockRows,
// per KV head; the sequences with a block table in `tables` (per sequence,
// null: not here), read through it.
void attend_in_blocks(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                      const std::vector<const int32_t*>& tables, float scale, float value_scale, int32_t sliding_window,
                      float softcap, float* out, ThreadPool& pool, cpu::AttentionBlockFn attend_block) {
  const int32_t group = num_heads / layer.num_kv_heads;
  const int32_t hd = layer.head_dim, num_kv_heads = layer.num_kv_heads;
  struct Block {
    int32_t seq, first_row;  // rows of the sequence: token * group + head within the group
  };
  thread_local std::vector<Block> caller_blocks;
  std::vector<Block>& blocks = caller_blocks;
  blocks.clear();
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    if (tables[static_cast<size_t>(s)] == nullptr) continue;
    const int32_t rows = (meta.query_start_loc[s + 1] - meta.query_start_loc[s]) * group;
    for (int32_t r = 0; r < rows; r += cpu::kAttentionBlockRows) blocks.push_back({s, r});
  }
  const int64_t num_items = static_cast<int64_t>(blocks.size()) * num_kv_heads;
  // Dealt round-robin: a causal prompt's later blocks attend to more keys.
  pool.run([&](int worker) {
    cpu::AttentionBlockArgs args{};
    args.head_dim = hd;
    args.block_size = layer.block_size;
    args.key_cache = layer.key_cache;
    args.value_cache = layer.value_cache;
    args.block_stride = static_cast<int64_t>(num_kv_heads) * layer.block_size * hd;
    args.scale = scale;
    args.softcap = softcap;
    args.value_scale = value_scale;
    for (int64_t item = worker; item < num_items; item += pool.num_threads()) {
      const Block& block = blocks[static_cast<size_t>(item / num_kv_heads)];
      const int32_t kv_head = static_cast<int32_t>(item % num_kv_heads);
      const int32_t seq = block.seq;
      const int32_t q_start = meta.query_start_loc[seq];
      const int32_t q_len = meta.query_start_loc[seq + 1] - q_start;
      const int32_t seq_len = meta.seq_lens[seq];
      args.head_offset = block_offset(layer, 0, kv_head);
      args.block_table = tables[static_cast<size_t>(seq)];
      args.rows = std::min(cpu::kAttentionBlockRows, q_len * group - block.first_row);
      for (int32_t r = 0; r < args.rows; ++r) {
        const int32_t token = (block.first_row + r) / group, head = (block.first_row + r) % group;
        // The query rows are the last q_len tokens of the sequence.
        const int32_t pos = seq_len - q_len + token;
        const int64_t at = ((static_cast<int64_t>(q_start) + token) * num_heads + kv_head * group + head) * hd;
        args.q[r] = q + at;
        args.out[r] = out + at;
        args.first_key[r] = sliding_window > 0 ? std::max(0, pos - sliding_window + 1) : 0;
        args.last_key[r] = pos;
      }
      attend_block(args);
    }
  });
}

// The keys and values of the sequences `staged` of an FP8 cache, widened
// into a BF16 cache of their own blocks only (the BF16 layouts), with a
// block table per sequence.
struct Bf16Staging {
  std::vector<uint16_t> keys, values;
  std::vector<int32_t> block_tables;  // [staged sequences][max blocks]
  PagedKVLayer layer;
};

void stage_as_bf16(const PagedKVLayer& fp8, const AttentionMetadata& meta, const std::vector<int32_t>& staged,
                   Bf16Staging& staging, ThreadPool& pool) {
  const int32_t bs = fp8.block_size, hd = fp8.head_dim, heads = fp8.num_kv_heads;
  int32_t max_blocks = 0;
  for (int32_t s : staged) max_blocks = std::max(max_blocks, (meta.seq_lens[s] + bs - 1) / bs);
  // Staging block i is a copy of cache block sources[i].
  std::vector<int32_t> sources;
  staging.block_tables.assign(staged.size() * static_cast<size_t>(max_blocks), 0);
  for (size_t i = 0; i < staged.size(); ++i) {
    const int32_t s = staged[i];
    for (int32_t b = 0; b < (meta.seq_lens[s] + bs - 1) / bs; ++b) {
      staging.block_tables[i * static_cast<size_t>(max_blocks) + static_cast<size_t>(b)] =
          static_cast<int32_t>(sources.size());
      sources.push_back(meta.block_tables[static_cast<int64_t>(s) * meta.max_blocks_per_seq + b]);
    }
  }
  const size_t elements = sources.size() * static_cast<size_t>(heads) * bs * hd;
  staging.keys.resize(elements);
  staging.values.resize(elements);
  staging.layer = {
      staging.keys.data(), staging.values.data(), DType::kBF16, static_cast<int32_t>(sources.size()), bs, heads, hd};
  const std::array<uint16_t, 256>& words = cpu::kE4m3Bf16Words;
  const auto* keys = static_cast<const uint8_t*>(fp8.key_cache);
  const auto* values = static_cast<const uint8_t*>(fp8.value_cache);
  pool.parallel_for(static_cast<int64_t>(sources.size()) * heads, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const auto to = static_cast<int32_t>(item / heads), from = sources[static_cast<size_t>(to)];
      const auto head = static_cast<int32_t>(item % heads);
      const uint8_t* key_codes = keys + block_offset(fp8, from, head);
      const uint8_t* value_codes = values + block_offset(fp8, from, head);
      uint16_t* key_words = staging.keys.data() + block_offset(staging.layer, to, head);
      uint16_t* value_words = staging.values.data() + block_offset(staging.layer, to, head);
      for (int32_t d = 0; d < hd; ++d) {
        for (int32_t j = 0; j < bs; ++j) {
          key_words[cpu::bf16_key_offset(d, j, bs)] = words[key_codes[element_key_offset(d, j, bs)]];
        }
      }
      for (int32_t j = 0; j < bs; ++j) {
        for (int32_t c = 0; c < hd; ++c) {
          value_words[static_cast<int64_t>(j) * hd + cpu::bf16_value_offset(c, hd)] =
              words[value_codes[static_cast<int64_t>(j) * hd + c]];
        }
      }
    }
  });
}

// Attention over an FP8 cache on matrix units.  A sequence with more query
// rows than one block reads each key tile once per block of rows, so its
// keys and values are widened once into a BF16 copy and attended there
// (the BF16 tiles: the same operands, so the same bits), as long as the
// copies fit kMaxStagingBytes; the others widen each tile as they read it.
constexpr int64_t kMaxStagingBytes = int64_t{256} << 20;  // per step and layer, kept per calling thread

void attend_fp8_in_blocks(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                          float scale, float value_scale, int32_t sliding_window, float softcap, float* out,
                          ThreadPool& pool, const cpu::AttentionTable& table) {
  const int32_t group = num_heads / layer.num_kv_heads;
  std::vector<const int32_t*> direct(static_cast<size_t>(meta.num_seqs)), staged_tables(direct.size(), nullptr);
  std::vector<int32_t> staged;
  // A staged block's BF16 keys and values, all KV heads.
  const int64_t block_bytes = int64_t{layer.num_kv_heads} * layer.block_size * layer.head_dim * 2 * 2;
  int64_t staging_bytes = 0;
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    const int32_t rows = (meta.query_start_loc[s + 1] - meta.query_start_loc[s]) * group;
    const int64_t bytes = (meta.seq_lens[s] + layer.block_size - 1) / layer.block_size * block_bytes;
    if (rows > cpu::kAttentionBlockRows && staging_bytes + bytes <= kMaxStagingBytes) {
      staged.push_back(s);
      staging_bytes += bytes;
    } else {
      direct[static_cast<size_t>(s)] = meta.block_tables + static_cast<int64_t>(s) * meta.max_blocks_per_seq;
    }
  }
  attend_in_blocks(q, num_heads, layer, meta, direct, scale, value_scale, sliding_window, softcap, out, pool,
                   table.attend_block_fp8);
  if (staged.empty()) return;
  thread_local Bf16Staging staging;
  stage_as_bf16(layer, meta, staged, staging, pool);
  const size_t max_blocks = staging.block_tables.size() / staged.size();
  for (size_t i = 0; i < staged.size(); ++i) {
    staged_tables[static_cast<size_t>(staged[i])] = staging.block_tables.data() + i * max_blocks;
  }
  attend_in_blocks(q, num_heads, staging.layer, meta, staged_tables, scale, value_scale, sliding_window, softcap, out,
                   pool, table.attend_block_bf16);
}

}  // namespace

void paged_attention(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                     float scale, int32_t sliding_window, float softcap, float* out, ThreadPool& pool,
                     const KVScales& scales) {
  const cpu::AttentionTable& table = cpu::active_attention_table();
  // An FP8 cache's codes times its scales: k_scale goes into the scores'
  // scale, v_scale onto the output (both 1 for the other dtypes).
  const bool fp8 = layer.dtype == DType::kF8E4M3;
  const float key_scale = fp8 ? scale * scales.key : scale, value_scale = fp8 ? scales.value : 1.0f;
  if (const cpu::AttentionBlockFn block = table.block_fn(layer.dtype, layer.head_dim)) {
    if (fp8) {
      return attend_fp8_in_blocks(q, num_heads, layer, meta, key_scale, value_scale, sliding_window, softcap, out, pool,
                                  table);
    }
    std::vector<const int32_t*> tables(static_cast<size_t>(meta.num_seqs));
    for (int32_t s = 0; s < meta.num_seqs; ++s) {
      tables[static_cast<size_t>(s)] = meta.block_tables + static_cast<int64_t>(s) * meta.max_blocks_per_seq;
    }
    return attend_in_blocks(q, num_heads, layer, meta, tables, key_scale, value_scale, sliding_window, softcap, out,
                            pool, block);
  }
  const int32_t group = num_heads / layer.num_kv_heads;
  const int32_t hd = layer.head_dim;
  // Work items: up to kRowsPerItem consecutive query rows of a sequence (one
  // row with a sliding window, whose first key moves with the row) and one
  // KV head, so that verifying drafts or a prompt chunk reads each key and
  // value once per item, not per row.  The list is kept per thread across
  // calls (attention runs once per layer per step); the workers read the
  // caller's through a reference, not their own thread_local copy.
  constexpr int32_t kRowsPerItem = 8;
  const int32_t rows_per_item = sliding_window > 0 ? 1 : kRowsPerItem;
  struct RowBlock {
    int32_t seq, first_row, rows;
  };
  thread_local std::vector<RowBlock> caller_blocks;
  std::vector<RowBlock>& blocks = caller_blocks;
  blocks.clear();
  for (int32_t s = 0; s < meta.num_seqs; ++s) {
    for (int32_t r = meta.query_start_loc[s]; r < meta.query_start_loc[s + 1]; r += rows_per_item) {
      blocks.push_back({s, r, std::min(rows_per_item, meta.query_start_loc[s + 1] - r)});
    }
  }
  const cpu::AttentionRowFn attend_row = layer.dtype == DType::kBF16     ? table.attend_row_bf16
                                         : layer.dtype == DType::kF8E4M3 ? table.attend_row_fp8
                                                                         : table.attend_row;
  const int32_t num_kv_heads = layer.num_kv_heads;
  const int64_t num_items = static_cast<int64_t>(blocks.size()) * num_kv_heads;
  // Items dealt round-robin rather than in contiguous ranges: a causal
  // prompt's later rows attend to more keys, so contiguous halves would leave
  // one thread with most of the work.
  pool.run([&](int worker) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(cpu::attention_scratch_floats(rows_per_item * group, hd)));
    cpu::AttentionRowArgs args{};
    args.group = group;
    args.row_stride = static_cast<int64_t>(num_heads) * hd;
    args.head_dim = hd;
    args.block_size = layer.block_size;
    args.key_cache = layer.key_cache;
    args.value_cache = layer.value_cache;
    args.block_stride = static_cast<int64_t>(num_kv_heads) * layer.block_size * hd;
    args.scale = key_scale;
    args.softcap = softcap;
    args.value_scale = value_scale;
    args.scratch = scratch.data();
    for (int64_t item = worker; item < num_items; item += pool.num_threads()) {
      const RowBlock& block = blocks[static_cast<size_t>(item / num_kv_heads)];
      const int32_t kv_head = static_cast<int32_t>(item % num_kv_heads);
      const int32_t seq = block.seq;
      const int32_t q_len = meta.query_start_loc[seq + 1] - meta.query_start_loc[seq];
      // The query rows are the last q_len tokens of the sequence.
      const int32_t pos = meta.seq_lens[seq] - q_len + (block.first_row - meta.query_start_loc[seq]);
      const int64_t first_head =
          static_cast<int64_t>(block.first_row) * num_heads + static_cast<int64_t>(kv_head) * group;
      args.q = q + first_head * hd;
      args.out = out + first_head * hd;
      args.rows = block.rows;
      args.head_offset = block_offset(layer, 0, kv_head);
      args.block_table = meta.block_tables + static_cast<int64_t>(seq) * meta.max_blocks_per_seq;
      args.first_key = sliding_window > 0 ? std::max(0, pos - sliding_window + 1) : 0;
      args.last_key = pos;
      attend_row(args);
    }
  });
}

}  // namespace vllm::kernels
