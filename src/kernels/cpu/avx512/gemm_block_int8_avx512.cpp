// Compiled with -mavx512f -mavx512bw -mavx512vnni; reached only through the
// dispatch table, on CPUs with AVX512-VNNI.  gemm.h's block int8
// arithmetic: for each block of 32 k, each vpdpbusd multiplies four k of 16
// columns' unsigned numbers (code + code_bias: one row of a block's half,
// packed_matrix.h) by one activation row's four codes and adds the sums to
// 16 int32 accumulators, one set per group (of 32 or 16 k); the bias times
// the group's activation code sum is taken off, and the groups' sums join
// each output's FP32 chain in the definition's order.
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "kernels/cpu/avx512/block_numbers_avx512.h"
#include "kernels/cpu/avx512/block_params_avx512.h"
#include "kernels/cpu/block_int8_format.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kBlock = kActivationBlock;
// In decode (one row), codes of groups of 16 (Q6_K's, Q3_K's, Q2_K's) and
// 6-bit ones (Q6_K's, Q5's) are prefetched this many blocks ahead.  Without
// it a Q6_K matrix in bytes streamed at 36 GB/s where the dequantizing
// kernel reached 47 (llama-3.2-1b's LM head, on a Zen 5 measuring 70 GB/s),
// and 6-bit Q5_0 decoded slower than in bytes; with it, as fast as those.
// 4- and 8-bit kernels of 32-value groups measured slower with it, and
// prefill (several rows, the codes reused) 4-14% slower.
constexpr int64_t kPrefetchBlocks = 2;

// How a panel stores its numbers: bytes, nibbles that are the numbers,
// nibbles that index a table of them, or six bits (a nibble and two top bits).
enum class Numbers { kBytes, kNibbles, kNibblesByTable, kSixBits };

void quantize_int8_blocks(const float* x, int64_t m, int64_t k_total, int64_t group_size, int8_t* q,
                          float* block_scales, int32_t* group_sums) {
  const int64_t blocks = k_total / kBlock, groups_per_block = kBlock / group_size;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = r * k_total + b * kBlock;
      const __m512 lo = _mm512_loadu_ps(x + first), hi = _mm512_loadu_ps(x + first + 16);
      // From 0, as the definition's: max keeps its second operand where the
      // first is a NaN, as std::max skips one.
      const __m512 amax = _mm512_max_ps(_mm512_abs_ps(hi), _mm512_max_ps(_mm512_abs_ps(lo), _mm512_setzero_ps()));
      const float scale = _mm512_reduce_max_ps(amax) / 127.0f;
      const __m512 inverse = _mm512_set1_ps(scale != 0.0f ? 1.0f / scale : 0.0f);
      // Clamped first (a NaN to -127), then rounded to nearest even.
      const auto codes = [&](__m512 v) {
        v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, inverse), _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
        return _mm512_cvtps_epi32(v);
      };
      const __m512i low = codes(lo), high = codes(hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + first), _mm512_cvtepi32_epi8(low));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + first + 16), _mm512_cvtepi32_epi8(high));
      block_scales[r * blocks + b] = scale;
      int32_t* sums = group_sums + (r * blocks + b) * groups_per_block;
      if (groups_per_block == 1) {
        sums[0] = _mm512_reduce_add_epi32(_mm512_add_epi32(low, high));
      } else {
        sums[0] = _mm512_reduce_add_epi32(low), sums[1] = _mm512_reduce_add_epi32(high);
      }
    }
  }
}

// R rows against panels [p, p + P): block by block, the int32 sums of each
// row, panel half and group (kGroups a block: 1, or 2 of 16 k), then their
// terms of the outputs' chains.
template <Numbers kNumbers, QuantParams kParams, bool kOffsets, int kGroups, int R, int P>
void rows_panels(const int8_t* q, const float* block_scales, const int32_t* group_sums, const PackedMatrix& w,
                 __m512i table, int64_t p, float* y, int64_t ldy) {
  const QuantFormat& f = w.quant;
  const int64_t k_total = w.cols, blocks = k_total / kBlock, groups = blocks * kGroups;
  const int64_t code_bytes = f.panel_code_bytes(k_total), param_bytes = f.panel_param_bytes(k_total);
  constexpr int64_t kHalfBytes = kNumbers == Numbers::kBytes ? 512 : kNumbers == Numbers::kSixBits ? 384 : 256;
  const uint8_t* codes = w.data.as<uint8_t>() + p * code_bytes;
  const uint8_t* params = w.group_params.as<uint8_t>() + p * param_bytes;
  const int64_t base_bytes = f.panel_base_bytes(k_total);  // where the groups' parameters start
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 acc[R][2 * P];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm512_setzero_ps();
  }
  // Group g's terms of the outputs' chains, from its int32 sums (b its block).
  const auto add_group = [&](const __m512i(&dot)[R][2 * P], int64_t b, int64_t g) {
    const int64_t group_at = base_bytes + g * f.group_param_bytes();
    const int64_t bases_at = kParams == QuantParams::kSteps ? f.bases_offset(g) : 0;
    __m512i bias[R];
    __m512 scale_r[R], offset_term[R];
    for (int r = 0; r < R; ++r) {
      const float s = block_scales[r * blocks + b];
      const int32_t t = group_sums[r * groups + g];
      bias[r] = _mm512_set1_epi32(f.code_bias * t);
      scale_r[r] = _mm512_set1_ps(s), offset_term[r] = _mm512_set1_ps(s * static_cast<float>(t));
    }
    for (int h = 0; h < 2 * P; ++h) {
      const uint8_t* panel_params = params + h / 2 * param_bytes;
      const __m512 scales = load_group_params<kParams>(panel_params + group_at, panel_params + bases_at, 0, h % 2);
      const __m512 offsets =
          kOffsets ? load_group_params<kParams>(panel_params + group_at, panel_params + bases_at, 1, h % 2)
                   : _mm512_setzero_ps();
      for (int r = 0; r < R; ++r) {
        const __m512 sums = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][h], bias[r])), scale_r[r]);
        acc[r][h] = _mm512_fmadd_ps(scales, sums, acc[r][h]);
        if constexpr (kOffsets) acc[r][h] = _mm512_fmadd_ps(offsets, offset_term[r], acc[r][h]);
      }
    }
  };
  for (int64_t b = 0; b < blocks; ++b) {
    // Per group: one of the block's 32 k, or two of 16 (k 0-15, 16-31).
    __m512i dot[kGroups][R][2 * P];
    for (auto& group : dot) {
      for (auto& row : group) {
        for (auto& d : row) d = _mm512_setzero_si512();
      }
    }
    const int8_t* block_q = q + b * kBlock;
    for (int h = 0; h < 2 * P; ++h) {
      const uint8_t* half = codes + h / 2 * code_bytes + b * 2 * kHalfBytes + h % 2 * kHalfBytes;
      if constexpr ((kGroups == 2 || kNumbers == Numbers::kSixBits) && R == 1) {
        for (int64_t line = 0; line < kHalfBytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(half + kPrefetchBlocks * 2 * kHalfBytes + line), _MM_HINT_T0);
      }
      // Row v of the half against k = 4v .. 4v + 3 of each activation row.
      const auto add = [&](__m512i numbers, int v) {
        for (int r = 0; r < R; ++r) {
          int32_t four;
          __builtin_memcpy(&four, block_q + r * k_total + 4 * v, 4);
          __m512i& d = dot[kGroups == 1 ? 0 : v / 4][r][h];
          d = _mm512_dpbusd_epi32(d, numbers, _mm512_set1_epi32(four));
        }
      };
      if constexpr (kNumbers == Numbers::kSixBits) {
        const __m512i tops_low = _mm512_load_si512(half + 256), tops_high = _mm512_load_si512(half + 320);
        const auto six_bits = [&]<int kS>() {
          const auto [low_row, high_row] = six_bit_numbers<kS>(_mm512_load_si512(half + 64 * kS), tops_low, tops_high);
          add(low_row, kS);
          add(high_row, kS + 4);
        };
        six_bits.template operator()<0>();
        six_bits.template operator()<1>();
        six_bits.template operator()<2>();
        six_bits.template operator()<3>();
      } else if constexpr (kNumbers != Numbers::kBytes) {
        const auto look_up = [&](__m512i nibbles) {
          return kNumbers == Numbers::kNibblesByTable ? _mm512_shuffle_epi8(table, nibbles) : nibbles;
        };
        for (int v = 0; v < 4; ++v) {
          const __m512i bytes = _mm512_load_si512(half + 64 * v);
          add(look_up(_mm512_and_si512(bytes, nibble)), v);
          add(look_up(_mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble)), v + 4);
        }
      } else {
        for (int v = 0; v < 8; ++v) add(_mm512_load_si512(half + 64 * v), v);
      }
    }
    if constexpr (kGroups == 1) {
      add_group(dot[0], b, b);
    } else {
      add_group(dot[0], b, 2 * b);
      add_group(dot[1], b, 2 * b + 1);
    }
  }
  for (int h = 0; h < 2 * P; ++h) {
    const int64_t first = (p + h / 2) * kPanelWidth + h % 2 * 16;
    const auto mask = static_cast<__mmask16>((1u << std::clamp<int64_t>(w.rows - first, 0, 16)) - 1u);
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * ldy + first, mask, acc[r][h]);
  }
}

// Rows [0, R) against panels [p_begin, p_end), P at a time while they last, then fewer.
template <Numbers kNumbers, QuantParams kParams, bool kOffsets, int kGroups, int R, int P>
void over_panels(const int8_t* q, const float* block_scales, const int32_t* group_sums, const PackedMatrix& w,
                 __m512i table, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  int64_t p = p_begin;
  for (; p + P <= p_end; p += P)
    rows_panels<kNumbers, kParams, kOffsets, kGroups, R, P>(q, block_scales, group_sums, w, table, p, y, ldy);
  if constexpr (P > 1) {
    if (p < p_end)
      over_panels<kNumbers, kParams, kOffsets, kGroups, R, P - 1>(q, block_scales, group_sums, w, table, p, p_end, y,
                                                                  ldy);
  }
}

template <Numbers kNumbers, QuantParams kParams, bool kOffsets, int kGroups>
void gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m, const PackedMatrix& w,
          __m512i table, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t k_total = w.cols, blocks = k_total / kBlock;
  int64_t r = 0;
  // Four rows a panel: 8 int32 (16 for groups of 16) and 8 FP32 accumulators.
  for (; r + 4 <= m; r += 4) {
    over_panels<kNumbers, kParams, kOffsets, kGroups, 4, 1>(q + r * k_total, block_scales + r * blocks,
                                                            group_sums + r * kGroups * blocks, w, table, p_begin, p_end,
                                                            y + r * ldy, ldy);
  }
  const int8_t* rest = q + r * k_total;
  const float* rest_scales = block_scales + r * blocks;
  const int32_t* rest_sums = group_sums + r * kGroups * blocks;
  switch (m - r) {
    case 1:  // decode: four panels for the codes to stream from
      return over_panels<kNumbers, kParams, kOffsets, kGroups, 1, 4>(rest, rest_scales, rest_sums, w, table, p_begin,
                                                                     p_end, y + r * ldy, ldy);
    case 2:
      return over_panels<kNumbers, kParams, kOffsets, kGroups, 2, 2>(rest, rest_scales, rest_sums, w, table, p_begin,
                                                                     p_end, y + r * ldy, ldy);
    case 3:
      return over_panels<kNumbers, kParams, kOffsets, kGroups, 3, 2>(rest, rest_scales, rest_sums, w, table, p_begin,
                                                                     p_end, y + r * ldy, ldy);
    default:
      return;
  }
}

void vnni_block_int8_gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m,
                          const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const std::array<uint8_t, 16> numbers = block_int4_numbers(w.quant);
  const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(numbers.data())));
  // Nibbles that are their own numbers (Q4_0's codes -8 .. 7 biased by 8,
  // Q4_1's 0 .. 15) skip the lookup.
  bool own_numbers = true;
  for (size_t n = 0; n < numbers.size(); ++n) own_numbers &= numbers[n] == n;
  for_block_format(w.quant, [&]<int kBits, QuantParams kParams, bool kOffsets, int kGroups>() {
    if constexpr (kBits == 8) {
      gemm<Numbers::kBytes, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin, p_end, y,
                                                        ldy);
    } else if constexpr (kBits == 6) {
      gemm<Numbers::kSixBits, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin, p_end, y,
                                                          ldy);
    } else if (own_numbers) {
      gemm<Numbers::kNibbles, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin, p_end, y,
                                                          ldy);
    } else {
      gemm<Numbers::kNibblesByTable, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin,
                                                                 p_end, y, ldy);
    }
  });
}

}  // namespace

QuantizeBlocksFn avx512_quantize_int8_blocks() { return quantize_int8_blocks; }
BlockInt8GemmFn avx512_vnni_block_int8_gemm() { return vnni_block_int8_gemm; }

}  // namespace vllm::kernels::cpu
