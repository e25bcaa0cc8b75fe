#include "kernels/packed_matrix.h"

#include "base/logging.h"

namespace vllm::kernels {
namespace {

template <typename T>
void pack_panels(const T* src, int64_t rows, int64_t cols, DType dtype, T* dst, int64_t p_begin, int64_t p_end) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    T* panel = dst + p * cols * kPanelWidth;
    const int64_t width = std::min(kPanelWidth, rows - p * kPanelWidth);
    for (int64_t c = 0; c < width; ++c) {
      const T* row = src + (p * kPanelWidth + c) * cols;
      const int64_t lane = packed_lane(dtype, c);
      for (int64_t k = 0; k < cols; ++k) panel[k * kPanelWidth + lane] = row[k];
    }
  }
}

}  // namespace

float PackedMatrix::at(int64_t row, int64_t col) const {
  const int64_t offset =
      (row / kPanelWidth) * cols * kPanelWidth + col * kPanelWidth + packed_lane(dtype, row % kPanelWidth);
  switch (dtype) {
    case DType::kF32:
      return data.as<float>()[offset];
    case DType::kBF16:
      return bf16_to_f32(data.as<uint16_t>()[offset]);
    case DType::kF16:
      return f16_to_f32(data.as<uint16_t>()[offset]);
    case DType::kI32:
      break;
  }
  VLLM_CHECK(false, "PackedMatrix: unsupported dtype");
  return 0.0f;
}

PackedMatrix pack_matrix(const Tensor& w, ThreadPool& pool) {
  VLLM_CHECK(w.rank() == 2, "pack_matrix: weight must be 2-D");
  VLLM_CHECK(w.dtype == DType::kF32 || w.dtype == DType::kBF16 || w.dtype == DType::kF16,
             "pack_matrix: weight must be F32, BF16 or F16");
  PackedMatrix packed;
  packed.dtype = w.dtype;
  packed.rows = w.dim(0);
  packed.cols = w.dim(1);
  packed.data = AlignedBuffer(static_cast<size_t>(packed.num_panels()) * packed.panel_elements() * dtype_size(w.dtype));
  pool.parallel_for(packed.num_panels(), [&](int64_t begin, int64_t end) {
    if (w.dtype == DType::kF32) {
      pack_panels(w.as<float>(), packed.rows, packed.cols, w.dtype, packed.data.as<float>(), begin, end);
    } else {
      pack_panels(w.as<uint16_t>(), packed.rows, packed.cols, w.dtype, packed.data.as<uint16_t>(), begin, end);
    }
  });
  return packed;
}

}  // namespace vllm::kernels
