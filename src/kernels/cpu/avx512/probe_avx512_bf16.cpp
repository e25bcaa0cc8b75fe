// Compiled with -mavx512f -mavx512bf16; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int kChains = 16;

float bf16_dot_burst(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));  // (1, 1)
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x33d633d6));  // (1e-7, 1e-7)
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& v : acc) v = _mm512_dpbf16_ps(v, a, b);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float l : lanes) sum += l;
  return sum;
}

}  // namespace

ProbeTable avx512_bf16_probe_table() {
  ProbeTable table = avx512_probe_table();
  table.bf16_dot_burst = bf16_dot_burst;
  table.bf16_dot_flops_per_iteration = kChains * 32 * 2;
  return table;
}

}  // namespace vllm::kernels::cpu
