// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/dot_blocks.h"

namespace vllm::kernels::cpu {
namespace {

// 3 x 4 tiles: 12 accumulators, 3 activation vectors and 1 weight vector
// fill the 16 ymm registers.
struct Avx2 {
  using Reg = __m256;
  static constexpr int64_t kLanes = 8;
  static constexpr int kTileRows = 3;
  static constexpr int kTileCols = 4;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static float reduce(Reg v) {
    const __m128 lo = _mm256_castps256_ps128(v);
    const __m128 hi = _mm256_extractf128_ps(v, 1);
    __m128 s = _mm_add_ps(lo, hi);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

struct F32Weights {
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static float widen(float v) { return v; }
};

}  // namespace

DotTable avx2_dot_table() { return {"avx2", blocks::dot_block<Avx2, F32Weights, float>}; }

}  // namespace vllm::kernels::cpu
