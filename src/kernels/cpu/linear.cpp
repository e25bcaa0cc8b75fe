#include <algorithm>

#include "base/logging.h"
#include "kernels/cpu/dot.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

// Output columns per tile: a tile of weight rows (up to 32 x K x 4 bytes)
// stays in L2 while every activation row passes over it.
constexpr int64_t kRowsPerTile = 32;

template <typename DotRow>
void linear_tiles(const float* x, int64_t m, int64_t n_total, int64_t k, const float* bias, float* y, ThreadPool& pool,
                  DotRow dot_row) {
  pool.parallel_for(
      n_total,
      [&](int64_t n_begin, int64_t n_end) {
        for (int64_t tile = n_begin; tile < n_end; tile += kRowsPerTile) {
          const int64_t tile_end = std::min(n_end, tile + kRowsPerTile);
          for (int64_t row = 0; row < m; ++row) {
            const float* xr = x + row * k;
            float* yr = y + row * n_total;
            for (int64_t n = tile; n < tile_end; ++n) {
              yr[n] = dot_row(xr, n) + (bias ? bias[n] : 0.0f);
            }
          }
        }
      },
      kRowsPerTile);
}

}  // namespace

void linear(const float* x, int64_t m, const Tensor& w, const float* bias, float* y, ThreadPool& pool) {
  VLLM_CHECK(w.rank() == 2, "linear weight must be 2-D");
  const int64_t n = w.dim(0);
  const int64_t k = w.dim(1);
  const cpu::DotTable& dot = cpu::active_dot_table();
  switch (w.dtype) {
    case DType::kF32: {
      const float* wp = w.as<float>();
      linear_tiles(x, m, n, k, bias, y, pool, [&](const float* xr, int64_t r) { return dot.f32(xr, wp + r * k, k); });
      return;
    }
    case DType::kBF16: {
      const uint16_t* wp = w.as<uint16_t>();
      linear_tiles(x, m, n, k, bias, y, pool, [&](const float* xr, int64_t r) { return dot.bf16(xr, wp + r * k, k); });
      return;
    }
    case DType::kF16: {
      const uint16_t* wp = w.as<uint16_t>();
      linear_tiles(x, m, n, k, bias, y, pool, [&](const float* xr, int64_t r) { return dot.f16(xr, wp + r * k, k); });
      return;
    }
    case DType::kI32:
      break;
  }
  VLLM_CHECK(false, "linear: unsupported weight dtype");
}

}  // namespace vllm::kernels
