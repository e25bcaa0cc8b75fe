// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/dot.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {
namespace {

inline float horizontal_sum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 load_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Four independent accumulators hide the FMA latency; the fixed order of the
// final reduction keeps the result identical from call to call.
template <typename LoadW, typename WidenScalar, typename W>
inline float dot_impl(const float* x, const W* w, int64_t k, LoadW load_w, WidenScalar widen) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), load_w(w + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), load_w(w + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), load_w(w + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), load_w(w + i + 24), acc3);
  }
  for (; i + 8 <= k; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), load_w(w + i), acc0);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < k; ++i) sum += x[i] * widen(w[i]);
  return sum;
}

float dot_f32(const float* x, const float* w, int64_t k) {
  return dot_impl(
      x, w, k, [](const float* p) { return _mm256_loadu_ps(p); }, [](float v) { return v; });
}

float dot_bf16(const float* x, const uint16_t* w, int64_t k) { return dot_impl(x, w, k, load_bf16, bf16_to_f32); }

float dot_f16(const float* x, const uint16_t* w, int64_t k) { return dot_impl(x, w, k, load_f16, f16_to_f32); }

}  // namespace

DotTable avx2_dot_table() { return {"avx2", dot_f32, dot_bf16, dot_f16}; }

}  // namespace vllm::kernels::cpu
