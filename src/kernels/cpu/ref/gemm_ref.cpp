#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {
namespace {

float widen(float v) { return v; }
float widen_bf16(uint16_t v) { return bf16_to_f32(v); }
float widen_f16(uint16_t v) { return f16_to_f32(v); }

// y[r, column] = dot(panel, lane, r) for every row and existing column of
// panels [p_begin, p_end): one output at a time.
template <typename T, typename Dot>
void each_output(const void* panels, int64_t m, int64_t k_total, int64_t n, int64_t p_begin, int64_t p_end, DType dtype,
                 float* y, int64_t ldy, Dot dot) {
  const T* w = static_cast<const T*>(panels);
  for (int64_t p = p_begin; p < p_end; ++p) {
    const T* panel = w + p * panel_stride(k_total);
    for (int64_t c = 0; c < kPanelWidth && p * kPanelWidth + c < n; ++c) {
      const int64_t lane = packed_lane(dtype, c);
      for (int64_t r = 0; r < m; ++r) y[r * ldy + p * kPanelWidth + c] = dot(panel, lane, r);
    }
  }
}

// The definition of gemm.h's arithmetic.
template <typename T, float (*Widen)(T), DType kDType>
void packed_gemm(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n, int64_t p_begin,
                 int64_t p_end, float* y, int64_t ldy) {
  each_output<T>(panels, m, k_total, n, p_begin, p_end, kDType, y, ldy, [&](const T* panel, int64_t lane, int64_t r) {
    float acc = 0.0f;
    for (int64_t k = 0; k < k_total; ++k) acc = std::fma(x[r * k_total + k], Widen(panel[k * kPanelWidth + lane]), acc);
    return acc;
  });
}

// gemm.h's BF16 pair arithmetic: subnormals flushed as the instruction does.
float flush_subnormal(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }
float round_to_bf16(float v) { return bf16_to_f32(f32_to_bf16(flush_subnormal(v))); }

void bf16_pair_gemm(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n, int64_t p_begin,
                    int64_t p_end, float* y, int64_t ldy) {
  each_output<uint16_t>(panels, m, k_total, n, p_begin, p_end, DType::kBF16, y, ldy,
                        [&](const uint16_t* panel, int64_t lane, int64_t r) {
                          auto weight = [&](int64_t k) {
                            return k < k_total ? flush_subnormal(bf16_to_f32(panel[k * kPanelWidth + lane])) : 0.0f;
                          };
                          auto act = [&](int64_t k) { return k < k_total ? round_to_bf16(x[r * k_total + k]) : 0.0f; };
                          float acc = 0.0f;
                          for (int64_t k = 0; k < k_total; k += 2) {
                            acc = flush_subnormal(std::fma(act(k + 1), weight(k + 1), acc));
                            acc = flush_subnormal(std::fma(act(k), weight(k), acc));
                          }
                          return acc;
                        });
}

// The definition of gemm.h's quantized arithmetic.
void quantized_gemm(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y,
                    int64_t ldy) {
  const int64_t group = w.quant.group_size, groups = w.cols / group;
  std::vector<float> sums(static_cast<size_t>(groups));
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * w.cols;
    quantized_group_sums(row, w.cols, group, sums.data());
    for (int64_t j = p_begin * kPanelWidth; j < std::min(w.rows, p_end * kPanelWidth); ++j) {
      const int64_t p = j / kPanelWidth, c = j % kPanelWidth;
      float acc = 0.0f;
      for (int64_t g = 0; g < groups; ++g) {
        float partial = 0.0f;
        for (int64_t k = g * group; k < (g + 1) * group; ++k)
          partial = std::fma(row[k], quantized_code(w, p, c, k), partial);
        acc = std::fma(group_param(w, p, g, 0, c), partial, acc);
        if (w.quant.has_offsets) acc = std::fma(group_param(w, p, g, 1, c), sums[static_cast<size_t>(g)], acc);
      }
      y[r * ldy + j] = acc;
    }
  }
}

// gemm.h's int8 rounding of one scaled activation: to nearest even, clamped
// (a NaN to -128, as the vector conversions give it).
uint8_t biased_int8(float v) {
  const float r = std::nearbyint(v);
  return static_cast<uint8_t>(static_cast<int>(r >= -128.0f ? std::min(r, 127.0f) : -128.0f) + 128);
}

// The definition of gemm.h's int8 activations.
void quantize_int8_rows(const float* x, int64_t m, int64_t k_total, float static_scale, uint8_t* q, float* row_scales) {
  const int64_t depth = int8_dot_depth(k_total);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k_total;
    uint8_t* out = q + r * depth;
    if (static_scale != 0.0f) {
      for (int64_t k = 0; k < k_total; ++k) out[k] = biased_int8(row[k] / static_scale);
      row_scales[r] = static_scale;
    } else {
      float amax = 0.0f;
      for (int64_t k = 0; k < k_total; ++k) amax = std::max(amax, std::fabs(row[k]));
      const float inverse = amax == 0.0f ? 0.0f : 127.0f / amax;
      for (int64_t k = 0; k < k_total; ++k) out[k] = biased_int8(row[k] * inverse);
      row_scales[r] = amax / 127.0f;
    }
    std::fill(out + k_total, out + depth, uint8_t{128});
  }
}

// The definition of gemm.h's int8 arithmetic.
void int8_gemm(const uint8_t* q, const float* row_scales, const int32_t* row_zero_points, int64_t m,
               const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t depth = int8_dot_depth(w.cols);
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int8_t* codes = int8_dot_codes(w, p);
    for (int64_t c = 0; c < kPanelWidth && p * kPanelWidth + c < w.rows; ++c) {
      for (int64_t r = 0; r < m; ++r) {
        int32_t acc = 0;
        for (int64_t k = 0; k < w.cols; ++k) acc += (q[r * depth + k] - 128) * codes[int8_dot_offset(c, k)];
        if (row_zero_points != nullptr) acc -= row_zero_points[r] * int8_dot_code_sums(w, p)[c];
        y[r * ldy + p * kPanelWidth + c] = row_scales[r] * (int8_dot_scales(w, p)[c] * static_cast<float>(acc));
      }
    }
  }
}

// The definition of gemm.h's block int8 activations.
void quantize_int8_blocks(const float* x, int64_t m, int64_t k_total, int64_t group_size, int8_t* q,
                          float* block_scales, int32_t* group_sums) {
  const int64_t blocks = k_total / kActivationBlock, groups = k_total / group_size;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = r * k_total + b * kActivationBlock;
      float amax = 0.0f;
      for (int64_t k = 0; k < kActivationBlock; ++k) amax = std::max(amax, std::fabs(x[first + k]));
      const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
      for (int64_t k = 0; k < kActivationBlock; ++k) {
        const float v = std::nearbyint(x[first + k] * inverse);
        q[first + k] = static_cast<int8_t>(v >= -127.0f ? std::min(v, 127.0f) : -127.0f);  // a NaN to -127
      }
      block_scales[r * blocks + b] = scale;
    }
    for (int64_t g = 0; g < groups; ++g) {
      int32_t sum = 0;
      for (int64_t k = g * group_size; k < (g + 1) * group_size; ++k) sum += q[r * k_total + k];
      group_sums[r * groups + g] = sum;
    }
  }
}

// The definition of gemm.h's block int8 arithmetic.
void block_int8_gemm(const int8_t* q, const float* block_scales, const int32_t* group_sums, int64_t m,
                     const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  const int64_t group_size = w.quant.group_size, groups = w.cols / group_size;
  const int64_t blocks = w.cols / kActivationBlock;
  for (int64_t p = p_begin; p < p_end; ++p) {
    for (int64_t c = 0; c < kPanelWidth && p * kPanelWidth + c < w.rows; ++c) {
      for (int64_t r = 0; r < m; ++r) {
        float acc = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
          int32_t d = 0;
          for (int64_t k = g * group_size; k < (g + 1) * group_size; ++k)
            d += block_code(w, p, c, k) * q[r * w.cols + k];
          const float s = block_scales[r * blocks + g * group_size / kActivationBlock];
          acc = std::fma(group_param(w, p, g, 0, c), static_cast<float>(d) * s, acc);
          if (w.quant.has_offsets) {
            acc = std::fma(group_param(w, p, g, 1, c), s * static_cast<float>(group_sums[r * groups + g]), acc);
          }
        }
        y[r * ldy + p * kPanelWidth + c] = acc;
      }
    }
  }
}

}  // namespace

void quantize_int8_rows_asymmetric(const float* x, int64_t m, int64_t k_total, float static_scale,
                                   int32_t static_zero_point, uint8_t* q, float* row_scales, int32_t* row_zero_points) {
  const int64_t depth = int8_dot_depth(k_total);
  // round(v) + zp, clamped, stored biased by 128 (biased_int8 of the sum: both are integers).
  const auto quantized = [](float v, int32_t zp) { return biased_int8(std::nearbyint(v) + static_cast<float>(zp)); };
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k_total;
    uint8_t* out = q + r * depth;
    if (static_scale > 0.0f) {
      for (int64_t k = 0; k < k_total; ++k) out[k] = quantized(row[k] / static_scale, static_zero_point);
      row_scales[r] = static_scale;
      row_zero_points[r] = static_zero_point;
    } else {
      float lo = 0.0f, hi = 0.0f;
      for (int64_t k = 0; k < k_total; ++k) lo = std::min(lo, row[k]), hi = std::max(hi, row[k]);
      if (!(hi > lo)) {  // a row of zeros
        quantize_int8_rows(row, 1, k_total, 0.0f, out, row_scales + r);
        row_zero_points[r] = 0;
        continue;
      }
      const float scale = (hi - lo) / 255.0f, inverse = 1.0f / scale;
      const auto zp = static_cast<int32_t>(std::nearbyint(-128.0f - lo / scale));
      for (int64_t k = 0; k < k_total; ++k) out[k] = quantized(row[k] * inverse, zp);
      row_scales[r] = scale;
      row_zero_points[r] = zp;
    }
    std::fill(out + k_total, out + depth, uint8_t{128});
  }
}

PackedGemmFn ref_bf16_pair_gemm() { return bf16_pair_gemm; }

GemmTable ref_gemm_table() {
  return {packed_gemm<float, widen, DType::kF32>,
          packed_gemm<uint16_t, widen_bf16, DType::kBF16>,
          packed_gemm<uint16_t, widen_f16, DType::kF16>,
          quantized_gemm,
          quantize_int8_rows,
          int8_gemm,
          quantize_int8_blocks,
          block_int8_gemm};
}

}  // namespace vllm::kernels::cpu
