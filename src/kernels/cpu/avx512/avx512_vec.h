// The AVX-512F vector traits that the ISA-independent kernel templates
// (gemm_blocks.h, attention_blocks.h) are instantiated with.  Include only
// from files compiled with -mavx512f.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/e4m3_widening.h"

namespace vllm::kernels::cpu {

struct Avx512 {
  using Reg = __m512;
  static constexpr int64_t kLanes = 16;
  // Attention: 4 heads x 2 chunks x 2 chains of scores, or 4 heads x 4 vectors of values, fit the 32 zmm registers.
  static constexpr int kAttentionHeads = 4;
  // GEMM: 12 rows x 2 vectors = 24 accumulators, 2 weight vectors, the
  // broadcast and the BF16 mask stay within the 32 zmm registers.
  static constexpr int kTileRows = 12;

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static __mmask16 mask(int64_t count) { return static_cast<__mmask16>((1u << count) - 1u); }
  static Reg load(const float* p, int64_t count) {
    return count == kLanes ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask(count), p);
  }
  // count BF16 values widened exactly (a shift into the high half); the rest of the lanes zero.
  static Reg load_bf16(const uint16_t* p, int64_t count) {
    if (count < kLanes) {
      alignas(32) uint16_t part[kLanes] = {};
      std::copy_n(p, count, part);
      return load_bf16(part, kLanes);
    }
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  // count 32-bit words from p (two BF16 each), the low or high BF16 of each widened; the rest of the lanes zero.
  static Reg load_bf16_words(const uint16_t* p, int64_t count, bool high) {
    const __m512i words = count == kLanes ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(mask(count), p);
    return _mm512_castsi512_ps(high ? _mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xffff0000u)))
                                    : _mm512_slli_epi32(words, 16));
  }
  // count FP8 E4M3 codes widened exactly (e4m3_widening.h); the rest of the lanes zero.
  static Reg load_e4m3(const uint8_t* p, int64_t count) {
    if (count < kLanes) {
      alignas(16) uint8_t part[kLanes] = {};
      std::copy_n(p, count, part);
      return load_e4m3(part, kLanes);
    }
    return widen_e4m3(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // 16 codes (e4m3_widening.h: through halves).
  static Reg widen_e4m3(__m128i codes) {
    const __m256i b = _mm256_cvtepu8_epi16(codes);
    const __m256i half = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                         _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7));
    return _mm512_mul_ps(_mm512_cvtph_ps(half), _mm512_set1_ps(kE4m3HalfUnscale));
  }
  static void store(float* p, Reg v, int64_t count) {
    if (count == kLanes) return _mm512_storeu_ps(p, v);
    _mm512_mask_storeu_ps(p, mask(count), v);
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg round(Reg a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Reg pow2(Reg n) {
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_castsi512_ps(bits);
  }
};

}  // namespace vllm::kernels::cpu
