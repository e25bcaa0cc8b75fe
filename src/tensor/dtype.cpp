#include "tensor/dtype.h"

#include <algorithm>
#include <cmath>

namespace vllm {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI8:
      return 1;
    case DType::kI64:
      return 8;
    case DType::kF8E4M3:
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kI32:
      return "I32";
    case DType::kI8:
      return "I8";
    case DType::kI64:
      return "I64";
    case DType::kF8E4M3:
      return "F8_E4M3";
    case DType::kBool:
      return "BOOL";
  }
  return "?";
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "BF16") return DType::kBF16;
  if (name == "F16") return DType::kF16;
  if (name == "I32") return DType::kI32;
  if (name == "I8") return DType::kI8;
  if (name == "I64") return DType::kI64;
  if (name == "F8_E4M3") return DType::kF8E4M3;
  if (name == "BOOL") return DType::kBool;  // no weight, but checkpoints carry masks (EAGLE-3's t2d)
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: value = mantissa * 2^-24
      const float value = std::ldexp(static_cast<float>(mantissa), -24);
      std::memcpy(&bits, &value, sizeof bits);
      bits |= sign;
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (a >= 65520.0f) return sign | 0x7c00u;  // rounds to infinity
  if (a < 6.103515625e-05f) {                // subnormal or zero: multiples of 2^-24
    const float scaled = a * 16777216.0f;    // exact in float32
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t abs_bits = bits & 0x7fffffffu;
  // Re-bias the exponent and round the mantissa to 10 bits, nearest even.
  uint32_t rounded = abs_bits + 0xfffu + ((abs_bits >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded >> 13) - (112u << 10));
}

float e4m3_to_f32(uint8_t b) {
  const float sign = (b & 0x80) != 0 ? -1.0f : 1.0f;
  const int exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
  if (e4m3_is_nan(b)) return std::copysign(std::nanf(""), sign);
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m / 8 * 2^-6
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);      // (1 + m / 8) * 2^(e - 7)
}

uint8_t f32_to_e4m3(float v) {
  if (std::isnan(v)) return 0x7F;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const float a = std::min(std::fabs(v), 448.0f);
  if (a < 0x1p-6f) {  // subnormal steps of 2^-9; 8 of them is the least normal, code 8
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  int exponent = static_cast<int>(bits >> 23) - 127;  // -6 .. 8
  uint32_t mantissa = (bits & 0x7FFFFFu) >> 20;       // FP32's top 3 mantissa bits
  const uint32_t rest = bits & 0xFFFFFu, half = 0x80000u;
  if (rest > half || (rest == half && (mantissa & 1u) != 0)) ++mantissa;  // to nearest, ties to even
  if (mantissa == 8) mantissa = 0, ++exponent;
  return sign | static_cast<uint8_t>((exponent + 7) << 3 | static_cast<int>(mantissa));
}

}  // namespace vllm
