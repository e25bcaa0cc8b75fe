// Compiled with -mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vnni;
// reached only through the dispatch table, on CPUs with AMX-INT8.  gemm.h's
// block int8 arithmetic on tiles: for a tile of up to 16 activation rows and
// one half of a panel (16 columns), each block of 32 k is one tdpbssd of
// the rows' codes (32 signed bytes a row, read in place) by the half
// block's codes (eight rows of four k of 16 columns, staged as signed bytes
// from the packed numbers) into 16 x 16 int32 sums, which AVX-512 then adds
// to each output's FP32 chain, kept in registers across the blocks.  The sums are
// exact, so the outputs are the VNNI kernel's and the definition's bit for
// bit; fewer than 16 rows (decode) go to the VNNI kernel.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/avx512/block_params_avx512.h"
#include "kernels/cpu/block_int8_format.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kBlock = kActivationBlock;
constexpr int64_t kTileRows = 16;

// tmm0-1: the sums of up to 16 rows for two blocks; tmm4-5: the rows' codes
// of those blocks; tmm6-7: their half blocks' codes.
amx::TileConfig block_int8_config(int64_t rows) {
  amx::TileConfig c;
  for (int t : {0, 1}) {
    c.rows[t] = c.rows[t + 4] = static_cast<uint8_t>(rows);
    c.bytes_per_row[t] = 64;
    c.bytes_per_row[t + 4] = kBlock;
    c.rows[t + 6] = kBlock / 4;
    c.bytes_per_row[t + 6] = 64;
  }
  return c;
}

// The signed codes of block b's half (its unsigned numbers less code_bias)
// staged as bytes for tdpbssd: eight rows of four k of 16 columns.
template <int kBits>
inline __attribute__((always_inline)) void stage_codes(const uint8_t* half_block, __m512i table, int8_t* out) {
  if constexpr (kBits == 4) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int v = 0; v < 4; ++v) {
      const __m512i bytes = _mm512_load_si512(half_block + 64 * v);
      _mm512_store_si512(out + 64 * v, _mm512_shuffle_epi8(table, _mm512_and_si512(bytes, nibble)));
      _mm512_store_si512(out + 64 * (v + 4),
                         _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble)));
    }
  } else {
    for (int v = 0; v < 8; ++v) {  // 8-bit numbers are codes + 128
      _mm512_store_si512(out + 64 * v,
                         _mm512_xor_si512(_mm512_load_si512(half_block + 64 * v), _mm512_set1_epi8(-128)));
    }
  }
}

// The int32 sums of block b (at `sums`, 16 rows of 16 columns) into each
// row's FP32 chain.
template <QuantParams kParams, bool kOffsets>
inline __attribute__((always_inline)) void add_block(const int32_t* sums, const uint8_t* group, int64_t half,
                                                     const float* block_scales, const int32_t* block_sums, int64_t rows,
                                                     int64_t blocks, int64_t b, __m512* acc) {
  const __m512 scales = load_group_params<kParams>(group, nullptr, 0, half);
  __m512 offsets = _mm512_setzero_ps();
  if constexpr (kOffsets) offsets = load_group_params<kParams>(group, nullptr, 1, half);
#pragma GCC unroll 16
  for (int64_t r = 0; r < kTileRows; ++r) {
    const int64_t row = std::min(r, rows - 1);  // rows past `rows` repeat the last (and are not stored)
    const float s = block_scales[row * blocks + b];
    acc[r] = _mm512_fmadd_ps(
        scales, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums + r * 16)), _mm512_set1_ps(s)), acc[r]);
    if constexpr (kOffsets) {
      acc[r] = _mm512_fmadd_ps(offsets, _mm512_set1_ps(s * static_cast<float>(block_sums[row * blocks + b])), acc[r]);
    }
  }
}

// `rows` rows (their codes at q) against columns 16 * half .. + 15 of panel
// p, two blocks at a time (tmm0-1 their sums, tmm4-5 the rows' codes, tmm6-7
// the staged weights) so that one pair's products overlap the other's sums.
template <int kBits, QuantParams kParams, bool kOffsets>
void tile_half(const int8_t* q, int64_t rows, const float* block_scales, const int32_t* block_sums,
               const PackedMatrix& w, __m512i table, int64_t p, int64_t half, float* y, int64_t ldy) {
  const QuantFormat& f = w.quant;
  const int64_t k_total = w.cols, blocks = k_total / kBlock;
  constexpr int64_t kHalfBytes = kBits == 4 ? 256 : 512;
  const uint8_t* codes = w.data.as<uint8_t>() + p * f.panel_code_bytes(k_total) + half * kHalfBytes;
  const uint8_t* params = w.group_params.as<uint8_t>() + p * f.panel_param_bytes(k_total) + f.panel_base_bytes(k_total);
  alignas(64) int32_t sums[2][kTileRows * 16] = {};
  alignas(64) int8_t staged[2][kBlock / 4 * 64];
  __m512 acc[kTileRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    stage_codes<kBits>(codes + b * 2 * kHalfBytes, table, staged[0]);
    stage_codes<kBits>(codes + (b + 1) * 2 * kHalfBytes, table, staged[1]);
    amx::tile_zero<0>();
    amx::tile_zero<1>();
    amx::tile_load<4>(q + b * kBlock, k_total);
    amx::tile_load<6>(staged[0], 64);
    amx::tile_load<5>(q + (b + 1) * kBlock, k_total);
    amx::tile_load<7>(staged[1], 64);
    amx::tile_dot_s8s8<0, 4, 6>();
    amx::tile_dot_s8s8<1, 5, 7>();
    amx::tile_store<0>(sums[0], 64);
    amx::tile_store<1>(sums[1], 64);
    add_block<kParams, kOffsets>(sums[0], params + b * f.group_param_bytes(), half, block_scales, block_sums, rows,
                                 blocks, b, acc);
    add_block<kParams, kOffsets>(sums[1], params + (b + 1) * f.group_param_bytes(), half, block_scales, block_sums,
                                 rows, blocks, b + 1, acc);
  }
  if (b < blocks) {
    stage_codes<kBits>(codes + b * 2 * kHalfBytes, table, staged[0]);
    amx::tile_zero<0>();
    amx::tile_load<4>(q + b * kBlock, k_total);
    amx::tile_load<6>(staged[0], 64);
    amx::tile_dot_s8s8<0, 4, 6>();
    amx::tile_store<0>(sums[0], 64);
    add_block<kParams, kOffsets>(sums[0], params + b * f.group_param_bytes(), half, block_scales, block_sums, rows,
                                 blocks, b, acc);
  }
  const int64_t first = p * kPanelWidth + half * 16;
  const auto mask = static_cast<__mmask16>((1u << std::clamp<int64_t>(w.rows - first, 0, 16)) - 1u);
#pragma GCC unroll 16
  for (int64_t r = 0; r < kTileRows; ++r) {
    if (r < rows) _mm512_mask_storeu_ps(y + r * ldy + first, mask, acc[r]);
  }
}

template <int kBits, QuantParams kParams, bool kOffsets>
void gemm(const int8_t* q, const float* block_scales, const int32_t* block_sums, int64_t m, const PackedMatrix& w,
          __m512i table, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t k_total = w.cols, blocks = k_total / kBlock;
  amx::for_blocks_and_panels(
      m, p_begin, p_end, kTileRows, k_total, w.quant.panel_code_bytes(k_total),
      [](int64_t rows) { amx::use_tile_config(block_int8_config(rows)); },
      [&](int64_t r, int64_t rows, int64_t p) {
        for (int64_t half = 0; half < 2 && p * kPanelWidth + half * 16 < w.rows; ++half) {
          tile_half<kBits, kParams, kOffsets>(q + r * k_total, rows, block_scales + r * blocks, block_sums + r * blocks,
                                              w, table, p, half, y + r * ldy, ldy);
        }
      });
}

void amx_block_int8_gemm(const int8_t* q, const float* block_scales, const int32_t* block_sums, int64_t m,
                         const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  // The K-quants' matrices (parameters in steps, groups of 16) and 6-bit
  // numbers are left to VNNI: this epilogue takes one group a block (whose
  // code sums are the blocks'), its parameters as FP16 or FP32, its codes
  // in 4 or 8 bits, and no machine with AMX has yet run it on the others.
  if (m < kTileRows || w.quant.params == QuantParams::kSteps || w.quant.group_size != kBlock ||
      w.quant.codes == QuantCodes::kBlockInt6) {
    return avx512_vnni_block_int8_gemm()(q, block_scales, block_sums, m, w, p_begin, p_end, y, ldy);
  }
  // A nibble's code, in each 128-bit lane (vpshufb looks up within lanes).
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.quant.int4_codes.data())));
  for_block_format(w.quant, [&]<int kBits, QuantParams kParams, bool kOffsets, int kGroups>() {
    if constexpr (kBits != 6 && kParams != QuantParams::kSteps && kGroups == 1)
      gemm<kBits, kParams, kOffsets>(q, block_scales, block_sums, m, w, table, p_begin, p_end, y, ldy);
  });
}

}  // namespace

BlockInt8GemmFn amx_block_int8_gemm_fn() { return amx_block_int8_gemm; }

}  // namespace vllm::kernels::cpu
