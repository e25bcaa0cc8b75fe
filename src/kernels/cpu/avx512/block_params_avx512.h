// A kBlockInt4 / kBlockInt8 group's parameters for 16 columns in AVX-512
// registers, shared by the VNNI and AMX block int8 kernels.  Include only
// from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace vllm::kernels::cpu {

// Parameter set `set` (0: scales, 1: offsets) of columns 16 * half .. + 15
// of the group whose parameters start at `group` (packed_matrix.h's
// layout: 32 scales, then 32 offsets, as FP16 or FP32).
template <bool kF16>
inline __attribute__((always_inline)) __m512 load_block_params(const uint8_t* group, int set, int64_t half) {
  if constexpr (kF16) {
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(group + (set * 2 + half) * 32)));
  } else {
    return _mm512_load_ps(reinterpret_cast<const float*>(group + (set * 2 + half) * 64));
  }
}

}  // namespace vllm::kernels::cpu
