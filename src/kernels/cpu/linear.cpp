#include <algorithm>
#include <vector>

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

// The GEMM of w's format: m rows of x against panels [p_begin, p_end), into y (rows w.rows apart).
void gemm(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y) {
  if (w.quantized()) return cpu::active_gemm_table().quantized(x, m, w, p_begin, p_end, y, w.rows);
  gemm_for(w)(x, m, w.data.data(), w.cols, w.rows, p_begin, p_end, y, w.rows);
}

// x in w's input order (a GPTQ act-order matrix's: packed_matrix.h), gathered
// into `buffer`, or x itself when w takes its inputs in order.
const float* in_input_order(const float* x, int64_t m, const PackedMatrix& w, std::vector<float>& buffer) {
  if (w.input_order.empty()) return x;
  const int64_t k_total = w.cols;
  buffer.resize(static_cast<size_t>(m * k_total));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k_total; ++c)
      buffer[static_cast<size_t>(r * k_total + c)] = x[r * k_total + w.input_order[static_cast<size_t>(c)]];
  }
  return buffer.data();
}

// Decode takes panels four at a time (gemm_blocks.h): work is cut in such groups.
constexpr int64_t kDecodePanels = 4;

// The AMX kernel rounds every activation row it is given to BF16 tiles
// first: when threads share the panels, each rounds all the rows.  With
// many rows against few panels the threads share the rows instead, each
// rounding only its own and reading every panel.  Measured on a Xeon at
// 512 rows: smollm's up projection (1536 outputs) 1.45x faster, qwen2.5's
// (4864) the same, llama-3.2-1b's (8192) a little slower, as each thread
// then streams the whole 32 MB of weights: so rows are shared up to 8
// outputs a row, from four of the kernel's 32-row blocks.
constexpr int64_t kRowSplitRows = 128;
constexpr int64_t kRowSplitOutputsPerRow = 8;
constexpr int64_t kRowSplitGrain = 32;

bool splits_rows(const PackedMatrix& w, int64_t m) {
  return w.layout == PanelLayout::kAmxTiles && m >= kRowSplitRows && w.rows <= kRowSplitOutputsPerRow * m;
}

}  // namespace

void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool) {
  thread_local std::vector<float> gathered;  // kept between calls: decode gathers every step
  x = in_input_order(x, m, w, gathered);
  const int64_t n = w.rows, num_panels = w.num_panels();
  // Rows [r_begin, r_end) times panels [p_begin, p_end), then the bias.
  const auto product = [&](int64_t r_begin, int64_t r_end, int64_t p_begin, int64_t p_end) {
    gemm(x + r_begin * w.cols, r_end - r_begin, w, p_begin, p_end, y + r_begin * n);
    if (bias == nullptr) return;
    const int64_t j_end = std::min(n, p_end * kPanelWidth);
    for (int64_t r = r_begin; r < r_end; ++r) {
      for (int64_t j = p_begin * kPanelWidth; j < j_end; ++j) y[r * n + j] += bias[j];
    }
  };
  if (splits_rows(w, m)) {
    const int64_t blocks = (m + kRowSplitGrain - 1) / kRowSplitGrain;
    pool.parallel_for(blocks, [&](int64_t b_begin, int64_t b_end) {
      product(b_begin * kRowSplitGrain, std::min(m, b_end * kRowSplitGrain), 0, num_panels);
    });
    return;
  }
  // Chunks keep decode's groups of panels whole.
  const int64_t grain = m == 1 ? kDecodePanels : 1;
  pool.parallel_for(
      num_panels, [&](int64_t p_begin, int64_t p_end) { product(0, m, p_begin, p_end); }, grain);
}

void linear_group(const std::vector<LinearProblem>& given, ThreadPool& pool) {
  // Problems over act-order matrices take their inputs gathered (a GPTQ
  // mixture's experts); the others are used as given.
  std::vector<LinearProblem> regathered;
  std::vector<std::vector<float>> gathered;
  const bool any_ordered =
      std::any_of(given.begin(), given.end(), [](const LinearProblem& p) { return !p.w->input_order.empty(); });
  if (any_ordered) {
    regathered = given;
    gathered.resize(given.size());
    for (size_t i = 0; i < given.size(); ++i) {
      regathered[i].x = in_input_order(given[i].x, given[i].m, *given[i].w, gathered[i]);
    }
  }
  const std::vector<LinearProblem>& problems = any_ordered ? regathered : given;
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
      gemm(p.x, p.m, *p.w, from * kDecodePanels, std::min(panels, to * kDecodePanels), p.y);
    }
  });
}

}  // namespace vllm::kernels
