// pack_quantized_matrices and the quantized half of PackedMatrix's accessors
// (packed_matrix.h describes the layout).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/logging.h"
#include "kernels/packed_matrix.h"
#include "tensor/dtype.h"

namespace vllm::kernels {
namespace {

bool exact_in_f16(float v) { return f16_to_f32(f32_to_f16(v)) == v || std::isnan(v); }

// The format all parts fit in (see pack_quantized_matrices).
QuantFormat common_format(const std::vector<const GroupQuantized*>& parts) {
  int min_code = 0, max_code = 0;
  int64_t group = 0;
  QuantFormat f;
  bool f16_exact = true;
  for (const GroupQuantized* part : parts) {
    for (const int8_t c : part->codes) {
      min_code = std::min<int>(min_code, c);
      max_code = std::max<int>(max_code, c);
    }
    group = std::gcd(group, part->group_size);
    f.has_offsets |= !part->offsets.empty();
    for (const float s : part->scales) f16_exact &= exact_in_f16(s);
    for (const float o : part->offsets) f16_exact &= exact_in_f16(o);
  }
  if (min_code >= 0 && max_code <= 15) {
    f.codes = QuantCodes::kInt4;
  } else if (min_code >= -8 && max_code <= 7) {
    f.codes = QuantCodes::kInt4;
    f.signed_int4 = true;
  } else {
    f.codes = QuantCodes::kInt8;
  }
  f.group_size = group;
  f.param_dtype = f16_exact ? DType::kF16 : DType::kF32;
  return f;
}

// Row r of the stacked parts: its part and the row within it.
std::pair<const GroupQuantized*, int64_t> stacked_row(const std::vector<const GroupQuantized*>& parts, int64_t r) {
  for (const GroupQuantized* part : parts) {
    if (r < part->rows) return {part, r};
    r -= part->rows;
  }
  return {nullptr, 0};
}

void store_param(const QuantFormat& f, void* params, int64_t index, float v) {
  if (f.param_dtype == DType::kF16) {
    static_cast<uint16_t*>(params)[index] = f32_to_f16(v);
  } else {
    static_cast<float*>(params)[index] = v;
  }
}

float load_param(const QuantFormat& f, const void* params, int64_t index) {
  return f.param_dtype == DType::kF16 ? f16_to_f32(static_cast<const uint16_t*>(params)[index])
                                      : static_cast<const float*>(params)[index];
}

// Where the code of w[c, k] (c < kPanelWidth) sits in its panel, and in which nibble.
int64_t code_offset(const QuantFormat& f, int64_t c, int64_t k) {
  return k / 2 * f.pair_bytes() + (f.codes == QuantCodes::kInt8 ? k % 2 * kPanelWidth : 0) + c;
}

// The code of column c at the even (odd = false) or odd k of a pair of a panel.
int pair_code(const QuantFormat& f, const uint8_t* pair, int64_t c, bool odd) {
  if (f.codes == QuantCodes::kInt8) return static_cast<int8_t>(pair[(odd ? kPanelWidth : 0) + c]);
  const int nibble = odd ? pair[c] >> 4 : pair[c] & 0xF;
  return f.signed_int4 && nibble >= 8 ? nibble - 16 : nibble;
}

// group_quantized.h's value of a code.
float dequantize(const QuantFormat& f, float scale, int code, float offset) {
  return f.has_offsets ? std::fma(scale, static_cast<float>(code), offset) : scale * static_cast<float>(code);
}

void pack_panels(const std::vector<const GroupQuantized*>& parts, PackedMatrix& m, int64_t p_begin, int64_t p_end) {
  const QuantFormat& f = m.quant;
  const int64_t groups = m.cols / f.group_size;
  for (int64_t p = p_begin; p < p_end; ++p) {
    uint8_t* codes = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols);
    const int64_t param_base = p * f.panel_param_elements(m.cols);
    const int64_t width = std::min(kPanelWidth, m.rows - p * kPanelWidth);
    for (int64_t c = 0; c < width; ++c) {
      const auto [part, row] = stacked_row(parts, p * kPanelWidth + c);
      const int8_t* part_codes = part->codes.data() + row * m.cols;
      for (int64_t k = 0; k < m.cols; ++k) {
        const auto code = static_cast<uint8_t>(part_codes[k]);
        uint8_t& byte = codes[code_offset(f, c, k)];
        byte = f.codes == QuantCodes::kInt8 ? code : static_cast<uint8_t>(byte | (code & 0xF) << (k % 2 * 4));
      }
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t part_group = row * part->groups_per_row() + g * f.group_size / part->group_size;
        const int64_t at = param_base + g * f.group_param_elements() + c;
        store_param(f, m.group_params.data(), at, part->scales[static_cast<size_t>(part_group)]);
        if (f.has_offsets) {
          const float offset = part->offsets.empty() ? 0.0f : part->offsets[static_cast<size_t>(part_group)];
          store_param(f, m.group_params.data(), at + kPanelWidth, offset);
        }
      }
    }
  }
}

}  // namespace

PackedMatrix pack_quantized_matrices(const std::vector<const GroupQuantized*>& parts, ThreadPool& pool) {
  VLLM_CHECK(!parts.empty(), "pack_quantized_matrices: nothing to pack");
  PackedMatrix m;
  m.cols = parts[0]->cols;
  for (const GroupQuantized* part : parts) {
    VLLM_CHECK(part->cols == m.cols && part->group_size > 0 && part->cols % part->group_size == 0 &&
                   part->codes.size() == static_cast<size_t>(part->rows * part->cols) &&
                   part->scales.size() == static_cast<size_t>(part->rows * part->groups_per_row()) &&
                   (part->offsets.empty() || part->offsets.size() == part->scales.size()),
               "pack_quantized_matrices: stacked parts must share a width that their groups divide");
    m.rows += part->rows;
  }
  m.quant = common_format(parts);
  VLLM_CHECK(m.cols % 2 == 0 && m.quant.group_size % 2 == 0,
             "pack_quantized_matrices: the width and the group size must be even");
  m.data = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_code_bytes(m.cols)));
  m.group_params = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_param_elements(m.cols)) *
                                 dtype_size(m.quant.param_dtype));
  pool.parallel_for(m.num_panels(), [&](int64_t begin, int64_t end) { pack_panels(parts, m, begin, end); });
  return m;
}

float PackedMatrix::quantized_at(int64_t row, int64_t col) const {
  const PackedMatrix& m = *this;
  const QuantFormat& f = m.quant;
  const int64_t p = row / kPanelWidth, c = row % kPanelWidth;
  const uint8_t* pair = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols) + col / 2 * f.pair_bytes();
  const int code = pair_code(f, pair, c, col % 2 != 0);
  const int64_t at = p * f.panel_param_elements(m.cols) + col / f.group_size * f.group_param_elements() + c;
  const float offset = f.has_offsets ? load_param(f, m.group_params.data(), at + kPanelWidth) : 0.0f;
  return dequantize(f, load_param(f, m.group_params.data(), at), code, offset);
}

void dequantize_panel(const PackedMatrix& m, int64_t p, int64_t k0, int64_t kc, float* out) {
  const QuantFormat& f = m.quant;
  const uint8_t* codes = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols);
  const int64_t param_base = p * f.panel_param_elements(m.cols);
  float scale[kPanelWidth], offset[kPanelWidth] = {};
  int64_t group = -1;
  for (int64_t k = k0; k < k0 + kc; k += 2) {
    if (k / f.group_size != group) {
      group = k / f.group_size;
      const int64_t at = param_base + group * f.group_param_elements();
      for (int64_t c = 0; c < kPanelWidth; ++c) {
        scale[c] = load_param(f, m.group_params.data(), at + c);
        if (f.has_offsets) offset[c] = load_param(f, m.group_params.data(), at + kPanelWidth + c);
      }
    }
    const uint8_t* pair = codes + k / 2 * f.pair_bytes();
    float* even = out + (k - k0) * kPanelWidth;
    float* odd = even + kPanelWidth;
    for (int64_t c = 0; c < kPanelWidth; ++c) {
      even[c] = dequantize(f, scale[c], pair_code(f, pair, c, false), offset[c]);
      odd[c] = dequantize(f, scale[c], pair_code(f, pair, c, true), offset[c]);
    }
  }
}

}  // namespace vllm::kernels
