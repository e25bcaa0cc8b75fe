// How the kernels widen FP8 E4M3 codes (weights, an FP8 KV cache) in
// registers: the code's bits moved into an IEEE half (sign to bit 15,
// exponent and mantissa shifted up by 7) are the value times 2^-8 exactly
// (half's exponent bias is 15 where E4M3's is 7, and E4M3's subnormals land
// on half subnormals); the half-to-single conversion widens that, and one
// multiply by kE4m3HalfUnscale takes the 2^-8 back, exactly.  (Moved into
// FP32's bits instead, a code is its value times 2^-120, a subnormal FP32
// for E4M3's smaller numbers, and multiplying one takes a microcode assist
// on Intel cores: 17x slower on a vector of subnormal codes.)  A NaN code
// (S.1111.111) reads as +-480: the loaders refuse NaN weights, and an FP8 KV
// cache holds one only for a NaN input.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

inline constexpr float kE4m3HalfUnscale = 256.0f;

// The IEEE half bits of an E4M3 code, times 2^-8.
inline constexpr uint16_t e4m3_half_bits(uint8_t code) {
  return static_cast<uint16_t>((code & 0x80u) << 8 | (code & 0x7Fu) << 7);
}

}  // namespace vllm::kernels::cpu
