// A block int8 matrix's 6-bit numbers (packed_matrix.h's kBlockInt6 halves)
// as bytes in AVX-512 registers, shared by the VNNI and AMX block int8
// kernels.  Include only from files compiled with -mavx512f -mavx512bw.
#pragma once

#include <immintrin.h>

namespace vllm::kernels::cpu {

// Bits 4-5 of each byte of a kBlockInt6 half's top-bits row: the top bits
// of its row 4t + s (held in bits 2s, 2s + 1), with the others' bits in
// the bytes' other positions.  16-bit shifts: a byte's bits 4-5 come from
// its own bits at every shift used here.
template <int kS>
inline __attribute__((always_inline)) __m512i top_bits_at_4(__m512i tops) {
  if constexpr (kS < 2) return _mm512_slli_epi16(tops, 4 - 2 * kS);
  if constexpr (kS == 2) return tops;
  return _mm512_srli_epi16(tops, 2);
}

// The numbers of rows kS and kS + 4 of a kBlockInt6 half: the low and the
// high nibbles of its row kS of low bits (`low_bits`, the half's bytes 64 kS
// ..), each with its top two bits from the half's two top-bits rows
// (`tops_low` at byte 256, `tops_high` at 320) put in at bits 4-5: number =
// nibble | top bits (ternary logic A | (B & C)).
struct SixBitRows {
  __m512i low, high;  // rows kS and kS + 4
};
template <int kS>
inline __attribute__((always_inline)) SixBitRows six_bit_numbers(__m512i low_bits, __m512i tops_low,
                                                                 __m512i tops_high) {
  const __m512i nibble = _mm512_set1_epi8(0x0F), top_mask = _mm512_set1_epi8(0x30);
  return {_mm512_ternarylogic_epi32(_mm512_and_si512(low_bits, nibble), top_bits_at_4<kS>(tops_low), top_mask, 0xF8),
          _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(low_bits, 4), nibble),
                                    top_bits_at_4<kS>(tops_high), top_mask, 0xF8)};
}

}  // namespace vllm::kernels::cpu
