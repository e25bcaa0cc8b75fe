#include <algorithm>

#include "base/logging.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {

// Our own kernels rather than oneDNN or OpenBLAS: they compute BF16 weights
// with FP32 FMAs, BF16 dot products or AMX tiles (whichever this CPU does
// fastest, without widening the weights in memory) and keep one
// accumulation order per output whatever the batch, which batch invariance
// needs and which library GEMMs, free to pick a different algorithm per
// shape, do not promise.
namespace {

cpu::PackedGemmFn gemm_for(const PackedMatrix& w) {
  VLLM_CHECK(
      w.layout == packed_layout(w.dtype),
      "linear: weights packed for another instruction set than the one in use (--cpu-isa is set before loading)");
  const cpu::GemmTable& gemm = cpu::active_gemm_table();
  switch (w.dtype) {
    case DType::kF32:
      return gemm.f32;
    case DType::kBF16:
      return gemm.bf16;
    case DType::kF16:
      return gemm.f16;
    case DType::kI32:
      break;
  }
  VLLM_CHECK(false, "linear: unsupported weight dtype");
  return nullptr;
}

// Decode takes panels four at a time (gemm_blocks.h): work is cut in such groups.
constexpr int64_t kDecodePanels = 4;

}  // namespace

void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool) {
  const cpu::PackedGemmFn fn = gemm_for(w);
  const int64_t n = w.rows;
  // Chunks keep decode's groups of panels whole.
  const int64_t grain = m == 1 ? kDecodePanels : 1;
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

void linear_group(const std::vector<LinearProblem>& problems, ThreadPool& pool) {
  // Work unit u: a group of kDecodePanels panels of one problem; first_unit[i]
  // is problem i's first.
  std::vector<int64_t> first_unit(problems.size() + 1, 0);
  for (size_t i = 0; i < problems.size(); ++i) {
    const int64_t units = (problems[i].w->num_panels() + kDecodePanels - 1) / kDecodePanels;
    first_unit[i + 1] = first_unit[i] + units;
  }
  pool.parallel_for(first_unit.back(), [&](int64_t u_begin, int64_t u_end) {
    auto i =
        static_cast<size_t>(std::upper_bound(first_unit.begin(), first_unit.end(), u_begin) - first_unit.begin() - 1);
    for (; i < problems.size() && first_unit[i] < u_end; ++i) {
      const LinearProblem& p = problems[i];
      const int64_t from = std::max(u_begin, first_unit[i]) - first_unit[i];
      const int64_t to = std::min(u_end, first_unit[i + 1]) - first_unit[i];
      const int64_t panels = p.w->num_panels();
      gemm_for (*p.w)(p.x, p.m, p.w->data.data(), p.w->cols, p.w->rows, from * kDecodePanels,
                      std::min(panels, to * kDecodePanels), p.y, p.w->rows);
    }
  });
}

}  // namespace vllm::kernels
