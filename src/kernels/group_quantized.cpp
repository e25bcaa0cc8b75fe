#include "kernels/group_quantized.h"

#include <cmath>

#include "tensor/dtype.h"

namespace vllm::kernels {

float GroupQuantized::value(int64_t row, int64_t col) const {
  const auto g = static_cast<size_t>(row * groups_per_row() + col / group_size);
  const int8_t bits = codes[static_cast<size_t>(row * cols + col)];
  const float code = fp8_codes ? e4m3_to_f32(static_cast<uint8_t>(bits)) : static_cast<float>(bits);
  return offsets.empty() ? scales[g] * code : std::fma(scales[g], code, offsets[g]);
}

void GroupQuantized::dequantize_rows(int64_t row, int64_t count, float* out) const {
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t input = input_order.empty() ? c : input_order[static_cast<size_t>(c)];
      out[r * cols + input] = value(row + r, c);
    }
  }
}

}  // namespace vllm::kernels
