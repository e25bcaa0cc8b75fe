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

#include <array>
#include <cstdint>

namespace vllm::kernels::cpu {

inline constexpr float kE4m3HalfUnscale = 256.0f;

// The IEEE half bits of an E4M3 code, times 2^-8.
inline constexpr uint16_t e4m3_half_bits(uint8_t code) {
  return static_cast<uint16_t>((code & 0x80u) << 8 | (code & 0x7Fu) << 7);
}

// The BF16 words of the E4M3 codes, exactly (E4M3 numbers are BF16 numbers:
// exponents -9..8, 3 mantissa bits); a NaN code's is 480's, as above.  The
// tile kernels widen an FP8 cache into BF16 operands by this table.
inline constexpr std::array<uint16_t, 256> kE4m3Bf16Words = [] {
  std::array<uint16_t, 256> words{};
  for (int code = 0; code < 256; ++code) {
    const int magnitude = code & 0x7F, exponent = magnitude >> 3, mantissa = magnitude & 7;
    int bits = 0;
    if (exponent > 0) {  // (1 + mantissa / 8) * 2^(exponent - 7)
      bits = (exponent + 120) << 7 | mantissa << 4;
    } else if (mantissa > 0) {  // mantissa * 2^-9, normalised: its top bit p is the implicit one
      const int p = mantissa >= 4 ? 2 : mantissa >= 2 ? 1 : 0;
      bits = (p - 9 + 127) << 7 | (mantissa - (1 << p)) << (7 - p);
    }
    words[static_cast<size_t>(code)] = static_cast<uint16_t>((code & 0x80) << 8 | bits);
  }
  return words;
}();

}  // namespace vllm::kernels::cpu
