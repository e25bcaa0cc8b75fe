#include "tensor/tensor.h"

namespace vllm {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool is_float_dtype(DType dtype) { return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16; }

std::vector<float> widened_values(const Tensor& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = t.dtype == DType::kF32    ? t.as<float>()[i]
                : t.dtype == DType::kBF16 ? bf16_to_f32(t.as<uint16_t>()[i])
                                          : f16_to_f32(t.as<uint16_t>()[i]);
  }
  return values;
}

}  // namespace vllm
