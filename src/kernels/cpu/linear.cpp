#include <algorithm>
#include <atomic>
#include <functional>
#include <vector>

#include "base/aligned_buffer.h"
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
    case DType::kI8:
    case DType::kI64:
    case DType::kF8E4M3:
    case DType::kBool:
      break;
  }
  VLLM_CHECK(false, "linear: unsupported weight dtype");
  return nullptr;
}

// x as w takes it: float rows (gathered into w's input order if it has one:
// a GPTQ act-order matrix's), int8 rows for a kInt8Dot matrix, or rows of
// int8 blocks for a kBlockInt4 / kBlockInt6 / kBlockInt8 one (gemm.h).
struct Operand {
  const float* x = nullptr;
  const uint8_t* q = nullptr;  // kInt8Dot: rows int8_dot_depth(w.cols) bytes apart
  const float* row_scales = nullptr;
  const int32_t* row_zero_points = nullptr;  // kInt8Dot with asymmetric activations
  // Block int8: rows w.cols codes apart, their blocks' scales w.cols / 32
  // apart and their groups' code sums w.cols / group_size (gemm.h).
  const int8_t* blocks = nullptr;
  const float* block_scales = nullptr;
  const int32_t* group_sums = nullptr;
  // AMX: the rows rounded to BF16 once, in gemm.h's activation blocks.
  const uint16_t* bf16_tiles = nullptr;

  // r: a block's first row where the rows are bf16_tiles (only threads
  // that share the panels get those, so r is 0 there today).
  Operand from_row(int64_t r, const PackedMatrix& w) const {
    if (bf16_tiles != nullptr) {
      return {.bf16_tiles = bf16_tiles + r / kAmxBlockRows * amx_activation_block_elements(w.cols)};
    }
    if (q != nullptr) {
      return {nullptr, q + r * int8_dot_depth(w.cols), row_scales + r,
              row_zero_points != nullptr ? row_zero_points + r : nullptr};
    }
    if (blocks != nullptr) {
      return {.blocks = blocks + r * w.cols,
              .block_scales = block_scales + r * (w.cols / kActivationBlock),
              .group_sums = group_sums + r * (w.cols / w.quant.group_size)};
    }
    return {x + r * w.cols, nullptr, nullptr, nullptr};
  }
};

// What preparing an operand writes, kept between calls (decode prepares every step).
struct OperandBuffers {
  std::vector<float> gathered;
  AlignedBuffer q;
  std::vector<float> row_scales;
  std::vector<int32_t> row_zero_points;
  std::vector<int8_t> blocks;
  std::vector<float> block_scales;
  std::vector<int32_t> group_sums;
  AlignedBuffer bf16_tiles;
};

// Rows quantized in one piece below this, split over the pool above.
constexpr int64_t kParallelQuantizeRows = 64;

// x split over the pool in pieces of rows when it has many.
template <typename Fn>
void over_rows(int64_t m, ThreadPool& pool, Fn&& rows) {
  if (m < kParallelQuantizeRows) {
    rows(0, m);
  } else {
    pool.parallel_for(m, rows);
  }
}

// Threads sharing an AMX matrix at prefill sizes share either its panels
// (every thread reads every row, rounded to BF16 once for all of them) or
// its rows (each thread rounds its own and reads every panel).  Measured on
// a Xeon at 512 rows, 2 threads, best of 10 runs each: the panels for
// llama-3.2-1b's q/k/v and o projections (3072 and 2048 outputs, 2048 deep:
// 1.17x and 1.18x the rows' rate) and for every wider one; the rows when the
// panels are few (smollm-135m's projections, 960-1536 outputs: 1.2-2x) or
// the matrix is deep (down projections, 4864 and 8192 deep: 1.5-1.7x).
constexpr int64_t kRowSplitRows = 128;
constexpr int64_t kRowSplitOutputsPerRow = 8;
constexpr int64_t kRowSplitBelowOutputs = 2048;
constexpr int64_t kRowSplitGrain = kAmxBlockRows;

bool splits_rows(const PackedMatrix& w, int64_t m) {
  if (w.layout != PanelLayout::kAmxTiles || m < kRowSplitRows || w.rows > kRowSplitOutputsPerRow * m) return false;
  return w.rows < kRowSplitBelowOutputs || w.cols > 2 * w.rows;
}

Operand prepare(const float* x, int64_t m, const PackedMatrix& w, OperandBuffers& buffers, ThreadPool& pool) {
  const int64_t k_total = w.cols;
  if (w.block_int8()) {
    const int64_t group_size = w.quant.group_size;
    const int64_t blocks = k_total / kActivationBlock, groups = k_total / group_size;
    buffers.blocks.resize(static_cast<size_t>(m * k_total));
    buffers.block_scales.resize(static_cast<size_t>(m * blocks));
    buffers.group_sums.resize(static_cast<size_t>(m * groups));
    const cpu::QuantizeBlocksFn quantize = cpu::active_gemm_table().quantize_int8_blocks;
    over_rows(m, pool, [&](int64_t begin, int64_t end) {
      quantize(x + begin * k_total, end - begin, k_total, group_size, buffers.blocks.data() + begin * k_total,
               buffers.block_scales.data() + begin * blocks, buffers.group_sums.data() + begin * groups);
    });
    return {.blocks = buffers.blocks.data(),
            .block_scales = buffers.block_scales.data(),
            .group_sums = buffers.group_sums.data()};
  }
  if (w.int8_dot()) {
    const int64_t depth = int8_dot_depth(k_total);
    if (buffers.q.size_bytes() < static_cast<size_t>(m * depth))
      buffers.q = AlignedBuffer(static_cast<size_t>(m * depth));
    buffers.row_scales.resize(static_cast<size_t>(m));
    uint8_t* q = buffers.q.as<uint8_t>();
    float* scales = buffers.row_scales.data();
    const bool asymmetric = w.quant.asymmetric_activations;
    if (asymmetric) buffers.row_zero_points.resize(static_cast<size_t>(m));
    int32_t* zero_points = asymmetric ? buffers.row_zero_points.data() : nullptr;
    const cpu::QuantizeInt8Fn quantize = cpu::active_gemm_table().quantize_int8_rows;
    const auto rows = [&](int64_t begin, int64_t end) {
      if (asymmetric) {
        cpu::quantize_int8_rows_asymmetric(x + begin * k_total, end - begin, k_total, w.quant.activation_scale,
                                           w.quant.activation_zero_point, q + begin * depth, scales + begin,
                                           zero_points + begin);
      } else {
        quantize(x + begin * k_total, end - begin, k_total, w.quant.activation_scale, q + begin * depth,
                 scales + begin);
      }
    };
    over_rows(m, pool, rows);
    return {nullptr, q, scales, zero_points};
  }
  const cpu::RoundBf16TilesFn round_bf16 = cpu::active_gemm_table().round_bf16_tiles;
  if (w.layout == PanelLayout::kAmxTiles && m > cpu::kAmxRoundedRows && round_bf16 != nullptr && !splits_rows(w, m)) {
    // Threads that share the panels read every row: rounded once for all
    // of them, instead of by each.
    const auto bytes = static_cast<size_t>(amx_activation_elements(m, k_total)) * sizeof(uint16_t);
    if (buffers.bf16_tiles.size_bytes() < bytes) buffers.bf16_tiles = AlignedBuffer(bytes);
    uint16_t* tiles = buffers.bf16_tiles.as<uint16_t>();
    const int64_t blocks = (m + kAmxBlockRows - 1) / kAmxBlockRows;
    pool.parallel_for(blocks, [&](int64_t b_begin, int64_t b_end) {
      const int64_t r_begin = b_begin * kAmxBlockRows, r_end = std::min(m, b_end * kAmxBlockRows);
      round_bf16(x + r_begin * k_total, r_end - r_begin, k_total,
                 tiles + b_begin * amx_activation_block_elements(k_total));
    });
    return {.bf16_tiles = tiles};
  }
  if (w.input_order.empty()) return {x, nullptr, nullptr};
  buffers.gathered.resize(static_cast<size_t>(m * k_total));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k_total; ++c)
      buffers.gathered[static_cast<size_t>(r * k_total + c)] = x[r * k_total + w.input_order[static_cast<size_t>(c)]];
  }
  return {buffers.gathered.data(), nullptr, nullptr};
}

bool needs_preparing(const PackedMatrix& w) { return w.int8_dot() || w.block_int8() || !w.input_order.empty(); }

// The GEMM of w's format: m rows of a against panels [p_begin, p_end), into y (rows w.rows apart).
void gemm(const Operand& a, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y) {
  const cpu::GemmTable& table = cpu::active_gemm_table();
  if (w.int8_dot()) return table.int8(a.q, a.row_scales, a.row_zero_points, m, w, p_begin, p_end, y, w.rows);
  if (w.block_int8()) return table.block_int8(a.blocks, a.block_scales, a.group_sums, m, w, p_begin, p_end, y, w.rows);
  if (w.quantized()) return table.quantized(a.x, m, w, p_begin, p_end, y, w.rows);
  if (a.bf16_tiles != nullptr) {
    return table.rounded_bf16(a.bf16_tiles, m, w.data.data(), w.cols, w.rows, p_begin, p_end, y, w.rows);
  }
  gemm_for(w)(a.x, m, w.data.data(), w.cols, w.rows, p_begin, p_end, y, w.rows);
}

// Decode takes panels four at a time (gemm_blocks.h): work is cut in such groups.
constexpr int64_t kDecodePanels = 4;

}  // namespace

void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool) {
  thread_local OperandBuffers buffers;
  const Operand a = prepare(x, m, w, buffers, pool);
  const int64_t n = w.rows, num_panels = w.num_panels();
  // Rows [r_begin, r_end) times panels [p_begin, p_end), then the bias.
  const auto product = [&](int64_t r_begin, int64_t r_end, int64_t p_begin, int64_t p_end) {
    gemm(a.from_row(r_begin, w), r_end - r_begin, w, p_begin, p_end, y + r_begin * n);
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

void linear_group(const std::vector<LinearProblem>& problems, ThreadPool& pool) {
  // Each problem's input as its matrix takes it (a GPTQ or W8A8 mixture's
  // experts prepare theirs; the others are used as given).
  std::vector<Operand> operands(problems.size());
  std::vector<OperandBuffers> buffers;
  if (std::any_of(problems.begin(), problems.end(), [](const LinearProblem& p) { return needs_preparing(*p.w); })) {
    buffers.resize(problems.size());
  }
  for (size_t i = 0; i < problems.size(); ++i) {
    operands[i] = buffers.empty() ? Operand{problems[i].x, nullptr, nullptr}
                                  : prepare(problems[i].x, problems[i].m, *problems[i].w, buffers[i], pool);
  }
  // Work unit u: kDecodePanels panels of a one-row problem (decode's groups),
  // one panel of a larger one (as linear() cuts them); first_unit[i] is
  // problem i's first, units_left[i] how many of its units no thread has
  // finished yet (the one that finishes the last runs its `then`).
  const auto panels_per_unit = [](const LinearProblem& p) { return p.m == 1 ? kDecodePanels : int64_t{1}; };
  std::vector<int64_t> first_unit(problems.size() + 1, 0);
  std::vector<std::atomic<int64_t>> units_left(problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    const int64_t per = panels_per_unit(problems[i]);
    const int64_t units = (problems[i].w->num_panels() + per - 1) / per;
    first_unit[i + 1] = first_unit[i] + units;
    units_left[i].store(units, std::memory_order_relaxed);
    if (units == 0 && problems[i].then != nullptr) (*problems[i].then)();
  }
  pool.parallel_for(first_unit.back(), [&](int64_t u_begin, int64_t u_end) {
    auto i =
        static_cast<size_t>(std::upper_bound(first_unit.begin(), first_unit.end(), u_begin) - first_unit.begin() - 1);
    for (; i < problems.size() && first_unit[i] < u_end; ++i) {
      const LinearProblem& p = problems[i];
      const int64_t from = std::max(u_begin, first_unit[i]) - first_unit[i];
      const int64_t to = std::min(u_end, first_unit[i + 1]) - first_unit[i];
      const int64_t per = panels_per_unit(p);
      gemm(operands[i], p.m, *p.w, from * per, std::min(p.w->num_panels(), to * per), p.y);
      // acq_rel: the thread that runs `then` sees the panels the others wrote.
      if (p.then != nullptr && units_left[i].fetch_sub(to - from, std::memory_order_acq_rel) == to - from) (*p.then)();
    }
  });
}

void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool,
            const std::vector<LinearProblem>& alongside) {
  if (alongside.empty() || splits_rows(w, m)) {
    linear(x, m, w, bias, y, pool);
    if (!alongside.empty()) linear_group(alongside, pool);
    return;
  }
  const int64_t n = w.rows;
  const std::function<void()> add_bias = [&] {
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < n; ++j) y[r * n + j] += bias[j];
    }
  };
  // The others first: their units (a LoRA shrink and its expand) cost more
  // than one of w's, and the threads then share w's panels around them.
  // Reused across calls (every adapted Linear of every step comes here).
  thread_local std::vector<LinearProblem> problems;
  problems.assign(alongside.begin(), alongside.end());
  problems.push_back({x, m, &w, y, bias != nullptr ? &add_bias : nullptr});
  linear_group(problems, pool);
}

}  // namespace vllm::kernels
