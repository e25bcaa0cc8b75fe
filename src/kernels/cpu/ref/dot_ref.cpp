#include "kernels/cpu/dot.h"

namespace vllm::kernels::cpu {
namespace {

void dot_block(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y, int64_t ldy) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t i = 0; i < k; ++i) sum += x[r * k + i] * w[j * k + i];
      y[r * ldy + j] = sum;
    }
  }
}

}  // namespace

DotTable ref_dot_table() { return {"ref", dot_block}; }

}  // namespace vllm::kernels::cpu
