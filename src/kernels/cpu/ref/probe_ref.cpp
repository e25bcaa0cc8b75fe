#include <cmath>

#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int kChains = 8;

float read_sum(const float* p, int64_t n) {
  float acc[kChains] = {};
  for (int64_t i = 0; i < n; i += kChains) {
    for (int c = 0; c < kChains; ++c) acc[c] += p[i + c];
  }
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

float fma_burst(int64_t iterations) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = static_cast<float>(c);
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& a : acc) a = std::fma(a, 0.999999f, 1e-7f);
  }
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

}  // namespace

ProbeTable ref_probe_table() { return {read_sum, fma_burst, kChains * 2}; }

}  // namespace vllm::kernels::cpu
