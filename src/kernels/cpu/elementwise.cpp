#include <cmath>
#include <cstring>

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm::kernels {

void embedding(const PackedMatrix& table, const int32_t* ids, int64_t num_tokens, float* out) {
  const int64_t hidden = table.cols;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t i = 0; i < hidden; ++i) out[t * hidden + i] = table.at(ids[t], i);
  }
}

void rms_norm(const float* x, int64_t rows, int64_t n, const float* weight, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float sum_sq = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum_sq += xr[i] * xr[i];
    const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv_rms * weight[i];
  }
}

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = x + (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i];
        const float b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

void silu_and_mul(const float* gate, const float* up, int64_t num_tokens, int64_t n, float* out) {
  const int64_t total = num_tokens * n;
  for (int64_t i = 0; i < total; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace vllm::kernels
