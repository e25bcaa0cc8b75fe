// The AVX2 + FMA vector traits that the ISA-independent kernel templates
// (gemm_blocks.h, attention_blocks.h) are instantiated with.  Include only
// from files compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/e4m3_widening.h"

namespace vllm::kernels::cpu {

struct Avx2 {
  using Reg = __m256;
  static constexpr int64_t kLanes = 8;
  // Attention: 2 heads x 2 chunks x 2 chains of scores, or 2 heads x 4 vectors of values, fit the 16 ymm registers.
  static constexpr int kAttentionHeads = 2;
  // GEMM: 3 rows x 4 vectors = 12 accumulators; with the weight vectors
  // and the broadcast they fill the 16 ymm registers.
  static constexpr int kTileRows = 3;

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static __m256i mask(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg load(const float* p, int64_t count) {
    return count == kLanes ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(count));
  }
  // count BF16 values widened exactly (a shift into the high half); the rest of the lanes zero.
  static Reg load_bf16(const uint16_t* p, int64_t count) {
    if (count < kLanes) {
      alignas(16) uint16_t part[kLanes] = {};
      std::copy_n(p, count, part);
      return load_bf16(part, kLanes);
    }
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  // count 32-bit words from p (two BF16 each), the low or high BF16 of each widened; the rest of the lanes zero.
  static Reg load_bf16_words(const uint16_t* p, int64_t count, bool high) {
    const int* words = reinterpret_cast<const int*>(p);
    const __m256i w = count == kLanes ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                      : _mm256_maskload_epi32(words, mask(count));
    return _mm256_castsi256_ps(high ? _mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xffff0000u)))
                                    : _mm256_slli_epi32(w, 16));
  }
  // count FP8 E4M3 codes widened exactly (e4m3_widening.h); the rest of the lanes zero.
  static Reg load_e4m3(const uint8_t* p, int64_t count) {
    if (count < kLanes) {
      alignas(8) uint8_t part[kLanes] = {};
      std::copy_n(p, count, part);
      return load_e4m3(part, kLanes);
    }
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i half = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8),
                                      _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7));
    return _mm256_mul_ps(_mm256_cvtph_ps(half), _mm256_set1_ps(kE4m3HalfUnscale));
  }
  static void store(float* p, Reg v, int64_t count) {
    if (count == kLanes) return _mm256_storeu_ps(p, v);
    _mm256_maskstore_ps(p, mask(count), v);
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg round(Reg a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Reg pow2(Reg n) {
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_castsi256_ps(bits);
  }
};

}  // namespace vllm::kernels::cpu
