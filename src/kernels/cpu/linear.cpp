#include "base/logging.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {

// Our own kernels rather than oneDNN or OpenBLAS: they compute BF16 weights
// with FP32 FMAs (what this CPU does fastest, without widening the weights
// in memory) and keep one FMA chain per output whatever the batch, which
// batch invariance needs and which library GEMMs, free to pick a different
// algorithm per shape, do not promise.
void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool) {
  const cpu::GemmTable& gemm = cpu::active_gemm_table();
  cpu::PackedGemmFn fn = nullptr;
  switch (w.dtype) {
    case DType::kF32:
      fn = gemm.f32;
      break;
    case DType::kBF16:
      fn = gemm.bf16;
      break;
    case DType::kF16:
      fn = gemm.f16;
      break;
    case DType::kI32:
      VLLM_CHECK(false, "linear: unsupported weight dtype");
  }
  const int64_t n = w.rows;
  // Decode takes panels four at a time (gemm_blocks.h): chunks keep those groups whole.
  const int64_t grain = m == 1 ? 4 : 1;
  pool.parallel_for(
      w.num_panels(),
      [&](int64_t p_begin, int64_t p_end) {
        fn(x, m, w.data.data(), w.cols, n, p_begin, p_end, y, n);
        if (bias == nullptr) return;
        const int64_t j_end = std::min(n, p_end * kPanelWidth);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t j = p_begin * kPanelWidth; j < j_end; ++j) y[r * n + j] += bias[j];
        }
      },
      grain);
}

}  // namespace vllm::kernels
