// How the kernels widen FP8 E4M3 codes (weights, an FP8 KV cache) in
// registers: the code's sign to bit 31, its exponent and mantissa bits
// shifted up by 20 to where FP32's sit, which is the value times 2^-120
// exactly (FP32's exponent bias is 127 where E4M3's is 7, and E4M3's
// subnormals land on FP32 subnormals), and one multiply by kE4m3Unbias takes
// that back, exactly.  A NaN code (S.1111.111) reads as +-480: the loaders
// refuse NaN weights, and an FP8 KV cache holds one only for a NaN input.
#pragma once

namespace vllm::kernels::cpu {

inline constexpr float kE4m3Unbias = 0x1p120f;

}  // namespace vllm::kernels::cpu
