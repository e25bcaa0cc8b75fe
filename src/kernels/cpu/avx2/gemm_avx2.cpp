// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_vec.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_blocks.h"

namespace vllm::kernels::cpu {
namespace {

struct F32Weights : blocks::WidenedSteps<Avx2> {
  static void load(const float* p, __m256 out[4]) {
    for (int v = 0; v < 4; ++v) out[v] = _mm256_load_ps(p + 8 * v);
  }
};
// Lane i holds column i in its low half and column 16 + i in its high half.
struct BF16Weights : blocks::WidenedSteps<Avx2> {
  static void load(const uint16_t* p, __m256 out[4]) {
    const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));       // lanes 0-7
    const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 16));  // lanes 8-15
    out[0] = _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16));
    out[1] = _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16));
    out[2] = _mm256_castsi256_ps(_mm256_and_si256(lo, high_half));
    out[3] = _mm256_castsi256_ps(_mm256_and_si256(hi, high_half));
  }
};
struct F16Weights : blocks::WidenedSteps<Avx2> {
  static void load(const uint16_t* p, __m256 out[4]) {
    for (int v = 0; v < 4; ++v) out[v] = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p + 8 * v)));
  }
};

}  // namespace

GemmTable avx2_gemm_table() {
  return {blocks::packed_gemm<Avx2, F32Weights, float>,
          blocks::packed_gemm<Avx2, BF16Weights, uint16_t>,
          blocks::packed_gemm<Avx2, F16Weights, uint16_t>,
          blocks::quantized_gemm<Avx2, F32Weights>,
          avx2_quantize_int8_rows(),
          avx2_int8_gemm(),
          avx2_quantize_int8_blocks(),
          avx2_block_int8_gemm()};
}

}  // namespace vllm::kernels::cpu
