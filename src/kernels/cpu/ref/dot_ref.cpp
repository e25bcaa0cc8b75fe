#include "kernels/cpu/dot.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {
namespace {

float dot_f32(const float* x, const float* w, int64_t k) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * w[i];
  return sum;
}

float dot_bf16(const float* x, const uint16_t* w, int64_t k) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * bf16_to_f32(w[i]);
  return sum;
}

float dot_f16(const float* x, const uint16_t* w, int64_t k) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * f16_to_f32(w[i]);
  return sum;
}

}  // namespace

DotTable ref_dot_table() { return {"ref", dot_f32, dot_bf16, dot_f16}; }

}  // namespace vllm::kernels::cpu
