// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table
// (AVX2 machines, and AVX-512 ones without VNNI).  gemm.h's int8 arithmetic
// with the activations widened to signed 16 bits: vpmaddwd multiplies two
// k of four columns at a time and adds each pair into int32, exactly, so
// the sums are gemm.h's whatever their grouping.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

// count (< 8 allowed) floats from p, zeros after.
__m256 load(const float* p, int64_t count) {
  if (count >= 8) return _mm256_loadu_ps(p);
  alignas(32) float part[8] = {};
  std::copy_n(p, std::max<int64_t>(count, 0), part);
  return _mm256_load_ps(part);
}

// As gemm_ref's biased_int8, 8 at a time, into out[0, 8).
void store_biased_int8(__m256 v, uint8_t* out) {
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));  // NaN -> -128
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(128));
  const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(biased), _mm256_extracti128_si256(biased, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(words, words));
}

float max_lane(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  return *std::max_element(lanes, lanes + 8);
}

void quantize_int8_rows(const float* x, int64_t m, int64_t k_total, float static_scale, uint8_t* q, float* row_scales) {
  const int64_t depth = int8_dot_depth(k_total);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k_total;
    float multiplier = 0.0f;
    if (static_scale == 0.0f) {
      __m256 amax = _mm256_setzero_ps();
      for (int64_t k = 0; k < k_total; k += 8) {
        amax = _mm256_max_ps(_mm256_andnot_ps(sign, load(row + k, k_total - k)), amax);  // a NaN keeps amax
      }
      const float row_amax = max_lane(amax);
      multiplier = row_amax == 0.0f ? 0.0f : 127.0f / row_amax;
      row_scales[r] = row_amax / 127.0f;
    } else {
      row_scales[r] = static_scale;
    }
    const __m256 by = _mm256_set1_ps(static_scale == 0.0f ? multiplier : static_scale);
    for (int64_t k = 0; k < depth; k += 8) {
      const __m256 v = load(row + k, k_total - k);
      store_biased_int8(static_scale == 0.0f ? _mm256_mul_ps(v, by) : _mm256_div_ps(v, by), q + r * depth + k);
    }
  }
}

// R rows against the 16 columns of half h of panel p: per row, four
// accumulators of four columns each, lanes (2c, 2c + 1) column c's two
// halves of each quad.
template <int R>
void rows_half(const uint8_t* q, int64_t depth, const float* row_scales, const int32_t* row_zero_points,
               const PackedMatrix& w, int64_t p, int h, float* y, int64_t ldy) {
  __m256i acc[R][4];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm256_setzero_si256();
  }
  const int8_t* codes = int8_dot_codes(w, p) + h * (kInt8DotChunkBytes / 2);
  for (int64_t chunk = 0; chunk < depth; chunk += kInt8DotDepth) {
    const int8_t* tile = codes + chunk / kInt8DotDepth * kInt8DotChunkBytes;
    for (int64_t quad = 0; quad < kInt8DotDepth / 4; ++quad) {
      __m256i weights[4];
      for (int g = 0; g < 4; ++g) {
        weights[g] = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tile + quad * 64 + g * 16)));
      }
      for (int r = 0; r < R; ++r) {
        int32_t four;
        std::memcpy(&four, q + r * depth + chunk + quad * 4, 4);
        const __m128i widened = _mm_sub_epi16(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(four)), _mm_set1_epi16(128));
        const __m256i a = _mm256_set1_epi64x(_mm_cvtsi128_si64(widened));
        for (int g = 0; g < 4; ++g) acc[r][g] = _mm256_add_epi32(acc[r][g], _mm256_madd_epi16(weights[g], a));
      }
    }
  }
  const int64_t first = p * kPanelWidth + h * 16, count = std::min<int64_t>(16, w.rows - first);
  const float* scales = int8_dot_scales(w, p) + h * 16;
  const int32_t* colsums = int8_dot_code_sums(w, p) + h * 16;
  for (int r = 0; r < R; ++r) {
    alignas(32) int32_t sums[16];
    for (int half = 0; half < 2; ++half) {  // columns 0-7, then 8-15
      const __m256i pairs = _mm256_hadd_epi32(acc[r][2 * half], acc[r][2 * half + 1]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums + 8 * half), _mm256_permute4x64_epi64(pairs, 0xD8));
    }
    const int32_t zp = row_zero_points != nullptr ? row_zero_points[r] : 0;
    for (int64_t c = 0; c < count; ++c) {
      y[r * ldy + first + c] = row_scales[r] * (scales[c] * static_cast<float>(sums[c] - zp * colsums[c]));
    }
  }
}

void int8_gemm(const uint8_t* q, const float* row_scales, const int32_t* row_zero_points, int64_t m,
               const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t depth = int8_dot_depth(w.cols);
  for (int64_t p = p_begin; p < p_end; ++p) {
    for (int h = 0; h < 2 && p * kPanelWidth + h * 16 < w.rows; ++h) {
      int64_t r = 0;
      for (; r + 2 <= m; r += 2) {
        rows_half<2>(q + r * depth, depth, row_scales + r, row_zero_points ? row_zero_points + r : nullptr, w, p, h,
                     y + r * ldy, ldy);
      }
      if (r < m) {
        rows_half<1>(q + r * depth, depth, row_scales + r, row_zero_points ? row_zero_points + r : nullptr, w, p, h,
                     y + r * ldy, ldy);
      }
    }
  }
}

}  // namespace

QuantizeInt8Fn avx2_quantize_int8_rows() { return quantize_int8_rows; }
Int8GemmFn avx2_int8_gemm() { return int8_gemm; }

}  // namespace vllm::kernels::cpu
