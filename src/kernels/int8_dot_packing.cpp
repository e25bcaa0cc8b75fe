// pack_int8_dot_matrices, PackedMatrix::int8_dot_at (packed_matrix.h
// describes the layout) and int8_rows_for_int8_activations.
#include <algorithm>

#include "base/logging.h"
#include "kernels/cpu/isa.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels {
namespace {

// Sums of 127 * 128 per k must stay in int32 (gemm.h).
constexpr int64_t kMaxDepth = int64_t{1} << 17;

void pack_panels(const std::vector<const GroupQuantized*>& parts, PackedMatrix& m, int64_t p_begin, int64_t p_end) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    // The packer writes what the kernels' accessors read.
    auto* codes = const_cast<int8_t*>(int8_dot_codes(m, p));
    auto* scales = const_cast<float*>(int8_dot_scales(m, p));
    auto* sums = const_cast<int32_t*>(int8_dot_code_sums(m, p));
    for (int64_t c = 0; c < kPanelWidth && p * kPanelWidth + c < m.rows; ++c) {
      int64_t row = p * kPanelWidth + c;
      const GroupQuantized* part = parts[0];
      for (size_t i = 0; row >= part->rows; ++i) {
        row -= part->rows;
        part = parts[i + 1];
      }
      const int8_t* part_codes = part->codes.data() + row * m.cols;
      int32_t sum = 0;
      for (int64_t k = 0; k < m.cols; ++k) {
        codes[int8_dot_offset(c, k)] = part_codes[k];
        sum += part_codes[k];
      }
      scales[c] = part->scales[static_cast<size_t>(row)];
      sums[c] = sum;
    }
  }
}

}  // namespace

PackedMatrix pack_int8_dot_matrices(const std::vector<const GroupQuantized*>& parts, ThreadPool& pool) {
  VLLM_CHECK(!parts.empty(), "pack_int8_dot_matrices: nothing to pack");
  PackedMatrix m;
  m.cols = parts[0]->cols;
  for (const GroupQuantized* part : parts) {
    VLLM_CHECK(part->int8_activations && part->cols == m.cols && part->group_size == part->cols &&
                   part->codes.size() == static_cast<size_t>(part->rows * part->cols) &&
                   part->scales.size() == static_cast<size_t>(part->rows) && part->offsets.empty() &&
                   part->super_groups == 0 && part->input_order.empty(),
               "pack_int8_dot_matrices: parts must be int8 rows of one width with a scale each");
    VLLM_CHECK((part->activation_scale == 0.0f) == (parts[0]->activation_scale == 0.0f) &&
                   part->asymmetric_activations == parts[0]->asymmetric_activations,
               "pack_int8_dot_matrices: stacked parts quantize their activations differently");
    m.rows += part->rows;
  }
  VLLM_CHECK(m.cols <= kMaxDepth, "pack_int8_dot_matrices: too deep for int32 sums");
  m.quant.codes = QuantCodes::kInt8Dot;
  m.quant.group_size = m.cols;
  // Stacked parts read one input: their static scales (calibrated on it)
  // agree in practice; where not, the largest (with its zero point) clips
  // no part's range.
  // (vLLM keeps whichever part it loaded last.)
  for (const GroupQuantized* part : parts) {
    if (part->activation_scale >= m.quant.activation_scale) {
      m.quant.activation_scale = part->activation_scale;
      m.quant.activation_zero_point = part->activation_zero_point;  // with its scale
    }
  }
  m.quant.asymmetric_activations = parts[0]->asymmetric_activations;
  // Zero-filled: the padding's codes (and absent columns') are zeros.
  m.data = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_code_bytes(m.cols)));
  m.group_params = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_param_bytes(m.cols)));
  pool.parallel_for(m.num_panels(), [&](int64_t begin, int64_t end) { pack_panels(parts, m, begin, end); });
  return m;
}

GroupQuantized int8_rows_for_int8_activations(const float* w, int64_t rows, int64_t cols) {
  const int64_t depth = int8_dot_depth(cols);
  std::vector<uint8_t> biased(static_cast<size_t>(rows * depth));
  GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = cols, q.int8_activations = true;
  q.scales.resize(static_cast<size_t>(rows));
  cpu::active_gemm_table().quantize_int8_rows(w, rows, cols, 0.0f, biased.data(), q.scales.data());
  q.codes.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      q.codes[static_cast<size_t>(r * cols + c)] =
          static_cast<int8_t>(biased[static_cast<size_t>(r * depth + c)] - 128);
    }
  }
  return q;
}

float PackedMatrix::int8_dot_at(int64_t row, int64_t col) const {
  const int64_t p = row / kPanelWidth, c = row % kPanelWidth;
  return int8_dot_scales(*this, p)[c] * static_cast<float>(int8_dot_codes(*this, p)[int8_dot_offset(c, col)]);
}

}  // namespace vllm::kernels
