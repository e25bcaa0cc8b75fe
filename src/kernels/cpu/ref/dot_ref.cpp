#include "kernels/cpu/dot.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {
namespace {

float widen(float v) { return v; }
float widen_bf16(uint16_t v) { return bf16_to_f32(v); }
float widen_f16(uint16_t v) { return f16_to_f32(v); }

template <typename W, float (*Widen)(W)>
void dot_block(const float* x, int64_t m, const W* w, int64_t n, int64_t k, float* y, int64_t ldy) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t i = 0; i < k; ++i) sum += x[r * k + i] * Widen(w[j * k + i]);
      y[r * ldy + j] = sum;
    }
  }
}

}  // namespace

DotTable ref_dot_table() {
  return {"ref", dot_block<float, widen>, dot_block<uint16_t, widen_bf16>, dot_block<uint16_t, widen_f16>};
}

}  // namespace vllm::kernels::cpu
