// Compiled with -mavx512f; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int kChains = 16;  // 2 FMA ports x 4 cycles latency, twice over

float reduce(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float l : lanes) s += l;
  return s;
}

float read_sum(const float* p, int64_t n) {
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 128) {
    for (int a = 0; a < 8; ++a) acc[a] = _mm512_add_ps(acc[a], _mm512_load_ps(p + i + 16 * a));
  }
  for (int a = 1; a < 8; ++a) acc[0] = _mm512_add_ps(acc[0], acc[a]);
  return reduce(acc[0]);
}

float fma_burst(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 scale = _mm512_set1_ps(0.999999f), shift = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& a : acc) a = _mm512_fmadd_ps(a, scale, shift);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return reduce(acc[0]);
}

}  // namespace

ProbeTable avx512_probe_table() { return {read_sum, fma_burst, kChains * 16 * 2}; }

}  // namespace vllm::kernels::cpu
