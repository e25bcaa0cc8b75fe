// A quantized weight matrix as every integer (and FP8) format reduces to it: each
// value an integer code (or an FP8 number's bits), each run of group_size values along a row (a
// group) a scale and an offset, and
//
//   w[r, c] = fma(scale[r, g], code[r, c], offset[r, g]),  g = c / group_size
//
// in FP32 (one rounding; scale * code without offsets).  ggml's block types (Q4_0 ... Q6_K: ggml_blocks.h)
// and the Hugging Face formats (GPTQ, AWQ, compressed-tensors) are all read
// into this form, exactly: their own dequantization gives the same bits.
// It is the form loaders hand over; pack_quantized_matrices
// (packed_matrix.h) turns it into the kernels' layout.
#pragma once

#include <cstdint>
#include <vector>

namespace vllm::kernels {

struct GroupQuantized {
  int64_t rows = 0, cols = 0;
  int64_t group_size = 0;     // divides cols
  std::vector<int8_t> codes;  // [rows, cols]
  // Set where the codes are FP8 E4M3 bit patterns standing for their FP8
  // values (FP8 checkpoints: w = scale * e4m3(code), no offsets), not integers.
  bool fp8_codes = false;
  std::vector<float> scales;   // [rows, cols / group_size]
  std::vector<float> offsets;  // the same, or empty for none (zero)
  // Optionally the inputs in another order (GPTQ's act-order, whose groups
  // are scattered over the inputs): column c holds input input_order[c], so
  // that each group's columns are consecutive; the kernels gather the
  // activations in this order first.  Empty: column c is input c.
  std::vector<int32_t> input_order;
  // Set where the codes are to meet activations quantized to int8 (W8A8:
  // one group a row, no offsets, two levels or input order): each product
  // is then an int32 sum of code times activation (gemm.h's int8
  // arithmetic) rather than a sum over dequantized weights.
  // activation_scale: the activations' static per-tensor scale, or 0 for
  // one per row from its largest magnitude (or its range, if asymmetric).
  // asymmetric_activations: with zero points (gemm.h's
  // quantize_int8_rows_asymmetric): activation_zero_point with a static
  // scale, else one per row.
  bool int8_activations = false;
  // Set where the source's own engine computes the codes against
  // activations quantized to int8 in blocks of 32 (GGUF's types, which
  // llama.cpp multiplies by Q8_0 or Q8_K activations): integer codes,
  // groups of 32 or 16 (their parameters in one level or two) and no input
  // order.  Stacked only with
  // parts that set it too, such matrices are computed that way (gemm.h's
  // block int8 arithmetic); otherwise as dequantized weights.
  bool block_int8_activations = false;
  float activation_scale = 0.0f;
  bool asymmetric_activations = false;
  int32_t activation_zero_point = 0;
  // Optionally the same scales and offsets in two levels, exactly (ggml's
  // K-quants: a super-block's FP16 d times each group's small integer):
  // scales[g] = scale_bases[g / super_groups] * scale_steps[g] in FP32, and
  // the offsets likewise.  The kernels then store steps, not floats.
  int64_t super_groups = 0;                       // 0: none
  std::vector<float> scale_bases, offset_bases;   // [rows, groups / super_groups]
  std::vector<int8_t> scale_steps, offset_steps;  // [rows, groups]

  int64_t groups_per_row() const { return group_size > 0 ? cols / group_size : 0; }
  // Whether columns [first, first + count) can be cut out on their own (a
  // tensor-parallel rank's share of the inputs): they hold whole groups
  // (whole super-groups with two-level parameters; any columns where a row
  // is one group) and the columns are the inputs' own order.
  bool columns_separable(int64_t first, int64_t count) const;
  // Rows [first_row, first_row + num_rows) and columns [first_col,
  // first_col + num_cols) with their parameters: the same values, as one
  // rank's share, made from this one's arrays (read once, not copied whole).
  // The columns must be separable.
  GroupQuantized part(int64_t first_row, int64_t num_rows, int64_t first_col, int64_t num_cols) &&;
  // The value of column col (input input_order[col], if any).
  float value(int64_t row, int64_t col) const;
  // Rows [row, row + count) as FP32 values into out[count, cols], in input order.
  void dequantize_rows(int64_t row, int64_t count, float* out) const;
};

// w [rows, cols] quantized to int8 per row exactly as gemm.h quantizes an
// activation row (scale max|w| / 127, code round-half-even(w * 127 /
// max|w|)), marked for int8 activations: the per-channel W8A8 of
// `--quantization int8`.
GroupQuantized int8_rows_for_int8_activations(const float* w, int64_t rows, int64_t cols);

}  // namespace vllm::kernels
