// A weight matrix w[N, K] (used as y = x w^T) repacked once, at load, into the
// layout the GEMM kernels stream: N is cut into panels of kPanelWidth output
// columns, and each panel is stored [K][kPanelWidth] (then one step of
// padding: panel_stride), so one k step of a panel is one 64-byte line
// (BF16, F16) or two (F32) that feed kPanelWidth FMAs.
// The last panel is zero-padded.  Values keep their stored dtype and are
// widened to float32 in registers.
//
// BF16 panels interleave the two halves of a k step (columns c and c + 16
// share a 32-bit lane, c in the low half), so that widening a 16-lane vector
// is one shift or one mask instead of two shuffles.
//
// For the AMX tile GEMM, BF16 panels are laid out as the tiles that
// tdpbf16ps multiplies instead (PanelLayout::kAmxTiles): k in chunks of 32
// (K zero-padded to a multiple of 32), each chunk two 1 KiB tiles (columns
// 0-15, then 16-31) of 16 rows, row r holding each column's (k, k + 1) pair
// for k = 2r, column by column.  The layout is chosen at packing by the ISA
// then active (packed_layout), and the GEMM checks it.
//
// Quantized matrices (group_quantized.h; quant.codes != kNone) keep their
// integer codes in `data`, panel by panel, k in pairs: one pair of k of a
// panel is 32 bytes of 4-bit codes (when the matrix has at most 16 distinct
// codes, each a nibble's index into them) (byte c: column c's code at k in the low
// nibble, at k + 1 in the high one) or 64 bytes of 8-bit codes (32 at k,
// then 32 at k + 1), then one pair of padding as for panel_stride.  Their
// groups' scales (and offsets) are in `group_params`, panel by panel, group
// by group: 32 scales, then 32 offsets when there are any, as FP16 when
// every one of the matrix's is exactly an FP16 number, else FP32, or as
// int8 steps of FP32 bases stored before the panel's groups (QuantParams).
// FP8 codes (kFp8) are stored as 8-bit ones, each standing for its FP8 value.
//
// Int8 matrices computed against int8 activations (QuantCodes::kInt8Dot,
// gemm.h's int8 arithmetic) keep their codes in quads of k instead: k in
// chunks of 64 (K zero-padded to a multiple of 64), each chunk two 1 KiB
// tiles (columns 0-15, then 16-31) of 16 rows, row q holding each column's
// four codes at k = 4q .. 4q + 3, column by column.  A tile is what AMX's
// tdpbusd takes as its second operand, and each of its rows is one
// vpdpbusd operand.  Their group_params hold, per panel, the columns' 32
// FP32 scales and then the 32 int32 sums of each column's codes.
//
// Integer matrices computed against activations quantized to int8 in blocks
// of 32 (QuantCodes::kBlockInt4 / kBlockInt6 / kBlockInt8, gemm.h's block int8
// arithmetic: ggml's for its types) keep their codes as
// unsigned numbers, code + code_bias, in quads of k as well: k in blocks of
// 32, each block two halves (columns 0-15, then 16-31), a half eight rows
// of 64 bytes, row q holding each column's four numbers at k = 4q .. 4q + 3,
// column by column (vpdpbusd's unsigned operand).  4-bit codes fold those
// eight rows into four: row q's low nibbles are row q's, its high nibbles
// row q + 4's, each nibble an index into int4_codes.  Numbers of at most 6
// bits (kBlockInt6: Q6_K's, and Q5's) keep a half in 384 bytes: their low
// four bits as the 4-bit layout's 256 bytes, then their top two bits in two
// rows of 64 bytes, row t's byte j holding those of row 4t + s at byte j
// in bits 2s and 2s + 1 (so a half is read as 4-bit numbers are, with the
// top bits shifted into place).  Their group parameters are laid out as the
// other quantized matrices' (a group is a block's 32 k or 16 of them), as
// FP16, FP32 or steps.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "kernels/group_quantized.h"
#include "tensor/tensor.h"

namespace vllm::kernels {

inline constexpr int64_t kPanelWidth = 32;

enum class PanelLayout { kColumns, kAmxTiles };

// AMX tiles: k per chunk, and the elements of one tile (16 rows of 32 BF16).
inline constexpr int64_t kAmxTileDepth = 32;
inline constexpr int64_t kAmxTileElements = 16 * 32;
inline constexpr int64_t kAmxChunkElements = 2 * kAmxTileElements;  // one chunk of a panel: its two tiles
inline int64_t amx_padded_depth(int64_t k_total) {
  return (k_total + kAmxTileDepth - 1) / kAmxTileDepth * kAmxTileDepth;
}
// Elements from one AMX-tiled panel's start to the next.
inline int64_t amx_panel_elements(int64_t k_total) { return amx_padded_depth(k_total) * kPanelWidth; }
// Activation rows rounded for the AMX tiles (gemm.h's RoundBf16TilesFn): in
// blocks of 32 rows, each chunk of 32 k two tiles of 16 rows.
inline constexpr int64_t kAmxBlockRows = 32;
inline int64_t amx_activation_block_elements(int64_t k_total) {
  return amx_padded_depth(k_total) / kAmxTileDepth * kAmxChunkElements;
}
inline int64_t amx_activation_elements(int64_t rows, int64_t k_total) {
  return (rows + kAmxBlockRows - 1) / kAmxBlockRows * amx_activation_block_elements(k_total);
}
// Offset of w[c, k] (c < kPanelWidth) within an AMX-tiled panel.
inline int64_t amx_tile_offset(int64_t c, int64_t k) {
  return (k / kAmxTileDepth) * kAmxChunkElements + (c / 16) * kAmxTileElements + (k % kAmxTileDepth) / 2 * 32 +
         (c % 16) * 2 + k % 2;
}

// Elements from one panel's start to the next: K steps and one step of
// padding, so that panels of a power-of-two K do not start a power of two
// apart (the GEMV streams four panels at once, and four streams whose
// addresses agree in their low bits contend for the same cache sets).
inline int64_t panel_stride(int64_t k_total) { return (k_total + 1) * kPanelWidth; }

// kFp8: FP8 E4M3 codes (group_quantized.h's fp8_codes), laid out as kInt8's.
enum class QuantCodes { kNone, kInt4, kInt8, kFp8, kInt8Dot, kBlockInt4, kBlockInt6, kBlockInt8 };

// kInt8Dot codes: k per chunk, a chunk's bytes, and the padded depth.
inline constexpr int64_t kInt8DotDepth = 64;
inline constexpr int64_t kInt8DotChunkBytes = kInt8DotDepth * kPanelWidth;
inline int64_t int8_dot_depth(int64_t k_total) { return (k_total + kInt8DotDepth - 1) / kInt8DotDepth * kInt8DotDepth; }
// Byte offset of w[c, k] (c < kPanelWidth) within a kInt8Dot panel.
inline int64_t int8_dot_offset(int64_t c, int64_t k) {
  return k / kInt8DotDepth * kInt8DotChunkBytes + c / 16 * (kInt8DotChunkBytes / 2) + k % kInt8DotDepth / 4 * 64 +
         c % 16 * 4 + k % 4;
}
// kBlockInt4 / kBlockInt6 / kBlockInt8: values per activation block, and where w[c, k]
// (c < kPanelWidth) sits within a panel (a byte; for kBlockInt4 its nibble
// is k % 32 / 16).
inline constexpr int64_t kActivationBlock = 32;
inline constexpr int64_t kActivationHalf = kActivationBlock / 2;  // the other group size they take
// Whether a matrix's groups fit the activation blocks: a block, or half of one.
inline bool fits_activation_blocks(int64_t group_size) {
  return group_size == kActivationBlock || group_size == kActivationHalf;
}
inline int64_t block_int8_offset(int64_t c, int64_t k) {
  return k / kActivationBlock * 1024 + c / 16 * 512 + k % kActivationBlock / 4 * 64 + c % 16 * 4 + k % 4;
}
inline int64_t block_int4_offset(int64_t c, int64_t k) {
  return k / kActivationBlock * 512 + c / 16 * 256 + k % 16 / 4 * 64 + c % 16 * 4 + k % 4;
}
// kBlockInt6: the byte holding w[c, k]'s low four bits (as kBlockInt4's
// nibble), and the one holding its top two (at bit block_int6_top_shift).
inline int64_t block_int6_low_offset(int64_t c, int64_t k) {
  return k / kActivationBlock * 768 + c / 16 * 384 + k % 16 / 4 * 64 + c % 16 * 4 + k % 4;
}
inline int64_t block_int6_top_offset(int64_t c, int64_t k) {
  return k / kActivationBlock * 768 + c / 16 * 384 + 256 + k % kActivationBlock / 16 * 64 + c % 16 * 4 + k % 4;
}
inline int block_int6_top_shift(int64_t k) { return static_cast<int>(k % 16 / 4 * 2); }
// How group parameters are stored: FP16 or FP32 values, or (where every
// part gives them in two levels: group_quantized.h) FP32 bases per
// super-block and an int8 step per group, multiplied in FP32.
enum class QuantParams { kF16, kF32, kSteps };

// How a quantized matrix's codes and group parameters are stored.
struct QuantFormat {
  QuantCodes codes = QuantCodes::kNone;
  std::array<int8_t, 16> int4_codes{};  // kInt4: the code each nibble stands for
  int64_t group_size = 0;
  QuantParams params = QuantParams::kF32;
  int64_t super_groups = 0;  // kSteps: groups per base
  bool has_offsets = false;
  // kInt8Dot: how the activations are quantized (group_quantized.h).
  float activation_scale = 0.0f;
  bool asymmetric_activations = false;
  int32_t activation_zero_point = 0;
  // kBlockInt4 / kBlockInt6 / kBlockInt8: what is added to a code to store it unsigned.
  int32_t code_bias = 0;

  bool blocks() const {
    return codes == QuantCodes::kBlockInt4 || codes == QuantCodes::kBlockInt6 || codes == QuantCodes::kBlockInt8;
  }
  // Bytes of one pair of k of a panel, and of a panel's codes.
  int64_t pair_bytes() const { return codes == QuantCodes::kInt4 ? kPanelWidth : 2 * kPanelWidth; }
  int64_t panel_code_bytes(int64_t k_total) const {
    if (codes == QuantCodes::kBlockInt4) return k_total * kPanelWidth / 2;
    if (codes == QuantCodes::kBlockInt6) return k_total * kPanelWidth * 3 / 4;
    if (codes == QuantCodes::kBlockInt8) return k_total * kPanelWidth;
    return codes == QuantCodes::kInt8Dot ? int8_dot_depth(k_total) * kPanelWidth : (k_total / 2 + 1) * pair_bytes();
  }
  // A panel's group parameters: sets (scales, then offsets if any) of 32
  // values per group, after the bases (kSteps: the same sets per super-block).
  int64_t param_sets() const { return has_offsets ? 2 : 1; }
  // Bytes of one stored parameter: an FP32 or FP16 value, or a kSteps step.
  int64_t param_bytes() const { return params == QuantParams::kF32 ? 4 : params == QuantParams::kF16 ? 2 : 1; }
  int64_t group_param_bytes() const { return param_sets() * kPanelWidth * param_bytes(); }
  // kSteps: where group g's FP32 bases sit within a panel's parameters.
  int64_t bases_offset(int64_t g) const { return g / super_groups * param_sets() * kPanelWidth * 4; }
  int64_t panel_base_bytes(int64_t k_total) const {
    return params == QuantParams::kSteps ? bases_offset(k_total / group_size) : 0;
  }
  // Whole cache lines, so that every panel's parameters start aligned.
  int64_t panel_param_bytes(int64_t k_total) const {
    if (codes == QuantCodes::kInt8Dot) return kPanelWidth * (4 + 4);  // scales and code sums
    return (panel_base_bytes(k_total) + k_total / group_size * group_param_bytes() + 63) / 64 * 64;
  }
};

struct PackedMatrix {
  DType dtype = DType::kF32;  // of dense values; F32 for quantized ones (what they are computed as)
  PanelLayout layout = PanelLayout::kColumns;
  int64_t rows = 0;  // N: output features
  int64_t cols = 0;  // K: input features
  AlignedBuffer data;
  QuantFormat quant;           // codes kNone: dense
  AlignedBuffer group_params;  // quantized only
  // Quantized only: column c holds input input_order[c] (group_quantized.h);
  // empty when each column is its own input.
  std::vector<int32_t> input_order;

  bool quantized() const { return quant.codes != QuantCodes::kNone; }
  bool int8_dot() const { return quant.codes == QuantCodes::kInt8Dot; }
  bool block_int8() const { return quant.blocks(); }
  int64_t num_panels() const { return (rows + kPanelWidth - 1) / kPanelWidth; }
  size_t panel_elements() const {
    return static_cast<size_t>(layout == PanelLayout::kAmxTiles ? amx_panel_elements(cols) : panel_stride(cols));
  }
  // w[row, col] widened (or dequantized) to float32.
  float at(int64_t row, int64_t col) const;
  // Bytes of its values as stored (codes and group parameters for a
  // quantized one), without the panels' padding: what a pass over it reads.
  double value_bytes() const;

 private:
  float quantized_at(int64_t row, int64_t col) const;  // quantized_packing.cpp
  float int8_dot_at(int64_t row, int64_t col) const;   // int8_dot_packing.cpp
};

// Where column c (< kPanelWidth) of a panel sits within one k step.
inline int64_t packed_lane(DType dtype, int64_t c) {
  if (dtype != DType::kBF16) return c;
  return c < kPanelWidth / 2 ? 2 * c : 2 * (c - kPanelWidth / 2) + 1;
}

// The layout the active ISA's GEMM reads for weights of `dtype`.
PanelLayout packed_layout(DType dtype);

// Copies a 2-D F32/BF16/F16 tensor into the packed layout, panels split over
// the pool.  kAmxTiles is for BF16 only.
PackedMatrix pack_matrix(const Tensor& w, ThreadPool& pool);
PackedMatrix pack_matrix(const Tensor& w, ThreadPool& pool, PanelLayout layout);
// The same for several [rows_i, K] tensors of one dtype stacked by rows, as
// one matrix [sum rows_i, K].
PackedMatrix pack_stacked_matrices(const std::vector<Tensor>& parts, ThreadPool& pool);
PackedMatrix pack_stacked_matrices(const std::vector<Tensor>& parts, ThreadPool& pool, PanelLayout layout);

// Quantized [rows_i, K] matrices stacked by rows into one.  Parts of
// different formats (a quantizer's 4-bit q_proj beside its 6-bit v_proj)
// share the widest: 8-bit codes if any code is outside 4 bits, the largest
// group size that divides all parts' (a part's scales repeated), offsets if
// any part has them.  K and the group size must be even, and the parts'
// input orders equal.
PackedMatrix pack_quantized_matrices(const std::vector<const GroupQuantized*>& parts, ThreadPool& pool);

// Int8 matrices for int8 activations (group_quantized.h's
// int8_activations), stacked by rows into one kInt8Dot matrix: one group a
// row, no offsets, inputs in order.  Parts with static activation scales
// take the largest.
PackedMatrix pack_int8_dot_matrices(const std::vector<const GroupQuantized*>& parts, ThreadPool& pool);

// A kInt8Dot panel's codes, its columns' scales and their code sums.
inline const int8_t* int8_dot_codes(const PackedMatrix& m, int64_t p) {
  return m.data.as<int8_t>() + p * m.quant.panel_code_bytes(m.cols);
}
inline const float* int8_dot_scales(const PackedMatrix& m, int64_t p) {
  return reinterpret_cast<const float*>(m.group_params.as<uint8_t>() + p * m.quant.panel_param_bytes(m.cols));
}
inline const int32_t* int8_dot_code_sums(const PackedMatrix& m, int64_t p) {
  return reinterpret_cast<const int32_t*>(int8_dot_scales(m, p) + kPanelWidth);
}

// A kBlockInt4 / kBlockInt6 / kBlockInt8 panel's code of column c (< kPanelWidth) at k,
// and (any quantized matrix's) group g's parameter `set` (0: its scale, 1:
// its offset) of column c.
int32_t block_code(const PackedMatrix& m, int64_t p, int64_t c, int64_t k);
float group_param(const PackedMatrix& m, int64_t p, int64_t g, int set, int64_t c);
// The same for every column of the panel at once: out[c], c < kPanelWidth.
void group_params(const PackedMatrix& m, int64_t p, int64_t g, int set, float* out);

// The other quantized matrices' codes as the numbers they stand for (the
// int4_codes entry, the int8 code, the FP8 value), which gemm.h's quantized
// arithmetic multiplies before its groups' scales and offsets: column c's
// at k of panel p, and panel p's at k in [k0, k0 + kc) (k0 and kc even) in
// the F32 layout, out[(k - k0) * kPanelWidth + c].
float quantized_code(const PackedMatrix& m, int64_t p, int64_t c, int64_t k);
void code_panel(const PackedMatrix& m, int64_t p, int64_t k0, int64_t kc, float* out);

}  // namespace vllm::kernels
