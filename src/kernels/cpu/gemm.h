// GEMM over packed weights (kernels/packed_matrix.h), per weight dtype and ISA:
// y[r * ldy + j] = sum_k x[r * k_total + k] * w[j, k] for r < m and the
// columns j of panels [p_begin, p_end) that exist (j < n).
//
// Every output is one float32 accumulator fed by fused multiply-adds in k
// order, starting from zero: acc = fma(x[k], w[j, k], acc).  No kernel
// reorders that chain (blocking over k only pauses it in memory), so a row's
// result is the same bit for bit whatever the batch around it, the thread
// count, or the ISA chosen: the scalar reference, AVX2 and AVX-512 agree.
#pragma once

#include <cstdint>

#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {

using PackedGemmFn = void (*)(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n,
                              int64_t p_begin, int64_t p_end, float* y, int64_t ldy);

// Quantized weights (packed_matrix.h; not the block int8 ones below): their
// own float32 arithmetic, which takes each group's scale and offset out
// of its sum (so a weight costs one fma, not two: its dequantization is
// folded in).  With c[j, k] the number code j, k stands for
// (quantized_code), s and o its group's scale and offset, for each output,
// groups g in k order from acc = 0:
//   p   = the chain fma(x[k], c[j, k], p) over k in g in order, from p = 0
//   acc = fma(s[j, g], p, acc)
//   acc = fma(o[j, g], xsum[g], acc)   (with offsets only)
// where xsum[g] is quantized_group_sums'.  One chain per output in a fixed
// order, so the same bits whatever the batch, and on every ISA.  (As a sum
// over the dequantized weights fma(s, c, o), within float32 rounding.)
using QuantizedGemmFn = void (*)(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end,
                                 float* y, int64_t ldy);
// xsum[g] of one activation row: its values over group g, added in k order
// from 0, for each of the k_total / group_size groups.  Defined once, here,
// for every ISA's kernels.
inline void quantized_group_sums(const float* x, int64_t k_total, int64_t group_size, float* sums) {
  for (int64_t k0 = 0; k0 < k_total; k0 += group_size) {
    float sum = 0.0f;
    for (int64_t k = k0; k < k0 + group_size; ++k) sum += x[k];
    sums[k0 / group_size] = sum;
  }
}

// Int8 matrices against int8 activations (QuantCodes::kInt8Dot, W8A8): a
// second arithmetic for integer codes.  Each activation row is quantized
// first (quantize_int8_rows): with a static scale s, q = round(x / s);
// otherwise s = amax / 127 over the row's magnitudes and q = round(x *
// (127 / amax)) (all zeros, s = 0, for a row of zeros); rounding to the
// nearest even, clamped to [-128, 127], as vLLM quantizes.  The rows are
// stored as q + 128 (unsigned, what vpdpbusd and tdpbusd take), rows
// int8_dot_depth(k_total) bytes apart, padded with 128 (zero).  Then for
// each output, acc = sum over k of q[k] * code[j, k] in int32 (exact, so
// every ISA and every batch gives the same bits: the unsigned products'
// excess is 128 times the column's code sum, taken off), and
//   y = s_row * (scale[j] * float(acc - zp_row * colsum[j]))
// where colsum[j] is the column's code sum and zp_row the row's zero point:
// 0, or where the activations are asymmetric (quantize_int8_rows_asymmetric)
// the row's, as vLLM's azp epilogue computes it.
using QuantizeInt8Fn = void (*)(const float* x, int64_t m, int64_t k_total, float static_scale, uint8_t* q,
                                float* row_scales);
// row_zero_points: [m], or null for zeros.
using Int8GemmFn = void (*)(const uint8_t* q, const float* row_scales, const int32_t* row_zero_points, int64_t m,
                            const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy);

// Asymmetric int8 activations (vLLM's azp quantization), one definition for
// every ISA: a row's zero point zp and q = clamp(round(x / s) + zp) with a
// static scale and zero point (static_scale > 0), else per row from its
// range [min, max] with 0 in it: s = (max - min) / 255, zp = round(-128 -
// min / s), q = clamp(round(x * (1 / s)) + zp); rounding to the nearest
// even, clamped to [-128, 127], stored as q + 128 like the symmetric rows.
// (vLLM's kernel takes the row's range as it is: the same for a row with
// values of both signs, as activations have; for a one-signed row its zero
// point leaves int8 and its integer products overflow.  With 0 in the
// range, as compressed-tensors' calibration takes it, zp stays in [-128,
// 127].)  A row of zeros is all zeros, zp 0.
void quantize_int8_rows_asymmetric(const float* x, int64_t m, int64_t k_total, float static_scale,
                                   int32_t static_zero_point, uint8_t* q, float* row_scales, int32_t* row_zero_points);

// Integer matrices against activations quantized to int8 in blocks of 32
// (QuantCodes::kBlockInt4 / kBlockInt6 / kBlockInt8): a third arithmetic for quantized
// weights, ggml's for its types (llama.cpp computes them against Q8_0
// activations, and the K-quants against its 256-wide Q8_K ones).  Each
// activation row is quantized per block b of kActivationBlock values as
// ggml quantizes Q8_0: s_b = amax_b / 127, q = round(x * (1 / s_b)) to the
// nearest even (0 where amax_b is 0), clamped to [-127, 127]; and t_g =
// the sum of its q over each group g of the matrix (group_size values: 32,
// a block, or 16, half of one).  Rows are k_total (a multiple of 32) codes
// apart, their blocks' s_b k_total / 32 apart and their groups' t_g
// k_total / group_size apart.  Then for each output, groups in k order
// from acc = 0 (b the block that holds g):
//   d   = sum over k in g of code[j, k] * q[k]      (int32, exact)
//   acc = fma(scale[j, g], float(d) * s_b, acc)
//   acc = fma(offset[j, g], s_b * float(t_g), acc)  (with offsets only)
// One chain per output in a fixed order whatever the batch, and the int32
// sums exact, so every ISA gives the scalar definition's bits.
using QuantizeBlocksFn = void (*)(const float* x, int64_t m, int64_t k_total, int64_t group_size, int8_t* q,
                                  float* block_scales, int32_t* group_sums);
using BlockInt8GemmFn = void (*)(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m,
                                 const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy);

// BF16 activations rounded once for every thread that reads them (AMX):
// rows [0, rows) of x (k_total apart) as packed_matrix.h's activation
// blocks, and the BF16 GEMM of a kAmxTiles matrix over rows so rounded
// (m > kAmxRoundedRows; the first row a block's first).  The same bits as
// PackedGemmFn, which rounds its own.
using RoundBf16TilesFn = void (*)(const float* x, int64_t rows, int64_t k_total, uint16_t* tiles);
using RoundedBf16GemmFn = void (*)(const uint16_t* tiles, int64_t m, const void* panels, int64_t k_total, int64_t n,
                                   int64_t p_begin, int64_t p_end, float* y, int64_t ldy);
// Up to this many rows (a decode step's) the GEMM rounds them itself.
inline constexpr int64_t kAmxRoundedRows = 16;

struct GemmTable {
  PackedGemmFn f32;
  PackedGemmFn bf16;
  PackedGemmFn f16;
  QuantizedGemmFn quantized;
  QuantizeInt8Fn quantize_int8_rows;
  Int8GemmFn int8;
  QuantizeBlocksFn quantize_int8_blocks;
  BlockInt8GemmFn block_int8;
  RoundBf16TilesFn round_bf16_tiles = nullptr;  // amx only
  RoundedBf16GemmFn rounded_bf16 = nullptr;     // amx only
};

GemmTable ref_gemm_table();
GemmTable avx2_gemm_table();    // AVX2 + FMA + F16C
GemmTable avx512_gemm_table();  // AVX-512 F

// BF16 weights through a BF16 dot-product instruction (AVX512-BF16), a
// second arithmetic for them: each activation is first rounded to BF16
// (to nearest even, a subnormal to zero), and each output's chain takes k
// in pairs, k + 1 first: acc = ftz(fma(x[k+1], w[k+1], acc)), then
// acc = ftz(fma(x[k], w[k], acc)) (the products are exact; ftz flushes a
// subnormal sum to zero, as the instruction does; an odd k's last pair has
// zeros at k + 1).  Still one chain per output in a fixed order, so still
// the same bits whatever the batch, and the scalar model below is exact.
PackedGemmFn avx512_bf16_pair_gemm();
PackedGemmFn ref_bf16_pair_gemm();

// BF16 weights in AMX tiles (PanelLayout::kAmxTiles) through tdpbf16ps, a
// third arithmetic for them: activations rounded to BF16 as above, each
// output one FP32 accumulator fed 32 k at a time in k order from zero, for
// any number of rows (so again the same bits whatever the batch).  How one
// instruction sums its 32 products is the hardware's own (not the FP32
// chain of its pseudo-code), so this arithmetic has no scalar model.
PackedGemmFn amx_bf16_gemm_fn();
RoundBf16TilesFn amx_round_bf16_tiles_fn();
RoundedBf16GemmFn amx_rounded_bf16_gemm_fn();

// The int8 arithmetic per ISA (all exact, so all equal): AVX2 widens to
// 16 bits (vpmaddwd); AVX-512 VNNI takes four k per vpdpbusd; AMX-INT8 takes
// tiles of 64 k with tdpbusd for more than a few rows, VNNI for those.
QuantizeInt8Fn avx2_quantize_int8_rows();
Int8GemmFn avx2_int8_gemm();
QuantizeInt8Fn avx512_quantize_int8_rows();
Int8GemmFn avx512_vnni_int8_gemm();
Int8GemmFn amx_int8_gemm_fn();

// The block int8 arithmetic per ISA (exact sums, so all equal): AVX2 with
// vpmaddubsw on the codes' magnitudes; AVX-512 VNNI with vpdpbusd, four k
// of 16 columns' unsigned numbers against one activation row's four codes.
QuantizeBlocksFn avx2_quantize_int8_blocks();
BlockInt8GemmFn avx2_block_int8_gemm();
QuantizeBlocksFn avx512_quantize_int8_blocks();
BlockInt8GemmFn avx512_vnni_block_int8_gemm();
// AMX-INT8: tdpbsud over tiles of 16 rows from 16 rows, VNNI's below.
BlockInt8GemmFn amx_block_int8_gemm_fn();

// AVX-512 quantized GEMM for up to kQuantizedFewRows rows (decode): the
// codes streamed and dequantized in registers, several panels at a time.
inline constexpr int64_t kQuantizedFewRows = 3;
void avx512_quantized_few_rows(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end,
                               float* y, int64_t ldy);
// code_panel (packed_matrix.h) in AVX-512 registers: the same values.
void avx512_code_panel(const PackedMatrix& w, int64_t p, int64_t k0, int64_t kc, float* out);

}  // namespace vllm::kernels::cpu
