// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/dot.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {
namespace {

// Every output x . w is summed the same way: four 8-lane accumulators, the
// a-th taking elements [32t + 8a, 32t + 8a + 8) for t = 0, 1, ... in order;
// then 8-element steps into the first; then ((a0 + a1) + (a2 + a3)), a fixed
// horizontal sum and a scalar tail.  A single row computes the four
// accumulators in one pass, reading its weights front to back (decode: as
// fast as memory allows); a tile of several activation rows computes them
// one phase a at a time, each phase a full pass with 12 accumulators, so
// each widened weight vector feeds several FMAs.  Same arithmetic either
// way, so a row's result never depends on the batch around it.
constexpr int kTileRows = 3;
constexpr int kTileCols = 4;

inline float horizontal_sum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct F32Weights {
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static float widen(float v) { return v; }
};
struct BF16Weights {
  static __m256 load(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float widen(uint16_t v) { return bf16_to_f32(v); }
};
struct F16Weights {
  static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float widen(uint16_t v) { return f16_to_f32(v); }
};

// The shared ending: the 8-element steps after the last 32-element block go
// into accumulator 0, then the reduction and the scalar tail.
template <typename Weights, typename W>
float finish_dot(const float* x, const W* w, int64_t k, int64_t i, __m256 acc[4]) {
  for (; i + 8 <= k; i += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), Weights::load(w + i), acc[0]);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < k; ++i) sum += x[i] * Weights::widen(w[i]);
  return sum;
}

template <typename Weights, typename W>
float dot_row(const float* x, const W* w, int64_t k) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    for (int a = 0; a < 4; ++a)
      acc[a] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * a), Weights::load(w + i + 8 * a), acc[a]);
  }
  return finish_dot<Weights>(x, w, k, i, acc);
}

// R activation rows x N weight rows, phase by phase.
template <int R, int N, typename Weights, typename W>
void dot_tile(const float* x, const W* w, int64_t k, float* y, int64_t ldy) {
  const int64_t blocks_end = k / 32 * 32;
  __m256 acc[R][N][4];
  for (int a = 0; a < 4; ++a) {
    __m256 phase[R][N];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < N; ++j) phase[r][j] = _mm256_setzero_ps();
    }
    for (int64_t i = 8 * a; i < blocks_end; i += 32) {
      __m256 xv[R];
      for (int r = 0; r < R; ++r) xv[r] = _mm256_loadu_ps(x + r * k + i);
      for (int j = 0; j < N; ++j) {
        const __m256 wv = Weights::load(w + j * k + i);
        for (int r = 0; r < R; ++r) phase[r][j] = _mm256_fmadd_ps(xv[r], wv, phase[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < N; ++j) acc[r][j][a] = phase[r][j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < N; ++j) y[r * ldy + j] = finish_dot<Weights>(x + r * k, w + j * k, k, blocks_end, acc[r][j]);
  }
}

template <int R, typename Weights, typename W>
void dot_tile_cols(const float* x, const W* w, int64_t n, int64_t k, float* y, int64_t ldy) {
  switch (n) {
    case 1:
      return dot_tile<R, 1, Weights>(x, w, k, y, ldy);
    case 2:
      return dot_tile<R, 2, Weights>(x, w, k, y, ldy);
    case 3:
      return dot_tile<R, 3, Weights>(x, w, k, y, ldy);
    default:
      return dot_tile<R, 4, Weights>(x, w, k, y, ldy);
  }
}

// Weight rows outermost: kTileCols of them stay in L1 while the activation
// rows pass under them.
template <typename Weights, typename W>
void dot_block(const float* x, int64_t m, const W* w, int64_t n, int64_t k, float* y, int64_t ldy) {
  if (m == 1) {
    for (int64_t j = 0; j < n; ++j) y[j] = dot_row<Weights>(x, w + j * k, k);
    return;
  }
  for (int64_t j = 0; j < n; j += kTileCols) {
    const int64_t cols = n - j < kTileCols ? n - j : kTileCols;
    const W* wj = w + j * k;
    for (int64_t r = 0; r < m; r += kTileRows) {
      const float* xr = x + r * k;
      float* yr = y + r * ldy + j;
      switch (m - r) {
        case 1:
          for (int64_t c = 0; c < cols; ++c) yr[c] = dot_row<Weights>(xr, wj + c * k, k);
          break;
        case 2:
          dot_tile_cols<2, Weights>(xr, wj, cols, k, yr, ldy);
          break;
        default:
          dot_tile_cols<kTileRows, Weights>(xr, wj, cols, k, yr, ldy);
          break;
      }
    }
  }
}

}  // namespace

DotTable avx2_dot_table() {
  return {"avx2", dot_block<F32Weights, float>, dot_block<BF16Weights, uint16_t>, dot_block<F16Weights, uint16_t>};
}

}  // namespace vllm::kernels::cpu
