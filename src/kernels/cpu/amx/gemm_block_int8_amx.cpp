// Compiled with -mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vnni;
// reached only through the dispatch table, on CPUs with AMX-INT8.  gemm.h's
// block int8 arithmetic on tiles: for a tile of up to 16 activation rows and
// one half of a panel (16 columns), each group of 32 or 16 k is one tdpbssd
// of the rows' codes (read in place) by the group's weight codes (rows of
// four k of 16 columns, staged as signed bytes from the packed numbers) into
// 16 x 16 int32 sums, which AVX-512 then adds to each output's FP32 chain,
// kept in registers across the groups.  The sums are exact, so the outputs
// are the VNNI kernel's and the definition's bit for bit; fewer than 16 rows
// (decode) go to the VNNI kernel.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/avx512/block_numbers_avx512.h"
#include "kernels/cpu/avx512/block_params_avx512.h"
#include "kernels/cpu/block_int8_format.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kBlock = kActivationBlock;
constexpr int64_t kTileRows = 16;
constexpr int64_t kQuadBytes = 64;  // a row of a staged half: four k of 16 columns

// tmm0-1 and tmm2-3: the sums of up to 16 rows for two pairs of groups of
// group_k k; tmm4-5: the rows' codes of a pair; tmm6-7: its staged weight
// codes.
amx::TileConfig block_int8_config(int64_t rows, int64_t group_k) {
  amx::TileConfig c;
  for (int t : {0, 1}) {
    c.rows[t] = c.rows[t + 2] = c.rows[t + 4] = static_cast<uint8_t>(rows);
    c.bytes_per_row[t] = c.bytes_per_row[t + 2] = 64;
    c.bytes_per_row[t + 4] = static_cast<uint16_t>(group_k);
    c.rows[t + 6] = static_cast<uint8_t>(group_k / 4);
    c.bytes_per_row[t + 6] = kQuadBytes;
  }
  return c;
}

// The signed codes of a block's half (its unsigned numbers less code_bias;
// 4-bit ones looked up in int4_codes, `table`) staged as bytes for tdpbssd:
// eight rows of four k of 16 columns.
template <int kBits>
inline __attribute__((always_inline)) void stage_codes(const uint8_t* half, __m512i table, __m512i bias, int8_t* out) {
  const auto store = [&](int row, __m512i numbers) { _mm512_store_si512(out + kQuadBytes * row, numbers); };
  if constexpr (kBits == 4) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int v = 0; v < 4; ++v) {
      const __m512i bytes = _mm512_load_si512(half + 64 * v);
      store(v, _mm512_shuffle_epi8(table, _mm512_and_si512(bytes, nibble)));
      store(v + 4, _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble)));
    }
  } else if constexpr (kBits == 6) {
    const __m512i tops_low = _mm512_load_si512(half + 256), tops_high = _mm512_load_si512(half + 320);
    const auto rows = [&]<int kS>() {
      const auto [low_row, high_row] = six_bit_numbers<kS>(_mm512_load_si512(half + 64 * kS), tops_low, tops_high);
      store(kS, _mm512_sub_epi8(low_row, bias));
      store(kS + 4, _mm512_sub_epi8(high_row, bias));
    };
    rows.template operator()<0>();
    rows.template operator()<1>();
    rows.template operator()<2>();
    rows.template operator()<3>();
  } else {
    for (int v = 0; v < 8; ++v) store(v, _mm512_sub_epi8(_mm512_load_si512(half + 64 * v), bias));
  }
}

// Terms per group that gemm() prepares for a tile's 16 rows: each row's
// block scale s_b, then (with offsets) s_b * t_g, the factor of the
// group's offsets; rows past the tile's repeat its last.
template <bool kOffsets>
constexpr int64_t kRowTerms = (kOffsets ? 2 : 1) * kTileRows;

// A tile of up to 16 rows (their codes at q; `terms` their kRowTerms per
// group) against columns 16 * half .. + 15 of panel p, two groups at a
// time: pair i is groups 2i and 2i + 1, staged in staged[i % 2] (groups of
// 32 are two blocks' halves, staged one each; groups of 16 one block's,
// rows 0-3 and 4-7 of one staging), the rows' codes (tmm4-5) times the
// staged ones (tmm6-7) into sum tiles 2 (i % 2) and 2 (i % 2) + 1, stored
// to sums[i % 2], and then added to each row's FP32 chain.
template <int kBits, QuantParams kParams, bool kOffsets, int kGroups>
void tile_half(const int8_t* q, int64_t rows, const float* terms, const PackedMatrix& w, __m512i table, int64_t p,
               int64_t half, float* y, int64_t ldy) {
  constexpr int64_t kGroupK = kBlock / kGroups;
  constexpr int64_t kHalfBytes = kBits == 4 ? 256 : kBits == 6 ? 384 : 512;
  const QuantFormat& f = w.quant;
  const int64_t k_total = w.cols, groups = k_total / kGroupK;
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(f.code_bias));
  const uint8_t* codes = w.data.as<uint8_t>() + p * f.panel_code_bytes(k_total) + half * kHalfBytes;
  const uint8_t* panel_params = w.group_params.as<uint8_t>() + p * f.panel_param_bytes(k_total);
  const uint8_t* group = panel_params + f.panel_base_bytes(k_total);  // the next group's parameters
  const uint8_t* bases = panel_params;                                // kSteps: its super-block's bases
  const int64_t group_bytes = f.group_param_bytes();
  const int64_t base_bytes = kParams == QuantParams::kSteps ? f.bases_offset(f.super_groups) : 0;  // a super-block's
  int64_t groups_left_in_base = f.super_groups;
  alignas(64) int32_t sums[2][2][kTileRows * 16];            // two pairs' sums
  alignas(64) int8_t staged[2][2][kBlock / 4 * kQuadBytes];  // two pairs' codes
  __m512 acc[kTileRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  // The next group's sums (16 rows of 16 columns) into each row's chain.
  int64_t next_group = 0;
  const auto add_group = [&](const int32_t* dots) __attribute__((always_inline)) {
    const __m512 scales = load_group_params<kParams>(group, bases, 0, half);
    __m512 offsets = _mm512_setzero_ps();
    if constexpr (kOffsets) offsets = load_group_params<kParams>(group, bases, 1, half);
    const float* row_terms = terms + next_group * kRowTerms<kOffsets>;
#pragma GCC unroll 16
    for (int64_t r = 0; r < kTileRows; ++r) {
      acc[r] = _mm512_fmadd_ps(
          scales, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(dots + r * 16)), _mm512_set1_ps(row_terms[r])),
          acc[r]);
      if constexpr (kOffsets) acc[r] = _mm512_fmadd_ps(offsets, _mm512_set1_ps(row_terms[kTileRows + r]), acc[r]);
    }
    ++next_group;
    group += group_bytes;
    if constexpr (kParams == QuantParams::kSteps) {
      if (--groups_left_in_base == 0) bases += base_bytes, groups_left_in_base = f.super_groups;
    }
  };
  const auto stage_pair = [&](int64_t pair) __attribute__((always_inline)) {
    const int64_t g = 2 * pair;
    stage_codes<kBits>(codes + g / kGroups * 2 * kHalfBytes, table, bias, staged[pair % 2][0]);
    if constexpr (kGroups == 1) stage_codes<kBits>(codes + (g + 1) * 2 * kHalfBytes, table, bias, staged[pair % 2][1]);
  };
  const auto start_pair = [&]<int kSet>(int64_t pair) __attribute__((always_inline)) {
    const int64_t g = 2 * pair;
    const int8_t* second = kGroups == 1 ? staged[kSet][1] : staged[kSet][0] + kGroupK / 4 * kQuadBytes;
    amx::tile_zero<2 * kSet>();
    amx::tile_zero<2 * kSet + 1>();
    amx::tile_load<4>(q + g * kGroupK, k_total);
    amx::tile_load<6>(staged[kSet][0], kQuadBytes);
    amx::tile_load<5>(q + (g + 1) * kGroupK, k_total);
    amx::tile_load<7>(second, kQuadBytes);
    amx::tile_dot_s8s8<2 * kSet, 4, 6>();
    amx::tile_dot_s8s8<2 * kSet + 1, 5, 7>();
  };
  const auto store_pair = [&]<int kSet>() __attribute__((always_inline)) {
    amx::tile_store<2 * kSet>(sums[kSet][0], 64);
    amx::tile_store<2 * kSet + 1>(sums[kSet][1], 64);
  };
  // Step i (parity kSet): start pair i + 1's products, stage pair i + 2's
  // codes, store pair i's sums, add pair i - 1's.  So the products run
  // while AVX-512 adds, a tile load never reads stores still in flight, and
  // the sums are read a step after they are stored; the chains still take
  // the groups in order.
  const int64_t pairs = groups / 2;
  const auto step = [&]<int kSet>(int64_t i) __attribute__((always_inline)) {
    if (i + 1 < pairs) start_pair.template operator()<1 - kSet>(i + 1);
    if (i + 2 < pairs) stage_pair(i + 2);
    store_pair.template operator()<kSet>();
    if (i > 0) add_group(sums[1 - kSet][0]), add_group(sums[1 - kSet][1]);
  };
  for (int64_t i = 0; i < std::min<int64_t>(pairs, 2); ++i) stage_pair(i);
  if (pairs > 0) start_pair.template operator()<0>(0);
  for (int64_t i = 0; i < pairs; i += 2) {
    step.template operator()<0>(i);
    if (i + 1 < pairs) step.template operator()<1>(i + 1);
  }
  if (pairs > 0) add_group(sums[(pairs - 1) % 2][0]), add_group(sums[(pairs - 1) % 2][1]);
  if (groups % 2 == 1) {  // the last of an odd count (groups of 32 only)
    stage_codes<kBits>(codes + (groups - 1) * 2 * kHalfBytes, table, bias, staged[0][0]);
    amx::tile_zero<0>();
    amx::tile_load<4>(q + (groups - 1) * kGroupK, k_total);
    amx::tile_load<6>(staged[0][0], kQuadBytes);
    amx::tile_dot_s8s8<0, 4, 6>();
    amx::tile_store<0>(sums[0][0], 64);
    add_group(sums[0][0]);
  }
  const int64_t first = p * kPanelWidth + half * 16;
  const auto mask = static_cast<__mmask16>((1u << std::clamp<int64_t>(w.rows - first, 0, 16)) - 1u);
#pragma GCC unroll 16
  for (int64_t r = 0; r < kTileRows; ++r) {
    if (r < rows) _mm512_mask_storeu_ps(y + r * ldy + first, mask, acc[r]);
  }
}

template <int kBits, QuantParams kParams, bool kOffsets, int kGroups>
void gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m, const PackedMatrix& w,
          __m512i table, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t k_total = w.cols, blocks = k_total / kBlock, groups = blocks * kGroups;
  // Every tile's row terms, tile by tile and group by group (a buffer kept
  // per thread, so that its pages are not faulted in again each call).
  const int64_t tile_terms = groups * kRowTerms<kOffsets>;
  thread_local std::vector<float> terms;
  terms.resize(static_cast<size_t>((m + kTileRows - 1) / kTileRows * tile_terms));
  for (int64_t r = 0; r < m; ++r) {
    float* tile = terms.data() + r / kTileRows * tile_terms;
    // The tile's last row fills the rows past it.
    for (int64_t copy = r % kTileRows; copy < (r + 1 == m ? kTileRows : r % kTileRows + 1); ++copy) {
      for (int64_t g = 0; g < groups; ++g) {
        const float s = block_scales[r * blocks + g / kGroups];
        tile[g * kRowTerms<kOffsets> + copy] = s;
        if constexpr (kOffsets) {
          tile[g * kRowTerms<kOffsets> + kTileRows + copy] = s * static_cast<float>(group_sums[r * groups + g]);
        }
      }
    }
  }
  amx::for_blocks_and_panels(
      m, p_begin, p_end, kTileRows, k_total, w.quant.panel_code_bytes(k_total),
      [](int64_t rows) { amx::use_tile_config(block_int8_config(rows, kBlock / kGroups)); },
      [&](int64_t r, int64_t rows, int64_t p) {
        for (int64_t half = 0; half < 2 && p * kPanelWidth + half * 16 < w.rows; ++half) {
          tile_half<kBits, kParams, kOffsets, kGroups>(q + r * k_total, rows, terms.data() + r / kTileRows * tile_terms,
                                                       w, table, p, half, y + r * ldy, ldy);
        }
      });
}

void amx_block_int8_gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m,
                         const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  if (m < kTileRows) return avx512_vnni_block_int8_gemm()(q, block_scales, group_sums, m, w, p_begin, p_end, y, ldy);
  // A nibble's code, in each 128-bit lane (vpshufb looks up within lanes).
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.quant.int4_codes.data())));
  for_block_format(w.quant, [&]<int kBits, QuantParams kParams, bool kOffsets, int kGroups>() {
    gemm<kBits, kParams, kOffsets, kGroups>(q, block_scales, group_sums, m, w, table, p_begin, p_end, y, ldy);
  });
}

}  // namespace

BlockInt8GemmFn amx_block_int8_gemm_fn() { return amx_block_int8_gemm; }

}  // namespace vllm::kernels::cpu
