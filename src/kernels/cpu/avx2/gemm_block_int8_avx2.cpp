// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch
// table (AVX2 machines, and AVX-512 ones without VNNI).  gemm.h's block int8
// arithmetic with vpmaddubsw, whose first operand is unsigned: each code c
// (its stored number less code_bias) goes in as |c| and its sign moves onto
// the activation (vpsignb), so each pair of products stays within int16
// (at most 2 * 128 * 127), and vpmaddwd by ones sums each column's four k
// into int32: exact, so the sums are the definition's.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/block_int8_format.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kBlock = kActivationBlock;

float max_lane(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  return *std::max_element(lanes, lanes + 8);
}

int32_t sum_lanes(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  int32_t sum = 0;
  for (const int32_t lane : lanes) sum += lane;
  return sum;
}

void quantize_int8_blocks(const float* x, int64_t m, int64_t k_total, int64_t group_size, int8_t* q,
                          float* block_scales, int32_t* group_sums) {
  const int64_t blocks = k_total / kBlock, groups_per_block = kBlock / group_size;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = r * k_total + b * kBlock;
      __m256 v[4];
      __m256 amax = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + first + 8 * i);
        amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax);  // a NaN keeps amax, as std::max does
      }
      const float scale = max_lane(amax) / 127.0f;
      const __m256 inverse = _mm256_set1_ps(scale != 0.0f ? 1.0f / scale : 0.0f);
      __m256i codes[4];
      for (int i = 0; i < 4; ++i) {
        // Clamped first (a NaN to -127), then rounded to nearest even.
        const __m256 scaled =
            _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], inverse), _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
        codes[i] = _mm256_cvtps_epi32(scaled);
      }
      // int32 -> int8 in order: packs work within 128-bit lanes, so undo their interleave.
      const __m256i words = _mm256_packs_epi32(codes[0], codes[1]), more = _mm256_packs_epi32(codes[2], codes[3]);
      const __m256i bytes =
          _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words, more), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + first), bytes);
      block_scales[r * blocks + b] = scale;
      int32_t* sums = group_sums + (r * blocks + b) * groups_per_block;
      const __m256i low = _mm256_add_epi32(codes[0], codes[1]), high = _mm256_add_epi32(codes[2], codes[3]);
      if (groups_per_block == 1) {
        sums[0] = sum_lanes(_mm256_add_epi32(low, high));
      } else {
        sums[0] = sum_lanes(low), sums[1] = sum_lanes(high);
      }
    }
  }
}

// Eight columns' group parameters (set 0: scales, 1: offsets) of a block
// whose parameters start at `group` (kSteps: its bases at `bases`, each
// parameter base * step in FP32, as load_param's).
template <QuantParams kParams>
inline __attribute__((always_inline)) __m256 load_params(const uint8_t* group, const uint8_t* bases, int set,
                                                         int eighth) {
  const int64_t first = set * kPanelWidth + eighth * 8;  // of the 32 columns' sets
  if constexpr (kParams == QuantParams::kF16) {
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(group + first * 2)));
  } else if constexpr (kParams == QuantParams::kF32) {
    return _mm256_load_ps(reinterpret_cast<const float*>(group + first * 4));
  } else {
    const __m256 steps =
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + first))));
    return _mm256_mul_ps(_mm256_load_ps(reinterpret_cast<const float*>(bases + first * 4)), steps);
  }
}

// One row against one panel: block by block, each column's int32 sum per
// group (kGroups a block: 1, or 2 of 16 k; four vectors of eight columns
// each), then their terms of the outputs' chains.
template <int kBits, QuantParams kParams, bool kOffsets, int kGroups>
void row_panel(const int8_t* q, const float* block_scales, const int32_t* group_sums, const PackedMatrix& w,
               __m256i table, int64_t p, float* y) {
  const QuantFormat& f = w.quant;
  const int64_t k_total = w.cols, blocks = k_total / kBlock;
  constexpr int64_t kHalfBytes = kBits == 4 ? 256 : kBits == 6 ? 384 : 512;
  const uint8_t* codes = w.data.as<uint8_t>() + p * f.panel_code_bytes(k_total);
  const uint8_t* params = w.group_params.as<uint8_t>() + p * f.panel_param_bytes(k_total);
  const int64_t base_bytes = f.panel_base_bytes(k_total);  // where the groups' parameters start
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(f.code_bias));
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < blocks; ++b) {
    // Per group: two groups of 16 k (0-15, 16-31), or one of the block's 32.
    __m256i dot[4][kGroups];
    for (auto& eighth : dot) {
      for (auto& group : eighth) group = _mm256_setzero_si256();
    }
    // Codes c (signed) of eight columns at four k, against those k of the row.
    const auto add = [&](__m256i c, int e, int quad) {
      int32_t four;
      __builtin_memcpy(&four, q + b * kBlock + 4 * quad, 4);
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(c, c), _mm256_sign_epi8(_mm256_set1_epi32(four), c));
      __m256i& group = dot[e][kGroups == 1 ? 0 : quad / 4];
      group = _mm256_add_epi32(group, _mm256_madd_epi16(pairs, ones));
    };
    for (int e = 0; e < 4; ++e) {  // eighths of the panel: columns 8e .. 8e + 7
      const uint8_t* rows = codes + b * 2 * kHalfBytes + e / 2 * kHalfBytes + e % 2 * 32;
      if constexpr (kBits == 6) {
        // number = low nibble | top bits (packed_matrix.h: row 4t + s's in
        // bits 2s, 2s + 1 of top-bits row t) moved to bits 4-5, less the bias.
        const __m256i top_mask = _mm256_set1_epi8(0x30);
        const __m256i tops[2] = {_mm256_load_si256(reinterpret_cast<const __m256i*>(rows + 256)),
                                 _mm256_load_si256(reinterpret_cast<const __m256i*>(rows + 320))};
        const auto code = [&](__m256i low, int v) {
          const __m256i t = tops[v / 4];
          const int s = v % 4;
          const __m256i at_4 = s < 2 ? _mm256_slli_epi16(t, 4 - 2 * s) : s == 2 ? t : _mm256_srli_epi16(t, 2);
          return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_and_si256(at_4, top_mask)), bias);
        };
        for (int v = 0; v < 4; ++v) {
          const __m256i bytes = _mm256_load_si256(reinterpret_cast<const __m256i*>(rows + 64 * v));
          add(code(_mm256_and_si256(bytes, nibble), v), e, v);
          add(code(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble), v + 4), e, v + 4);
        }
      } else if constexpr (kBits == 4) {
        for (int v = 0; v < 4; ++v) {
          const __m256i bytes = _mm256_load_si256(reinterpret_cast<const __m256i*>(rows + 64 * v));
          add(_mm256_shuffle_epi8(table, _mm256_and_si256(bytes, nibble)), e, v);
          add(_mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble)), e, v + 4);
        }
      } else {
        for (int v = 0; v < 8; ++v) {
          add(_mm256_sub_epi8(_mm256_load_si256(reinterpret_cast<const __m256i*>(rows + 64 * v)), bias), e, v);
        }
      }
    }
    const float s = block_scales[b];
    const __m256 scale_r = _mm256_set1_ps(s);
    for (int g = 0; g < kGroups; ++g) {
      const int64_t at = b * kGroups + g;
      const uint8_t* group = params + base_bytes + at * f.group_param_bytes();
      const uint8_t* bases = params + (kParams == QuantParams::kSteps ? f.bases_offset(at) : 0);
      const int32_t t = group_sums[at];
      const __m256 offset_term = _mm256_set1_ps(s * static_cast<float>(t));
      for (int e = 0; e < 4; ++e) {
        const __m256 sums = _mm256_mul_ps(_mm256_cvtepi32_ps(dot[e][g]), scale_r);
        acc[e] = _mm256_fmadd_ps(load_params<kParams>(group, bases, 0, e), sums, acc[e]);
        if constexpr (kOffsets) acc[e] = _mm256_fmadd_ps(load_params<kParams>(group, bases, 1, e), offset_term, acc[e]);
      }
    }
  }
  alignas(32) float out[kPanelWidth];
  for (int e = 0; e < 4; ++e) _mm256_store_ps(out + 8 * e, acc[e]);
  std::copy_n(out, std::min(kPanelWidth, w.rows - p * kPanelWidth), y + p * kPanelWidth);
}

template <int kBits, QuantParams kParams, bool kOffsets, int kGroups>
void gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m, const PackedMatrix& w,
          __m256i table, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t k_total = w.cols, blocks = k_total / kBlock;
  for (int64_t p = p_begin; p < p_end; ++p) {
    for (int64_t r = 0; r < m; ++r) {
      row_panel<kBits, kParams, kOffsets, kGroups>(q + r * k_total, block_scales + r * blocks,
                                                   group_sums + r * kGroups * blocks, w, table, p, y + r * ldy);
    }
  }
}

void block_int8_gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m,
                     const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  // A nibble's code (signed, as vpmaddubsw's sign trick takes it), in each 128-bit lane.
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.quant.int4_codes.data())));
  for_block_format(w.quant, [&]<int kBits, QuantParams kParams, bool kOffsets, int kGroups>() {
    gemm<kBits, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin, p_end, y, ldy);
  });
}

}  // namespace

QuantizeBlocksFn avx2_quantize_int8_blocks() { return quantize_int8_blocks; }
BlockInt8GemmFn avx2_block_int8_gemm() { return block_int8_gemm; }

}  // namespace vllm::kernels::cpu
