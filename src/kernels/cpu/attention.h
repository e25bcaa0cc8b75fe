// Attention of a few consecutive query rows of one sequence, each row's
// group of heads (those sharing one KV head), over their keys, per ISA.  Keys are cached transposed within a block
// ([head_dim][block_size] per block and KV head) so that a vector of scores
// over consecutive keys is a chain of FMAs; values are [block_size][head_dim].
//
// The arithmetic is defined once (attention_blocks.h) and is the same in
// every ISA, so results agree bit for bit across ISAs, and a row's result
// depends only on its own keys, never on the batch, the chunking of its
// prompt, or the thread that runs it:
//  - keys go in tiles of kKeyTile absolute positions, each tile one online
//    softmax update (running max m, denominator l, output accumulator O);
//  - a score is two FMA chains over even and odd dimensions, summed, times
//    the scale;
//  - exponentials use one polynomial (exp_poly), evaluated lane-wise.
// AMX's tiles (AttentionBlockArgs below) are a second arithmetic for a BF16
// cache, batch-invariant as well, and bounded against float64 alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace vllm::kernels::cpu {

inline constexpr int32_t kKeyTile = 64;

struct AttentionRowArgs {
  // Row r's queries (token first + r), [group, head_dim] each, at q + r * row_stride.
  const float* q;
  int32_t group;
  // Consecutive tokens of one sequence read together, so that their heads
  // share each key and value load; row r sees keys first_key .. last_key + r.
  // A key past a row's last weighs exactly zero in it (its score and
  // weight are 0, a tile with none of its keys leaves its sums as they
  // are), so each row's result is the one it gets alone, bit for bit.
  int32_t rows = 1;
  int64_t row_stride = 0;  // floats between consecutive rows' q (and out)
  int32_t head_dim;
  int32_t block_size;
  const void* key_cache;    // the layer's: float, uint16_t BF16 or uint8_t FP8 (AttentionTable picks the function)
  const void* value_cache;  // same layout sizes
  int64_t block_stride;     // elements per block (all KV heads)
  int64_t head_offset;      // elements from a block's start to this KV head's slice
  const int32_t* block_table;
  int32_t first_key, last_key;  // inclusive, of row 0
  float scale;
  float softcap;             // > 0: scores become softcap * tanh(score / softcap)
  float value_scale = 1.0f;  // the output's factor: an FP8 cache's v_scale (its k_scale is in `scale`)
  float* out;                // as q
  float* scratch;            // attention_scratch_floats(rows * group, head_dim)
};

// Where a BF16 cache keeps element (dimension d, key j) of a block's keys
// and dimension c of a value row (kernels.h has the F32 layouts): a key's
// dimensions d and d + 1 share a 32-bit word ([head_dim / 2][block_size][2]),
// and in each whole 32-dimension block of a value row dimensions c and c + 16
// do, so that one load and a shift or a mask give two float32 vectors (a
// value row's last dimensions, when fewer than 32, stay in order).  head_dim
// must be even.
inline int64_t bf16_key_offset(int32_t d, int32_t j, int32_t block_size) {
  return (static_cast<int64_t>(d / 2) * block_size + j) * 2 + d % 2;
}
inline bool bf16_value_in_order(int32_t c, int32_t head_dim) { return c / 32 * 32 + 32 > head_dim; }
inline int64_t bf16_value_offset(int32_t c, int32_t head_dim) {
  if (bf16_value_in_order(c, head_dim)) return c;
  const int32_t block = c / 32 * 32, r = c - block;
  return block + (r % 16) * 2 + r / 16;
}

inline int64_t attention_scratch_floats(int32_t heads, int32_t head_dim) {
  return static_cast<int64_t>(heads) * (kKeyTile + head_dim + 3);
}

using AttentionRowFn = void (*)(const AttentionRowArgs& args);

// Up to kAttentionBlockRows query rows of one sequence against one KV head
// of a BF16 or FP8 cache, on matrix units (the AMX tiles): each row is one token's
// query for one head of the KV head's group, with its own key range.  A
// row's result depends only on its own query and keys, never on the rows
// beside it in the block: the key tiles are fixed by absolute positions,
// and a key outside a row's range weighs exactly zero in it.
inline constexpr int32_t kAttentionBlockRows = 16;

struct AttentionBlockArgs {
  int32_t rows;
  const float* q[kAttentionBlockRows];  // each [head_dim]
  float* out[kAttentionBlockRows];
  int32_t first_key[kAttentionBlockRows], last_key[kAttentionBlockRows];  // inclusive: all the block reads
  int32_t head_dim;
  int32_t block_size;
  const void* key_cache;  // uint16_t BF16 or uint8_t FP8, as the function taking the args reads
  const void* value_cache;
  int64_t block_stride;
  int64_t head_offset;
  const int32_t* block_table;
  float scale;
  float softcap;
  float value_scale = 1.0f;  // as AttentionRowArgs'
};

using AttentionBlockFn = void (*)(const AttentionBlockArgs& args);

struct AttentionTable {
  AttentionRowFn attend_row;       // F32 KV cache
  AttentionRowFn attend_row_bf16;  // BF16 KV cache, widened on load
  AttentionRowFn attend_row_fp8;   // FP8 E4M3 KV cache (the F32 layouts, a byte each), widened on load
  // BF16 and FP8 KV caches on matrix units, where the ISA has them (else
  // null), for heads of a multiple of 32 dimensions.
  AttentionBlockFn attend_block_bf16 = nullptr;
  AttentionBlockFn attend_block_fp8 = nullptr;

  // The block function for a cache of `dtype` and heads of head_dim, or null.
  AttentionBlockFn block_fn(DType dtype, int32_t head_dim) const {
    if (head_dim % 32 != 0) return nullptr;
    return dtype == DType::kBF16 ? attend_block_bf16 : dtype == DType::kF8E4M3 ? attend_block_fp8 : nullptr;
  }
};

AttentionTable ref_attention_table();
AttentionTable avx2_attention_table();
AttentionTable avx512_attention_table();
AttentionTable amx_attention_table();

// e^x for x <= 87 (softmax arguments and SwiGLU's e^-x; below -87 it returns
// a tiny positive number, never 0: callers zero masked lanes themselves), as a Cody-Waite
// reduction and a degree-6 polynomial, written with the operations every
// ISA has lane-wise (FMA, round to nearest even, exponent bits) so that
// scalar and vector results are identical.
inline float exp_poly(float x) {
  x = std::fmax(x, -87.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return y * two_n;
}

}  // namespace vllm::kernels::cpu
