// Compiled with -mavx512f; reached only through the dispatch table.  (GCC 12
// reports the _mm512_undefined_* sources of its own intrinsics as "may be
// used uninitialized", hence -Wno-maybe-uninitialized for this file.)
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_vec.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_blocks.h"

namespace vllm::kernels::cpu {
namespace {

struct F32Weights : blocks::WidenedSteps<Avx512> {
  static void load(const float* p, __m512 out[2]) {
    out[0] = _mm512_load_ps(p);
    out[1] = _mm512_load_ps(p + 16);
  }
};
// Lane i holds column i in its low half and column 16 + i in its high half.
struct BF16Weights : blocks::WidenedSteps<Avx512> {
  static void load(const uint16_t* p, __m512 out[2]) {
    const __m512i v = _mm512_load_si512(p);
    out[0] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    out[1] = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
};
struct F16Weights : blocks::WidenedSteps<Avx512> {
  static void load(const uint16_t* p, __m512 out[2]) {
    out[0] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
    out[1] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + 16)));
  }
};

void quantized_gemm(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y,
                    int64_t ldy) {
  if (m <= kQuantizedFewRows) return avx512_quantized_few_rows(x, m, w, p_begin, p_end, y, ldy);
  blocks::quantized_gemm<Avx512, F32Weights, avx512_code_panel>(x, m, w, p_begin, p_end, y, ldy);
}

}  // namespace

GemmTable avx512_gemm_table() {
  return {blocks::packed_gemm<Avx512, F32Weights, float>,
          blocks::packed_gemm<Avx512, BF16Weights, uint16_t>,
          blocks::packed_gemm<Avx512, F16Weights, uint16_t>,
          quantized_gemm,
          nullptr,
          nullptr,
          nullptr,
          nullptr};  // int8 and block int8: dispatch.cpp
}

}  // namespace vllm::kernels::cpu
