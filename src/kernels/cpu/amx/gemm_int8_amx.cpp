// Compiled with -mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vnni;
// reached only through the dispatch table, on CPUs with AMX-INT8.  gemm.h's
// int8 arithmetic on tiles: a block of up to 32 activation rows (q + 128,
// read in place: rows int8_dot_depth bytes apart) against one kInt8Dot
// panel keeps a 2 x 2 grid of 16 x 16 int32 accumulator tiles (tmm0-3) over
// the whole depth, two activation tiles (tmm4-5) and the panel's two code
// tiles (tmm6-7) per 64-k chunk, multiplied with tdpbusd.  The sums are
// exact, so they are the VNNI kernel's and the reference's bit for bit;
// few rows (decode) go to the VNNI kernel, which streams the codes faster
// than tiles of one row.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kTileRows = 16;
constexpr int64_t kBlockRows = 2 * kTileRows;
// Rows below this go to the VNNI kernel.
constexpr int64_t kTileMinRows = 16;

// Accumulator tile T (rows x 16 int32 sums of columns first .. first + 15 of
// panel p) scaled into y, columns past the matrix dropped.
template <int T>
void store_tile(const PackedMatrix& w, int64_t p, int64_t half, int64_t rows, const float* row_scales,
                const int32_t* row_zero_points, float* y, int64_t ldy) {
  const int64_t first = p * kPanelWidth + half * 16;
  if (first >= w.rows) return;
  alignas(64) int32_t sums[kTileRows * 16];
  amx::tile_store<T>(sums, 64);
  const __m512i colsums = _mm512_loadu_si512(int8_dot_code_sums(w, p) + half * 16);
  const __m512 scales = _mm512_loadu_ps(int8_dot_scales(w, p) + half * 16);
  const auto mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, w.rows - first)) - 1u);
  for (int64_t r = 0; r < rows; ++r) {
    // The unsigned rows' excess, 128 times the code sums, and the zero point's.
    const int32_t offset = 128 + (row_zero_points != nullptr ? row_zero_points[r] : 0);
    const __m512i excess = _mm512_mullo_epi32(colsums, _mm512_set1_epi32(offset));
    const __m512 exact = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(sums + r * 16), excess));
    _mm512_mask_storeu_ps(y + r * ldy + first, mask,
                          _mm512_mul_ps(_mm512_set1_ps(row_scales[r]), _mm512_mul_ps(scales, exact)));
  }
}

// One block of `rows` rows (their activations at q) against panel p.
void block_panel(const uint8_t* q, int64_t rows, int64_t depth, const float* row_scales, const int32_t* row_zero_points,
                 const PackedMatrix& w, int64_t p, float* y, int64_t ldy) {
  const bool two = rows > kTileRows;
  const int8_t* codes = int8_dot_codes(w, p);
  _tile_zero(0);
  _tile_zero(1);
  if (two) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t k = 0; k < depth; k += kInt8DotDepth, codes += kInt8DotChunkBytes) {
    amx::tile_load<4>(q + k, depth);
    amx::tile_load<6>(codes, 64);
    amx::tile_load<7>(codes + kInt8DotChunkBytes / 2, 64);
    amx::tile_dot_u8s8<0, 4, 6>();
    amx::tile_dot_u8s8<1, 4, 7>();
    if (two) {
      amx::tile_load<5>(q + kTileRows * depth + k, depth);
      amx::tile_dot_u8s8<2, 5, 6>();
      amx::tile_dot_u8s8<3, 5, 7>();
    }
  }
  const int64_t top = std::min(rows, kTileRows);
  store_tile<0>(w, p, 0, top, row_scales, row_zero_points, y, ldy);
  store_tile<1>(w, p, 1, top, row_scales, row_zero_points, y, ldy);
  if (two) {
    float* bottom = y + kTileRows * ldy;
    const int32_t* bottom_zero_points = row_zero_points != nullptr ? row_zero_points + kTileRows : nullptr;
    store_tile<2>(w, p, 0, rows - kTileRows, row_scales + kTileRows, bottom_zero_points, bottom, ldy);
    store_tile<3>(w, p, 1, rows - kTileRows, row_scales + kTileRows, bottom_zero_points, bottom, ldy);
  }
}

void amx_int8_gemm(const uint8_t* q, const float* row_scales, const int32_t* row_zero_points, int64_t m,
                   const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  if (m < kTileMinRows) return avx512_vnni_int8_gemm()(q, row_scales, row_zero_points, m, w, p_begin, p_end, y, ldy);
  const int64_t depth = int8_dot_depth(w.cols);
  amx::for_blocks_and_panels(
      m, p_begin, p_end, kBlockRows, depth, w.quant.panel_code_bytes(w.cols),
      [](int64_t rows) { amx::use_tile_config(amx::block_config(rows)); },
      [&](int64_t b, int64_t rows, int64_t panel) {
        block_panel(q + b * depth, rows, depth, row_scales + b,
                    row_zero_points != nullptr ? row_zero_points + b : nullptr, w, panel, y + b * ldy, ldy);
      });
}

}  // namespace

Int8GemmFn amx_int8_gemm_fn() { return amx_int8_gemm; }

}  // namespace vllm::kernels::cpu
