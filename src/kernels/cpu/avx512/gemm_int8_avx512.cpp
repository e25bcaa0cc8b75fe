// Compiled with -mavx512f -mavx512bw -mavx512vnni; reached only through the
// dispatch table, on CPUs with AVX512-VNNI.  gemm.h's int8 arithmetic: each
// vpdpbusd multiplies four k of one activation row (unsigned, q + 128) by
// the same four k of 16 columns (one row of a kInt8Dot tile) and adds the
// sums to 16 int32 accumulators; the excess 128 * code sum is taken off at
// the end.  Integer sums are exact, so any grouping gives gemm.h's bits.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

__mmask16 lanes(int64_t count) { return static_cast<__mmask16>((1u << std::clamp<int64_t>(count, 0, 16)) - 1u); }

// One activation scaled (by `scale`, or divided by it), clamped and rounded
// to nearest even, biased by 128: 16 at a time, as gemm_ref's biased_int8.
__m128i biased_int8(__m512 v) {
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));  // NaN -> -128
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(128)));
}

void quantize_int8_rows(const float* x, int64_t m, int64_t k_total, float static_scale, uint8_t* q, float* row_scales) {
  const int64_t depth = int8_dot_depth(k_total);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k_total;
    uint8_t* out = q + r * depth;
    float multiplier = 0.0f;
    if (static_scale == 0.0f) {
      __m512 amax = _mm512_setzero_ps();
      for (int64_t k = 0; k < k_total; k += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(lanes(k_total - k), row + k);
        amax = _mm512_max_ps(_mm512_abs_ps(v), amax);  // a NaN keeps amax, as std::max does
      }
      alignas(64) float amax_lanes[16];
      _mm512_store_ps(amax_lanes, amax);
      const float row_amax = *std::max_element(amax_lanes, amax_lanes + 16);
      multiplier = row_amax == 0.0f ? 0.0f : 127.0f / row_amax;
      row_scales[r] = row_amax / 127.0f;
    } else {
      row_scales[r] = static_scale;
    }
    const __m512 by = _mm512_set1_ps(static_scale == 0.0f ? multiplier : static_scale);
    for (int64_t k = 0; k < depth; k += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(lanes(k_total - k), row + k);
      // Padding (and lanes past k_total) quantize to 0 + 128.
      const __m512 scaled = static_scale == 0.0f ? _mm512_mul_ps(v, by) : _mm512_div_ps(v, by);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), biased_int8(scaled));
    }
  }
}

// R rows against P panels, every k: accumulators acc[r][panel half].
// Rows from r of a null-or-[m] list of zero points.
const int32_t* from_row(const int32_t* row_zero_points, int64_t r) {
  return row_zero_points != nullptr ? row_zero_points + r : nullptr;
}

template <int R, int P>
void rows_panels(const uint8_t* q, int64_t depth, const float* row_scales, const int32_t* row_zero_points,
                 const PackedMatrix& w, int64_t p, float* y, int64_t ldy) {
  __m512i acc[R][2 * P];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm512_setzero_si512();
  }
  const int64_t panel_bytes = w.quant.panel_code_bytes(w.cols);
  const int8_t* codes = int8_dot_codes(w, p);
  for (int64_t chunk = 0; chunk < depth; chunk += kInt8DotDepth) {
    const int8_t* tiles = codes + chunk / kInt8DotDepth * kInt8DotChunkBytes;
    // Unrolled: rolled, GCC 12 copied the accumulators between registers
    // around each vpdpbusd (38 vmovdqa to 16 of them in the 4 x 2 tile),
    // which then reached 55% of the instruction's peak; 77% unrolled
    // (kernel_benchmarks LinearInt8 at 512 rows, Zen 5).
#pragma GCC unroll 4
    for (int64_t quad = 0; quad < kInt8DotDepth / 4; ++quad) {
      __m512i weights[2 * P];
      for (int h = 0; h < 2 * P; ++h) {
        weights[h] = _mm512_load_si512(tiles + h / 2 * panel_bytes + h % 2 * (kInt8DotChunkBytes / 2) + quad * 64);
      }
      for (int r = 0; r < R; ++r) {
        int32_t four;
        __builtin_memcpy(&four, q + r * depth + chunk + quad * 4, 4);
        const __m512i a = _mm512_set1_epi32(four);
        for (int h = 0; h < 2 * P; ++h) acc[r][h] = _mm512_dpbusd_epi32(acc[r][h], a, weights[h]);
      }
    }
  }
  for (int h = 0; h < 2 * P; ++h) {
    const int64_t panel = p + h / 2, first = panel * kPanelWidth + h % 2 * 16;
    const __m512i colsums = _mm512_loadu_si512(int8_dot_code_sums(w, panel) + h % 2 * 16);
    const __m512 scales = _mm512_loadu_ps(int8_dot_scales(w, panel) + h % 2 * 16);
    const __mmask16 mask = lanes(w.rows - first);
    for (int r = 0; r < R; ++r) {
      // The unsigned rows' excess, 128 times the code sums, and the zero point's.
      const int32_t offset = 128 + (row_zero_points != nullptr ? row_zero_points[r] : 0);
      const __m512i excess = _mm512_mullo_epi32(colsums, _mm512_set1_epi32(offset));
      const __m512 sums = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][h], excess));
      const __m512 out = _mm512_mul_ps(_mm512_set1_ps(row_scales[r]), _mm512_mul_ps(scales, sums));
      _mm512_mask_storeu_ps(y + r * ldy + first, mask, out);
    }
  }
}

// Rows [0, rows) (< 4) against panels [p, p_end), up to four panels at once.
template <int R>
void few_rows(const uint8_t* q, int64_t depth, const float* row_scales, const int32_t* row_zero_points,
              const PackedMatrix& w, int64_t p, int64_t p_end, float* y, int64_t ldy) {
  for (; p + 4 <= p_end; p += 4) rows_panels<R, 4>(q, depth, row_scales, row_zero_points, w, p, y, ldy);
  for (; p < p_end; ++p) rows_panels<R, 1>(q, depth, row_scales, row_zero_points, w, p, y, ldy);
}

void vnni_int8_gemm(const uint8_t* q, const float* row_scales, const int32_t* row_zero_points, int64_t m,
                    const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t depth = int8_dot_depth(w.cols);
  const int64_t full = m / 4 * 4;
  // Four rows by two panels: 16 accumulators, 4 weight vectors.  Panels
  // outside, rows inside, so that two panels' codes (64 * depth bytes) stay
  // in L2 while every row passes over them: rows outside streamed the
  // whole matrix from L3 or memory once per four rows.
  for (int64_t p = p_begin; p < p_end; p += 2) {
    for (int64_t r = 0; r < full; r += 4) {
      const uint8_t* rows = q + r * depth;
      const int32_t* zero_points = from_row(row_zero_points, r);
      if (p + 2 <= p_end) {
        rows_panels<4, 2>(rows, depth, row_scales + r, zero_points, w, p, y + r * ldy, ldy);
      } else {
        rows_panels<4, 1>(rows, depth, row_scales + r, zero_points, w, p, y + r * ldy, ldy);
      }
    }
  }
  const int64_t r = full;
  const uint8_t* rest = q + r * depth;
  const int32_t* rest_zero_points = from_row(row_zero_points, r);
  switch (m - r) {
    case 1:
      return few_rows<1>(rest, depth, row_scales + r, rest_zero_points, w, p_begin, p_end, y + r * ldy, ldy);
    case 2:
      return few_rows<2>(rest, depth, row_scales + r, rest_zero_points, w, p_begin, p_end, y + r * ldy, ldy);
    case 3:
      return few_rows<3>(rest, depth, row_scales + r, rest_zero_points, w, p_begin, p_end, y + r * ldy, ldy);
    default:
      return;
  }
}

}  // namespace

QuantizeInt8Fn avx512_quantize_int8_rows() { return quantize_int8_rows; }
Int8GemmFn avx512_vnni_int8_gemm() { return vnni_int8_gemm; }

}  // namespace vllm::kernels::cpu
