#include "kernels/packed_matrix.h"

#include "base/logging.h"

namespace vllm::kernels {
namespace {

// Row r of the stacked matrix, which lives in one of the parts.
template <typename T>
const T* stacked_row(const std::vector<Tensor>& parts, int64_t r) {
  for (const Tensor& part : parts) {
    if (r < part.dim(0)) return part.as<T>() + r * part.dim(1);
    r -= part.dim(0);
  }
  return nullptr;
}

// Where w[c, k] sits in its panel (c < kPanelWidth).
int64_t panel_offset(PanelLayout layout, DType dtype, int64_t c, int64_t k) {
  return layout == PanelLayout::kAmxTiles ? amx_tile_offset(c, k) : k * kPanelWidth + packed_lane(dtype, c);
}

template <typename T>
void pack_panels(const std::vector<Tensor>& parts, const PackedMatrix& packed, T* dst, int64_t p_begin, int64_t p_end) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    T* panel = dst + p * static_cast<int64_t>(packed.panel_elements());
    const int64_t width = std::min(kPanelWidth, packed.rows - p * kPanelWidth);
    for (int64_t c = 0; c < width; ++c) {
      const T* row = stacked_row<T>(parts, p * kPanelWidth + c);
      for (int64_t k = 0; k < packed.cols; ++k) panel[panel_offset(packed.layout, packed.dtype, c, k)] = row[k];
    }
  }
}

}  // namespace

float PackedMatrix::at(int64_t row, int64_t col) const {
  if (int8_dot()) return int8_dot_at(row, col);
  if (quantized()) return quantized_at(row, col);
  const int64_t offset = (row / kPanelWidth) * static_cast<int64_t>(panel_elements()) +
                         panel_offset(layout, dtype, row % kPanelWidth, col);
  switch (dtype) {
    case DType::kF32:
      return data.as<float>()[offset];
    case DType::kBF16:
      return bf16_to_f32(data.as<uint16_t>()[offset]);
    case DType::kF16:
      return f16_to_f32(data.as<uint16_t>()[offset]);
    case DType::kI32:
    case DType::kI8:
    case DType::kI64:
    case DType::kF8E4M3:
    case DType::kBool:
      break;
  }
  VLLM_CHECK(false, "PackedMatrix: unsupported dtype");
  return 0.0f;
}

double PackedMatrix::value_bytes() const {
  const auto values = static_cast<double>(rows * cols);
  if (!quantized()) return values * static_cast<double>(dtype_size(dtype));
  // Per row, as a panel's 32 rows share them.
  const double params = static_cast<double>(quant.panel_param_bytes(cols)) / kPanelWidth;
  const double code_bytes = quant.codes == QuantCodes::kInt4 || quant.codes == QuantCodes::kBlockInt4 ? 0.5
                            : quant.codes == QuantCodes::kBlockInt6                                   ? 0.75
                                                                                                      : 1.0;
  return values * code_bytes + static_cast<double>(rows) * params;
}

PackedMatrix pack_matrix(const Tensor& w, ThreadPool& pool) { return pack_stacked_matrices({w}, pool); }

PackedMatrix pack_matrix(const Tensor& w, ThreadPool& pool, PanelLayout layout) {
  return pack_stacked_matrices({w}, pool, layout);
}

PackedMatrix pack_stacked_matrices(const std::vector<Tensor>& parts, ThreadPool& pool) {
  VLLM_CHECK(!parts.empty(), "pack_matrix: nothing to pack");
  return pack_stacked_matrices(parts, pool, packed_layout(parts[0].dtype));
}

PackedMatrix pack_stacked_matrices(const std::vector<Tensor>& parts, ThreadPool& pool, PanelLayout layout) {
  VLLM_CHECK(!parts.empty(), "pack_matrix: nothing to pack");
  const DType dtype = parts[0].dtype;
  VLLM_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16,
             "pack_matrix: weight must be F32, BF16 or F16");
  VLLM_CHECK(layout == PanelLayout::kColumns || dtype == DType::kBF16, "pack_matrix: AMX tiles hold BF16 only");
  PackedMatrix packed;
  packed.dtype = dtype;
  packed.layout = layout;
  packed.cols = parts[0].rank() == 2 ? parts[0].dim(1) : 0;
  for (const Tensor& part : parts) {
    VLLM_CHECK(part.rank() == 2 && part.dtype == dtype && part.dim(1) == packed.cols,
               "pack_matrix: stacked weights must be 2-D with one dtype and one width");
    packed.rows += part.dim(0);
  }
  packed.data = AlignedBuffer(static_cast<size_t>(packed.num_panels()) * packed.panel_elements() * dtype_size(dtype));
  pool.parallel_for(packed.num_panels(), [&](int64_t begin, int64_t end) {
    if (dtype == DType::kF32) {
      pack_panels(parts, packed, packed.data.as<float>(), begin, end);
    } else {
      pack_panels(parts, packed, packed.data.as<uint16_t>(), begin, end);
    }
  });
  return packed;
}

}  // namespace vllm::kernels
