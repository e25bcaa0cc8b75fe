// A quantized matrix's group parameters for 16 columns in AVX-512
// registers, shared by the dequantizing, VNNI and AMX block int8 kernels.
// Include only from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {

// Parameter set `set` (0: scales, 1: offsets) of columns 16 * half .. + 15
// of the group whose parameters start at `group` (packed_matrix.h's layout:
// 32 scales, then 32 offsets, as FP16, FP32 or kSteps' int8 steps).  For
// kSteps, `bases` is where its super-block's FP32 bases start (the same
// sets), and each parameter is base * step in FP32, as load_param's.
template <QuantParams kParams>
inline __attribute__((always_inline)) __m512 load_group_params(const uint8_t* group, const uint8_t* bases, int set,
                                                               int64_t half) {
  const int64_t first = set * kPanelWidth + half * 16;  // of the 32 columns' sets
  if constexpr (kParams == QuantParams::kF16) {
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(group + first * 2)));
  } else if constexpr (kParams == QuantParams::kF32) {
    return _mm512_load_ps(reinterpret_cast<const float*>(group + first * 4));
  } else {
    const __m512 steps =
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(group + first))));
    return _mm512_mul_ps(_mm512_load_ps(reinterpret_cast<const float*>(bases + first * 4)), steps);
  }
}

}  // namespace vllm::kernels::cpu
