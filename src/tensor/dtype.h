// Element types of tensors and exact conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace vllm {

// Integer types hold quantized codes and their companions (GPTQ qweight,
// compressed-tensors int8 weights and weight_shape).
// F8_E4M3: FP8 weights (their codes; group_quantized.h's fp8_codes).
enum class DType : uint8_t { kF32, kBF16, kF16, kI32, kI8, kI64, kF8E4M3, kBool };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // safetensors spelling: "F32", "BF16", ...
std::optional<DType> dtype_from_safetensors(std::string_view name);

// bfloat16 is the top half of a float32: widening is exact.
inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even, as PyTorch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h);
// An FP8 E4M3 (OCP "e4m3fn": bias 7, no infinities, S.1111.111 NaN) value, exactly.
float e4m3_to_f32(uint8_t b);
inline bool e4m3_is_nan(uint8_t b) { return (b & 0x7F) == 0x7F; }
// The E4M3 number nearest v (ties to the even code), v clamped to +-448
// first (as vLLM's FP8 quantization clamps); NaN to NaN.
uint8_t f32_to_e4m3(float v);
uint16_t f32_to_f16(float f);

}  // namespace vllm
