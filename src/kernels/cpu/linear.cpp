#include <algorithm>

#include "base/logging.h"
#include "kernels/cpu/dot.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

// Weight rows per task: each thread takes whole chunks of them, so a row's
// outputs are computed the same way for any batch size or thread count.
constexpr int64_t kRowsPerChunk = 32;

template <typename W, typename DotFn>
void linear_chunks(const float* x, int64_t m, const W* w, int64_t n_total, int64_t k, const float* bias, float* y,
                   ThreadPool& pool, DotFn dot) {
  pool.parallel_for(
      n_total,
      [&](int64_t n_begin, int64_t n_end) {
        for (int64_t n = n_begin; n < n_end; n += kRowsPerChunk) {
          const int64_t rows = std::min(n_end, n + kRowsPerChunk) - n;
          dot(x, m, w + n * k, rows, k, y + n, n_total);
          if (bias == nullptr) continue;
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t j = n; j < n + rows; ++j) y[r * n_total + j] += bias[j];
          }
        }
      },
      kRowsPerChunk);
}

}  // namespace

void linear(const float* x, int64_t m, const Tensor& w, const float* bias, float* y, ThreadPool& pool) {
  VLLM_CHECK(w.rank() == 2, "linear weight must be 2-D");
  const int64_t n = w.dim(0);
  const int64_t k = w.dim(1);
  const cpu::DotTable& dot = cpu::active_dot_table();
  switch (w.dtype) {
    case DType::kF32:
      return linear_chunks(x, m, w.as<float>(), n, k, bias, y, pool, dot.f32);
    case DType::kBF16:
      return linear_chunks(x, m, w.as<uint16_t>(), n, k, bias, y, pool, dot.bf16);
    case DType::kF16:
      return linear_chunks(x, m, w.as<uint16_t>(), n, k, bias, y, pool, dot.f16);
    case DType::kI32:
      break;
  }
  VLLM_CHECK(false, "linear: unsupported weight dtype");
}

}  // namespace vllm::kernels
