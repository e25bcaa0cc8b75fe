#include <cmath>
#include <cstring>
#include <functional>

#include "base/logging.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {

void embedding(const PackedMatrix& table, const int32_t* ids, int64_t num_tokens, float* out) {
  const int64_t hidden = table.cols;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t i = 0; i < hidden; ++i) out[t * hidden + i] = table.at(ids[t], i);
  }
}

namespace {

// Below this many elements an op runs on the calling thread: waking the
// others would cost more than it saves (a decode step's ops are this small).
constexpr int64_t kParallelElements = 8 * 1024;

void for_rows(int64_t rows, int64_t row_elements, ThreadPool& pool, const std::function<void(int64_t, int64_t)>& fn) {
  if (rows < 2 || rows * row_elements < kParallelElements) return fn(0, rows);
  pool.parallel_for(rows, fn);
}

void rms_norm_row(const float* x, int64_t n, const float* weight, float eps, float* y) {
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv_rms * weight[i];
}

void layer_norm_row(const float* x, int64_t n, const float* weight, const float* bias, float eps, float* y) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sum_sq = 0.0f;  // of the deviations: exact where x sits far from 0
  for (int64_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float inv_std = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv_std * weight[i] + bias[i];
}

// Each row of x normalised into y by `row_fn(x_row, y_row)`.
template <typename RowFn>
void normalize_rows(const float* x, int64_t rows, int64_t n, float* y, ThreadPool& pool, const RowFn& row_fn) {
  for_rows(rows, n, pool, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row_fn(x + r * n, y + r * n);
  });
}

// residual += delta, then each row normalised into y by `row_fn`.
template <typename RowFn>
void add_and_normalize_rows(float* residual, const float* delta, int64_t rows, int64_t n, float* y, ThreadPool& pool,
                            const RowFn& row_fn) {
  for_rows(rows, n, pool, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = residual + r * n;
      for (int64_t i = 0; i < n; ++i) row[i] += delta[r * n + i];
      row_fn(row, y + r * n);
    }
  });
}

}  // namespace

void rms_norm(const float* x, int64_t rows, int64_t n, const float* weight, float eps, float* y, ThreadPool& pool) {
  normalize_rows(x, rows, n, y, pool, [&](const float* in, float* out) { rms_norm_row(in, n, weight, eps, out); });
}

void fused_add_rms_norm(float* residual, const float* delta, int64_t rows, int64_t n, const float* weight, float eps,
                        float* y, ThreadPool& pool) {
  add_and_normalize_rows(residual, delta, rows, n, y, pool,
                         [&](const float* in, float* out) { rms_norm_row(in, n, weight, eps, out); });
}

void layer_norm(const float* x, int64_t rows, int64_t n, const float* weight, const float* bias, float eps, float* y,
                ThreadPool& pool) {
  normalize_rows(x, rows, n, y, pool,
                 [&](const float* in, float* out) { layer_norm_row(in, n, weight, bias, eps, out); });
}

void fused_add_layer_norm(float* residual, const float* delta, int64_t rows, int64_t n, const float* weight,
                          const float* bias, float eps, float* y, ThreadPool& pool) {
  add_and_normalize_rows(residual, delta, rows, n, y, pool,
                         [&](const float* in, float* out) { layer_norm_row(in, n, weight, bias, eps, out); });
}

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t rotary_dim, const float* cos,
          const float* sin, ThreadPool& pool, RopeLayout layout) {
  const int64_t half = rotary_dim / 2;
  // Dimension i of the first and of the second of each rotated pair.
  const int64_t first_step = layout == RopeLayout::kInterleaved ? 2 : 1;
  const int64_t second = layout == RopeLayout::kInterleaved ? 1 : half;
  for_rows(num_tokens, num_heads * head_dim, pool, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* c = cos + t * half;
      const float* s = sin + t * half;
      for (int64_t h = 0; h < num_heads; ++h) {
        float* v = x + (t * num_heads + h) * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          float* first = v + i * first_step;
          const float a = first[0];
          const float b = first[second];
          first[0] = a * c[i] - b * s[i];
          first[second] = b * c[i] + a * s[i];
        }
      }
    }
  });
}

namespace {

void gated_activation(void (*row_fn)(const float*, int64_t, float*), const float* gate_up, int64_t num_tokens,
                      int64_t n, float* out, ThreadPool& pool) {
  for_rows(num_tokens, n, pool, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) row_fn(gate_up + t * 2 * n, n, out + t * n);
  });
}

}  // namespace

void silu_and_mul(const float* gate_up, int64_t num_tokens, int64_t n, float* out, ThreadPool& pool) {
  gated_activation(cpu::active_activation_table().silu_and_mul_row, gate_up, num_tokens, n, out, pool);
}

void gelu_tanh_and_mul(const float* gate_up, int64_t num_tokens, int64_t n, float* out, ThreadPool& pool) {
  gated_activation(cpu::active_activation_table().gelu_tanh_and_mul_row, gate_up, num_tokens, n, out, pool);
}

void exp_shifted(const float* x, int64_t n, float shift, float* out) {
  cpu::active_activation_table().exp_shifted(x, n, shift, out);
}

}  // namespace vllm::kernels
