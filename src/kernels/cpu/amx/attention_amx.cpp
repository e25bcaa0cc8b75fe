// Compiled with -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16; reached only
// through the dispatch table.  Attention over a BF16 or FP8 KV cache on the
// AMX tiles (attention.h's AttentionBlockArgs): a block of up to 16 query
// rows against tiles of 64 keys, scores Q.K^T and the weighted values P.V as
// tile products, the online softmax between them in AVX-512.
//
// Precision: the keys and values are BF16 already (E4M3 numbers are BF16
// numbers too: an FP8 cache's are widened into the operands exactly), but the queries and the
// softmax weights are FP32.  Each is split into two BF16 parts, hi = bf16(x)
// and lo = bf16(x - hi), and both parts are multiplied (x = hi + lo to about
// 2^-17 of x): twice the tile products of plain BF16 operands, which the
// tiles have plenty of, for scores and outputs as close to the FP32 vector
// path's as that path is to float64 (attention_test bounds both alike).
//
// Batch invariance: a row's keys go in tiles of absolute positions
// [64 t, 64 t + 64); every key outside the row's range has weight exactly 0
// in it (the key and value slots past the rows' keys are read as zeros, so
// no stale NaN meets a zero weight), and a tile with none of the row's keys
// leaves its running sums untouched.  So a row gives the same bits alone (a
// decode step) and in a prefill block with other rows.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "base/aligned_buffer.h"
#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/avx512/avx512_vec.h"
#include "kernels/cpu/vec_math.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int32_t kRows = kAttentionBlockRows;
constexpr int32_t kTileKeys = kKeyTile;  // 64: four 16-key score tiles, two 32-key value chunks
static_assert(kTileKeys == 64);
constexpr int32_t kChunk = 32;  // BF16 elements one tile row holds: the depth of one product
constexpr int64_t kRowBytes = 64;

// tmm0-3 accumulate (scores of 4 x 16 keys, or outputs of 4 x 16 dimensions),
// tmm4-5 hold the hi and lo parts of the left operand (queries or weights),
// tmm6-7 the right operand (keys or values), alternating.
amx::TileConfig attention_config(int32_t rows) {
  amx::TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.bytes_per_row[t] = kRowBytes;
    c.rows[t] = t < 6 ? static_cast<uint8_t>(rows) : 16;
  }
  return c;
}

// One thread's working set for a block, in one 64-byte aligned buffer
// (every part a multiple of 64 bytes), grown to the largest head seen.
class Scratch {
 public:
  uint16_t* query;        // [hi, lo][head_dim / 32][16 rows][32]
  uint16_t* keys;         // [head_dim / 2][64 keys][2]
  uint16_t* values;       // [32 key pairs][head_dim][2]
  uint16_t* probs;        // [hi, lo][2 chunks][16 rows][32]
  float* scores;          // [16 rows][64]
  float* tile_out;        // [16 rows][head_dim]
  float* acc;             // [16 rows][head_dim]
  const uint16_t* zeros;  // [head_dim / 2][32], never written: a score tile's operand of no keys

  void size_for(int32_t head_dim) {
    if (head_dim <= head_dim_) return;
    const auto hd = static_cast<size_t>(head_dim);
    const size_t pair_tile_bytes = hd * kTileKeys * 2, row_bytes = hd * kRows * 4;
    buffer_ = AlignedBuffer(2 * hd * kRows * 2 + 2 * pair_tile_bytes + 2 * 2 * kRows * kChunk * 2 +
                            size_t{kRows} * kTileKeys * 4 + 2 * row_bytes + hd * 32);
    char* at = buffer_.as<char>();
    const auto take = [&at](size_t bytes) { return std::exchange(at, at + bytes); };
    query = reinterpret_cast<uint16_t*>(take(2 * hd * kRows * 2));
    keys = reinterpret_cast<uint16_t*>(take(pair_tile_bytes));
    values = reinterpret_cast<uint16_t*>(take(pair_tile_bytes));
    probs = reinterpret_cast<uint16_t*>(take(2 * 2 * kRows * kChunk * 2));
    scores = reinterpret_cast<float*>(take(size_t{kRows} * kTileKeys * 4));
    tile_out = reinterpret_cast<float*>(take(row_bytes));
    acc = reinterpret_cast<float*>(take(row_bytes));
    zeros = reinterpret_cast<const uint16_t*>(take(hd * 32));  // AlignedBuffer starts zeroed
    head_dim_ = head_dim;
  }

 private:
  AlignedBuffer buffer_;
  int32_t head_dim_ = 0;
};

// x as BF16 hi and lo parts (32 values: two vectors, in order).
void split_bf16(__m512 x0, __m512 x1, uint16_t* hi, uint16_t* lo) {
  const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
  const __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
  const __m512 h1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
  _mm512_store_si512(hi, h);
  _mm512_store_si512(lo, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0))));
}

// The block's queries times the scale, split, in tile order.
void prepare_queries(const AttentionBlockArgs& a, uint16_t* query) {
  const int32_t chunks = a.head_dim / kChunk;
  const __m512 scale = _mm512_set1_ps(a.scale);
  for (int32_t r = 0; r < a.rows; ++r) {
    for (int32_t c = 0; c < chunks; ++c) {
      const float* q = a.q[r] + c * kChunk;
      uint16_t* hi = query + (static_cast<int64_t>(c) * kRows + r) * kChunk;
      split_bf16(_mm512_mul_ps(_mm512_loadu_ps(q), scale), _mm512_mul_ps(_mm512_loadu_ps(q + 16), scale), hi,
                 hi + static_cast<int64_t>(chunks) * kRows * kChunk);
    }
  }
}

__mmask16 lanes_between(int32_t first, int32_t lo, int32_t hi) {
  // Lanes holding positions [lo, hi) of the 16 from `first`.
  const int32_t b = std::clamp(lo - first, 0, 16), e = std::clamp(hi - first, 0, 16);
  return static_cast<__mmask16>(((1u << e) - 1u) & ~((1u << b) - 1u));
}

// Where the right operands of the tile's four 16-key score tiles are: the
// rows of dimension pairs (2 i, 2 i + 1) of group t's 16 keys start at
// base[t] + i * pitch[t] (elements), 64 bytes each.
struct KeyOperands {
  const uint16_t* base[4];
  int64_t pitch[4];
};

// 16 codes from `even` and 16 from `odd` as the BF16 words of a tile
// operand: lane i of the result holds even[i]'s in its low half and
// odd[i]'s in its high half.  The magnitudes' words come from the first
// half of kE4m3Bf16Words (e4m3_widening.h) by two-table permutes, 32 codes
// at once.  Codes outside each one's lanes are not read, and zero.
__m512i e4m3_pairs(const uint8_t* even, __mmask16 even_lanes, const uint8_t* odd, __mmask16 odd_lanes) {
  const __m256i codes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_maskz_loadu_epi8(even_lanes, even)),
                                                _mm_maskz_loadu_epi8(odd_lanes, odd), 1);
  const __m512i c = _mm512_cvtepu8_epi16(codes);
  const auto* table = reinterpret_cast<const __m512i*>(kE4m3Bf16Words.data());
  const __m512i below_64 = _mm512_permutex2var_epi16(_mm512_loadu_si512(table), c, _mm512_loadu_si512(table + 1));
  const __m512i from_64 = _mm512_permutex2var_epi16(_mm512_loadu_si512(table + 2), c, _mm512_loadu_si512(table + 3));
  const __m512i magnitude =
      _mm512_mask_blend_epi16(_mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40)), below_64, from_64);
  const __m512i words = _mm512_or_si512(magnitude, _mm512_slli_epi16(_mm512_and_si512(c, _mm512_set1_epi16(0x80)), 8));
  // Words 0-15 are even's, 16-31 odd's: interleaved.
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, words);
}

// The cache slice of key or value `pos`'s block for the block's KV head.
template <typename T>
const T* block_slice(const AttentionBlockArgs& a, const void* cache, int32_t pos) {
  return static_cast<const T*>(cache) + a.block_table[pos / a.block_size] * a.block_stride + a.head_offset;
}

// Keys [lo, hi) of the tile from `tile`, every other key zero.  A group of
// 16 keys with none of them is the zero rows.  In a BF16 cache, a group all
// inside [lo, hi) and in one block is read where the cache holds it
// ([head_dim / 2][block_size][2]: already the operand's layout); the rest,
// and every group of an FP8 cache ([head_dim][block_size] codes), are
// gathered into `keys` ([head_dim / 2][64][2]).
template <typename T>
KeyOperands key_operands(const AttentionBlockArgs& a, int32_t tile, int32_t lo, int32_t hi, const uint16_t* zeros,
                         uint16_t* keys) {
  constexpr bool kFp8 = std::is_same_v<T, uint8_t>;
  const int32_t pair_rows = a.head_dim / 2;
  KeyOperands ops;
  for (int32_t t = 0; t < 4; ++t) {
    const int32_t group = tile + 16 * t;
    if (group + 16 <= lo || group >= hi) {
      ops.base[t] = zeros;
      ops.pitch[t] = 32;
    } else if (!kFp8 && group >= lo && group + 16 <= hi && a.block_size % 16 == 0) {
      ops.base[t] = block_slice<uint16_t>(a, a.key_cache, group) + 2 * (group % a.block_size);
      ops.pitch[t] = 2 * static_cast<int64_t>(a.block_size);
    } else {
      auto* dst = reinterpret_cast<uint32_t*>(keys) + (group - tile);
      for (int32_t i = 0; i < pair_rows; ++i) _mm512_store_si512(dst + i * kTileKeys, _mm512_setzero_si512());
      // The group's keys lie in one block, or (blocks under 16 keys) several.
      for (int32_t pos = std::max(group, lo); pos < std::min(group + 16, hi);) {
        const int32_t offset = pos % a.block_size;
        const int32_t end = std::min({group + 16, hi, pos - offset + a.block_size});
        const __mmask16 lanes = lanes_between(group, pos, end);
        if constexpr (kFp8) {
          // Code (d, key) of the block's slice is at d * block_size + key.
          const uint8_t* src = block_slice<uint8_t>(a, a.key_cache, pos) + offset - (pos - group);
          for (int32_t i = 0; i < pair_rows; ++i) {
            uint32_t* row = dst + i * kTileKeys;
            const __m512i words =
                e4m3_pairs(src + 2 * i * a.block_size, lanes, src + (2 * i + 1) * a.block_size, lanes);
            _mm512_store_si512(row, _mm512_mask_mov_epi32(_mm512_load_si512(row), lanes, words));
          }
        } else {
          // Word (i, key) of the block's slice is at i * block_size + key.
          const auto* src =
              reinterpret_cast<const uint32_t*>(block_slice<uint16_t>(a, a.key_cache, pos)) + offset - (pos - group);
          for (int32_t i = 0; i < pair_rows; ++i) {
            uint32_t* row = dst + i * kTileKeys;
            _mm512_store_si512(row, _mm512_mask_loadu_epi32(_mm512_load_si512(row), lanes, src + i * a.block_size));
          }
        }
        pos = end;
      }
      ops.base[t] = keys + 2 * (group - tile);
      ops.pitch[t] = 2 * kTileKeys;
    }
  }
  return ops;
}

// Values of keys [lo, hi) of the tile (the rest zero) as [32 key pairs][head_dim][2]:
// a 32-key chunk's right operand for 16 dimensions is then 16 rows of 64 bytes.
// A BF16 cache holds a value row's dimensions c and c + 16 (within each 32)
// in one word; an FP8 one holds the row in order.
template <typename T>
void gather_values(const AttentionBlockArgs& a, int32_t tile, int32_t lo, int32_t hi, uint16_t* values) {
  const int32_t hd = a.head_dim;
  const T* rows[kTileKeys];
  for (int32_t j = 0; j < kTileKeys; ++j) {
    const int32_t pos = tile + j;
    rows[j] = pos < lo || pos >= hi
                  ? nullptr
                  : block_slice<T>(a, a.value_cache, pos) + static_cast<int64_t>(pos % a.block_size) * hd;
  }
  if constexpr (std::is_same_v<T, uint8_t>) {
    for (int32_t p = 0; p < kTileKeys / 2; ++p) {
      const uint8_t* even = rows[2 * p];
      const uint8_t* odd = rows[2 * p + 1];
      auto* dst = reinterpret_cast<uint32_t*>(values + static_cast<int64_t>(p) * hd * 2);
      // A row outside [lo, hi) is null: no lanes read, zeros.  (Its address
      // stays null: an offset from null is undefined even if nothing is read.)
      const __mmask16 even_lanes = even ? 0xFFFF : 0, odd_lanes = odd ? 0xFFFF : 0;
      for (int32_t c = 0; c < hd; c += 16) {
        _mm512_store_si512(dst + c,
                           e4m3_pairs(even ? even + c : nullptr, even_lanes, odd ? odd + c : nullptr, odd_lanes));
      }
    }
  } else {
    constexpr __mmask32 kOdd = 0xaaaaaaaau;
    for (int32_t p = 0; p < kTileKeys / 2; ++p) {
      const uint16_t* even = rows[2 * p];
      const uint16_t* odd = rows[2 * p + 1];
      uint16_t* dst = values + static_cast<int64_t>(p) * hd * 2;
      for (int32_t c = 0; c < hd; c += 32) {
        const __m512i w0 = even ? _mm512_loadu_si512(even + c) : _mm512_setzero_si512();
        const __m512i w1 = odd ? _mm512_loadu_si512(odd + c) : _mm512_setzero_si512();
        _mm512_store_si512(dst + 2 * c, _mm512_mask_blend_epi16(kOdd, w0, _mm512_slli_epi32(w1, 16)));
        _mm512_store_si512(dst + 2 * c + 32, _mm512_mask_blend_epi16(kOdd, _mm512_srli_epi32(w0, 16), w1));
      }
    }
  }
}

// tmm0..N-1 += (tmm4 + tmm5) . B_t, the right operand B_t at b[t], its
// rows stride[t] bytes apart; then the next product in k order.
template <int N>
void dot_hi_lo(const uint16_t* const* b, const int64_t* stride) {
  static_assert(N == 2 || N == 4);
  amx::tile_load<6>(b[0], stride[0]);
  amx::tile_dot_bf16<0, 4, 6>();
  amx::tile_dot_bf16<0, 5, 6>();
  amx::tile_load<7>(b[1], stride[1]);
  amx::tile_dot_bf16<1, 4, 7>();
  amx::tile_dot_bf16<1, 5, 7>();
  if constexpr (N == 4) {
    amx::tile_load<6>(b[2], stride[2]);
    amx::tile_dot_bf16<2, 4, 6>();
    amx::tile_dot_bf16<2, 5, 6>();
    amx::tile_load<7>(b[3], stride[3]);
    amx::tile_dot_bf16<3, 4, 7>();
    amx::tile_dot_bf16<3, 5, 7>();
  }
}

template <int N>
void zero_accumulators() {
  amx::tile_zero<0>();
  amx::tile_zero<1>();
  if constexpr (N == 4) {
    amx::tile_zero<2>();
    amx::tile_zero<3>();
  }
}

// tmm0..N-1 to out + 16 t, rows `stride` bytes apart.
template <int N>
void store_accumulators(float* out, int64_t stride) {
  amx::tile_store<0>(out, stride);
  amx::tile_store<1>(out + 16, stride);
  if constexpr (N == 4) {
    amx::tile_store<2>(out + 32, stride);
    amx::tile_store<3>(out + 48, stride);
  }
}

// Scores of the block's rows against the tile's 64 keys, into scores [16][64].
void score_tile(const uint16_t* query, int32_t chunks, const KeyOperands& keys, float* scores) {
  zero_accumulators<4>();
  int64_t stride[4];
  for (int t = 0; t < 4; ++t) stride[t] = keys.pitch[t] * 2;
  for (int32_t c = 0; c < chunks; ++c) {
    amx::tile_load<4>(query + static_cast<int64_t>(c) * kRows * kChunk, kRowBytes);
    amx::tile_load<5>(query + (static_cast<int64_t>(chunks) + c) * kRows * kChunk, kRowBytes);
    const uint16_t* b[4];
    for (int t = 0; t < 4; ++t) b[t] = keys.base[t] + 16 * c * keys.pitch[t];
    dot_hi_lo<4>(b, stride);
  }
  store_accumulators<4>(scores, kTileKeys * 4);
}

// The weights times the values of N (2 or 4) 16-dimension groups from `dim`, into out [16][head_dim].
template <int N>
void weigh_values(const uint16_t* probs, const uint16_t* values, int32_t hd, int32_t dim, float* out) {
  zero_accumulators<N>();
  const int64_t pair_stride = static_cast<int64_t>(hd) * 4;  // bytes from one key pair's row to the next
  for (int32_t c = 0; c < 2; ++c) {
    amx::tile_load<4>(probs + static_cast<int64_t>(c) * kRows * kChunk, kRowBytes);
    amx::tile_load<5>(probs + (2 + static_cast<int64_t>(c)) * kRows * kChunk, kRowBytes);
    const uint16_t* v = values + (static_cast<int64_t>(c) * 16 * hd + dim) * 2;
    const uint16_t* b[4] = {v, v + 32, v + 64, v + 96};
    const int64_t stride[4] = {pair_stride, pair_stride, pair_stride, pair_stride};
    dot_hi_lo<N>(b, stride);
  }
  store_accumulators<N>(out + dim, static_cast<int64_t>(hd) * 4);
}

struct RowState {
  float run_max = -std::numeric_limits<float>::infinity();
  float denom = 0.0f;
  float corr = 0.0f;
  bool active = false;  // the current tile holds some of the row's keys
};

// Row r's online softmax update over the tile: its weights (split) into the
// tile order of probs, zero outside its keys [lo, hi).
void softmax_row(float* s, int32_t tile, int32_t lo, int32_t hi, float softcap, RowState& st, uint16_t* probs,
                 int32_t r) {
  if (softcap > 0) {
    for (int32_t j = lo; j < hi; ++j) s[j - tile] = softcap * std::tanh(s[j - tile] / softcap);
  }
  __mmask16 valid[4];
  __m512 x[4];
  __m512 tile_max = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int v = 0; v < 4; ++v) {
    valid[v] = lanes_between(tile + 16 * v, lo, hi);
    x[v] = _mm512_loadu_ps(s + 16 * v);
    tile_max = _mm512_mask_max_ps(tile_max, valid[v], tile_max, x[v]);
  }
  const float new_max = std::max(st.run_max, _mm512_reduce_max_ps(tile_max));
  st.corr = st.run_max == -std::numeric_limits<float>::infinity() ? 0.0f : exp_poly(st.run_max - new_max);
  st.run_max = new_max;
  const __m512 m = _mm512_set1_ps(new_max);
  for (int v = 0; v < 4; ++v) {
    x[v] = _mm512_maskz_mov_ps(valid[v], blocks::exp_lanes<Avx512>(_mm512_sub_ps(x[v], m)));
  }
  st.denom =
      st.denom * st.corr + _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(x[0], x[1]), _mm512_add_ps(x[2], x[3])));
  for (int32_t c = 0; c < 2; ++c) {
    uint16_t* hi_part = probs + (static_cast<int64_t>(c) * kRows + r) * kChunk;
    split_bf16(x[2 * c], x[2 * c + 1], hi_part, hi_part + 2 * kRows * kChunk);
  }
}

template <typename T>
void amx_attend_block(const AttentionBlockArgs& a) {
  thread_local Scratch scratch;
  scratch.size_for(a.head_dim);
  const int32_t hd = a.head_dim, chunks = hd / kChunk, rows = a.rows;
  amx::use_tile_config(attention_config(rows));
  prepare_queries(a, scratch.query);
  std::fill_n(scratch.acc, static_cast<int64_t>(rows) * hd, 0.0f);
  RowState state[kRows];
  int32_t first = a.first_key[0], last = a.last_key[0];
  for (int32_t r = 1; r < rows; ++r) {
    first = std::min(first, a.first_key[r]);
    last = std::max(last, a.last_key[r]);
  }
  for (int32_t tile = first - first % kTileKeys; tile <= last; tile += kTileKeys) {
    bool any = false;
    for (int32_t r = 0; r < rows; ++r) {
      state[r].active = a.first_key[r] < tile + kTileKeys && a.last_key[r] >= tile;
      any |= state[r].active;
    }
    if (!any) continue;
    const int32_t lo = std::max(tile, first), hi = std::min(tile + kTileKeys, last + 1);
    const KeyOperands keys = key_operands<T>(a, tile, lo, hi, scratch.zeros, scratch.keys);
    gather_values<T>(a, tile, lo, hi, scratch.values);
    score_tile(scratch.query, chunks, keys, scratch.scores);
    for (int32_t r = 0; r < rows; ++r) {
      float* s = scratch.scores + static_cast<int64_t>(r) * kTileKeys;
      if (!state[r].active) {
        // Weights of zero: the row's outputs of this tile are exact zeros, left unused.
        for (int32_t c = 0; c < 2; ++c) {
          uint16_t* hi_part = scratch.probs + (static_cast<int64_t>(c) * kRows + r) * kChunk;
          _mm512_store_si512(hi_part, _mm512_setzero_si512());
          _mm512_store_si512(hi_part + 2 * kRows * kChunk, _mm512_setzero_si512());
        }
        continue;
      }
      softmax_row(s, tile, std::max(tile, a.first_key[r]), std::min(tile + kTileKeys, a.last_key[r] + 1), a.softcap,
                  state[r], scratch.probs, r);
    }
    int32_t dim = 0;
    for (; dim + 64 <= hd; dim += 64) weigh_values<4>(scratch.probs, scratch.values, hd, dim, scratch.tile_out);
    if (dim < hd) weigh_values<2>(scratch.probs, scratch.values, hd, dim, scratch.tile_out);
    for (int32_t r = 0; r < rows; ++r) {
      if (!state[r].active) continue;
      float* acc = scratch.acc + static_cast<int64_t>(r) * hd;
      const float* add = scratch.tile_out + static_cast<int64_t>(r) * hd;
      const __m512 corr = _mm512_set1_ps(state[r].corr);
      for (int32_t d = 0; d < hd; d += 16) {
        _mm512_store_ps(acc + d, _mm512_fmadd_ps(_mm512_load_ps(acc + d), corr, _mm512_load_ps(add + d)));
      }
    }
  }
  for (int32_t r = 0; r < rows; ++r) {
    const float* acc = scratch.acc + static_cast<int64_t>(r) * hd;
    const __m512 denom = _mm512_set1_ps(state[r].denom), value_scale = _mm512_set1_ps(a.value_scale);
    for (int32_t d = 0; d < hd; d += 16) {
      _mm512_storeu_ps(a.out[r] + d, _mm512_mul_ps(_mm512_div_ps(_mm512_load_ps(acc + d), denom), value_scale));
    }
  }
}

}  // namespace

AttentionTable amx_attention_table() {
  AttentionTable t = avx512_attention_table();
  t.attend_block_bf16 = amx_attend_block<uint16_t>;
  t.attend_block_fp8 = amx_attend_block<uint8_t>;
  return t;
}

}  // namespace vllm::kernels::cpu
