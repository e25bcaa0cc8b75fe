// pack_quantized_matrices and the quantized half of PackedMatrix's accessors
// (packed_matrix.h describes the layout).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/logging.h"
#include "kernels/packed_matrix.h"
#include "tensor/dtype.h"

namespace vllm::kernels {
namespace {

bool exact_in_f16(float v) { return f16_to_f32(f32_to_f16(v)) == v || std::isnan(v); }

// Whether every part gives its parameters in two levels over super-blocks
// of one size (in values).
bool all_in_steps(const std::vector<const GroupQuantized*>& parts) {
  for (const GroupQuantized* part : parts) {
    if (part->super_groups == 0 ||
        part->super_groups * part->group_size != parts[0]->super_groups * parts[0]->group_size) {
      return false;
    }
  }
  return true;
}

// Whether parts of format f are computed against activations quantized in
// blocks (group_quantized.h's block_int8_activations).
bool for_block_int8(const std::vector<const GroupQuantized*>& parts, const QuantFormat& f) {
  const bool all =
      std::all_of(parts.begin(), parts.end(), [](const GroupQuantized* part) { return part->block_int8_activations; });
  return all && fits_activation_blocks(f.group_size) &&
         (f.codes == QuantCodes::kInt4 || f.codes == QuantCodes::kInt8) && parts[0]->input_order.empty();
}

// The format all parts fit in (see pack_quantized_matrices).
QuantFormat common_format(const std::vector<const GroupQuantized*>& parts) {
  std::array<bool, 256> used{};  // by code + 128
  int64_t group = 0;
  QuantFormat f;
  bool f16_exact = true;
  for (const GroupQuantized* part : parts) {
    for (const int8_t c : part->codes) used[static_cast<size_t>(c + 128)] = true;
    group = std::gcd(group, part->group_size);
    f.has_offsets |= !part->offsets.empty();
    for (const float s : part->scales) f16_exact &= exact_in_f16(s);
    for (const float o : part->offsets) f16_exact &= exact_in_f16(o);
  }
  // At most 16 distinct codes (4-bit formats, and non-linear ones such as
  // IQ4_NL's table): nibbles, indices into them in ascending order.  FP8
  // codes stay whole (their bits are not numbers to index by).
  f.codes = parts[0]->fp8_codes                                ? QuantCodes::kFp8
            : std::count(used.begin(), used.end(), true) <= 16 ? QuantCodes::kInt4
                                                               : QuantCodes::kInt8;
  for (int v = 0, n = 0; v < 256 && f.codes == QuantCodes::kInt4; ++v) {
    if (used[static_cast<size_t>(v)]) f.int4_codes[static_cast<size_t>(n++)] = static_cast<int8_t>(v - 128);
  }
  f.group_size = group;
  f.params = f16_exact && f.codes != QuantCodes::kFp8 ? QuantParams::kF16 : QuantParams::kF32;  // FP8: FP32 scales
  if (!f16_exact && f.codes != QuantCodes::kFp8 && all_in_steps(parts)) {
    f.params = QuantParams::kSteps;
    f.super_groups = parts[0]->super_groups * parts[0]->group_size / group;
  }
  if (for_block_int8(parts, f)) {
    // Stored unsigned, biased by the smallest code's magnitude: 4-bit codes
    // (as their nibbles' numbers in the kernels' table), and 8-bit ones in
    // six bits where that holds them all (Q6_K's -32 .. 31, Q5's); other
    // 8-bit codes by 128.
    const auto lowest = static_cast<int32_t>(std::find(used.begin(), used.end(), true) - used.begin()) - 128;
    const auto highest = 127 - static_cast<int32_t>(std::find(used.rbegin(), used.rend(), true) - used.rbegin());
    f.code_bias = std::max(0, -lowest);
    if (f.codes == QuantCodes::kInt4) {
      f.codes = QuantCodes::kBlockInt4;
    } else if (highest + f.code_bias < 64) {
      f.codes = QuantCodes::kBlockInt6;
    } else {
      f.codes = QuantCodes::kBlockInt8, f.code_bias = 128;
    }
  }
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

// Where set `set` (0: scales, 1: offsets) of group g's parameter for
// column c sits in its panel's parameters (base_bytes: its bases, before
// its groups), and the base's for kSteps.
int64_t param_offset(const QuantFormat& f, int64_t base_bytes, int64_t g, int set, int64_t c) {
  return base_bytes + g * f.group_param_bytes() + (set * kPanelWidth + c) * f.param_bytes();
}
int64_t base_offset(const QuantFormat& f, int64_t g, int set, int64_t c) {
  return f.bases_offset(g) + (set * kPanelWidth + c) * 4;
}

// Group g's parameter `set` for column c, from its panel's parameters.
float load_param(const QuantFormat& f, const uint8_t* panel, int64_t base_bytes, int64_t g, int set, int64_t c) {
  const uint8_t* at = panel + param_offset(f, base_bytes, g, set, c);
  switch (f.params) {
    case QuantParams::kF16: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      return f16_to_f32(h);
    }
    case QuantParams::kF32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case QuantParams::kSteps: {
      float base;
      std::memcpy(&base, panel + base_offset(f, g, set, c), 4);
      return base * static_cast<float>(static_cast<int8_t>(*at));
    }
  }
  return 0.0f;
}

// Stores group g's parameters of stacked row `row` of `part` (column c of
// its panel): the floats, or the steps and (once per super-block) bases.
void store_params(const QuantFormat& f, const GroupQuantized& part, int64_t row, uint8_t* panel, int64_t base_bytes,
                  int64_t g, int64_t c) {
  const auto part_group = static_cast<size_t>(row * part.groups_per_row() + g * f.group_size / part.group_size);
  for (int set = 0; set < f.param_sets(); ++set) {
    const bool offsets = set == 1;
    const bool none = offsets && part.offsets.empty();  // zero offsets beside a part's that has them
    uint8_t* at = panel + param_offset(f, base_bytes, g, set, c);
    if (f.params == QuantParams::kSteps) {
      const auto& steps = offsets ? part.offset_steps : part.scale_steps;
      const auto& bases = offsets ? part.offset_bases : part.scale_bases;
      *at = none ? 0 : static_cast<uint8_t>(steps[part_group]);
      const float base = none ? 0.0f : bases[part_group / static_cast<size_t>(part.super_groups)];
      std::memcpy(panel + base_offset(f, g, set, c), &base, 4);
      continue;
    }
    const float v = none ? 0.0f : (offsets ? part.offsets : part.scales)[part_group];
    if (f.params == QuantParams::kF16) {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(at, &h, 2);
    } else {
      std::memcpy(at, &v, 4);
    }
  }
}

// Where the code of w[c, k] (c < kPanelWidth) sits in its panel, and in which nibble.
int64_t code_offset(const QuantFormat& f, int64_t c, int64_t k) {
  return k / 2 * f.pair_bytes() + (f.codes != QuantCodes::kInt4 ? k % 2 * kPanelWidth : 0) + c;
}

// The code of column c at the even (odd = false) or odd k of a pair of a
// panel, as the number it stands for.
float pair_code(const QuantFormat& f, const uint8_t* pair, int64_t c, bool odd) {
  if (f.codes == QuantCodes::kInt8) return static_cast<int8_t>(pair[(odd ? kPanelWidth : 0) + c]);
  if (f.codes == QuantCodes::kFp8) return e4m3_to_f32(pair[(odd ? kPanelWidth : 0) + c]);
  const int nibble = odd ? pair[c] >> 4 : pair[c] & 0xF;
  return f.int4_codes[static_cast<size_t>(nibble)];
}

// group_quantized.h's value of a code.
float dequantize(const QuantFormat& f, float scale, float code, float offset) {
  return f.has_offsets ? std::fma(scale, code, offset) : scale * code;
}

// Stores the code of column c at k into its panel (`panel`, zero-filled) as
// f lays it out: a byte (biased for kBlockInt8), a nibble (its index into
// int4_codes, nibble_of's by code + 128) set in its byte, or kBlockInt6's
// biased number's low nibble and top two bits set in theirs.
void store_code(const QuantFormat& f, const std::array<uint8_t, 256>& nibble_of, uint8_t* panel, int64_t c, int64_t k,
                int8_t code) {
  const uint8_t nibble = nibble_of[static_cast<size_t>(code + 128)];
  switch (f.codes) {
    case QuantCodes::kBlockInt8:
      panel[block_int8_offset(c, k)] = static_cast<uint8_t>(code + f.code_bias);
      return;
    case QuantCodes::kBlockInt4:
      panel[block_int4_offset(c, k)] |= static_cast<uint8_t>(nibble << (k % kActivationBlock / 16 * 4));
      return;
    case QuantCodes::kBlockInt6: {
      const auto number = static_cast<uint8_t>(code + f.code_bias);
      panel[block_int6_low_offset(c, k)] |= static_cast<uint8_t>((number & 0xF) << (k % kActivationBlock / 16 * 4));
      panel[block_int6_top_offset(c, k)] |= static_cast<uint8_t>(number >> 4 << block_int6_top_shift(k));
      return;
    }
    case QuantCodes::kInt4:
      panel[code_offset(f, c, k)] |= static_cast<uint8_t>(nibble << (k % 2 * 4));
      return;
    default:  // kInt8, kFp8
      panel[code_offset(f, c, k)] = static_cast<uint8_t>(code);
      return;
  }
}

void pack_panels(const std::vector<const GroupQuantized*>& parts, PackedMatrix& m, int64_t p_begin, int64_t p_end) {
  const QuantFormat& f = m.quant;
  std::array<uint8_t, 256> nibble_of{};  // by code + 128
  for (size_t n = 0; n < 16; ++n) nibble_of[static_cast<size_t>(f.int4_codes[n] + 128)] = static_cast<uint8_t>(n);
  const int64_t groups = m.cols / f.group_size, base_bytes = f.panel_base_bytes(m.cols);
  for (int64_t p = p_begin; p < p_end; ++p) {
    uint8_t* codes = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols);
    uint8_t* params = m.group_params.as<uint8_t>() + p * f.panel_param_bytes(m.cols);
    const int64_t width = std::min(kPanelWidth, m.rows - p * kPanelWidth);
    for (int64_t c = 0; c < width; ++c) {
      const auto [part, row] = stacked_row(parts, p * kPanelWidth + c);
      const int8_t* part_codes = part->codes.data() + row * m.cols;
      for (int64_t k = 0; k < m.cols; ++k) store_code(f, nibble_of, codes, c, k, part_codes[k]);
      for (int64_t g = 0; g < groups; ++g) store_params(f, *part, row, params, base_bytes, g, c);
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
    const size_t groups = part->scales.size(), supers = part->super_groups > 0 ? groups / part->super_groups : 0;
    VLLM_CHECK(
        part->super_groups == 0 ||
            (part->groups_per_row() % part->super_groups == 0 && part->scale_steps.size() == groups &&
             part->scale_bases.size() == supers &&
             (part->offsets.empty() || (part->offset_steps.size() == groups && part->offset_bases.size() == supers))),
        "pack_quantized_matrices: two-level parameters must cover every group");
    m.rows += part->rows;
  }
  for (const GroupQuantized* part : parts) {
    VLLM_CHECK(part->input_order == parts[0]->input_order,
               "pack_quantized_matrices: stacked parts' input orders differ");
    VLLM_CHECK(part->fp8_codes == parts[0]->fp8_codes, "pack_quantized_matrices: FP8 parts stack only with FP8 ones");
  }
  m.input_order = parts[0]->input_order;
  m.quant = common_format(parts);
  VLLM_CHECK(m.cols % 2 == 0 && m.quant.group_size % 2 == 0,
             "pack_quantized_matrices: the width and the group size must be even");
  m.data = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_code_bytes(m.cols)));
  m.group_params = AlignedBuffer(static_cast<size_t>(m.num_panels() * m.quant.panel_param_bytes(m.cols)));
  pool.parallel_for(m.num_panels(), [&](int64_t begin, int64_t end) { pack_panels(parts, m, begin, end); });
  return m;
}

float PackedMatrix::quantized_at(int64_t row, int64_t input) const {
  // The column holding `input` (a search: at() is for tests and embedding
  // rows, and no embedding table gathers its inputs).
  const int64_t col =
      input_order.empty() ? input : std::find(input_order.begin(), input_order.end(), input) - input_order.begin();
  const QuantFormat& f = quant;
  const int64_t p = row / kPanelWidth, c = row % kPanelWidth, g = col / f.group_size;
  if (f.blocks()) {
    const float offset = f.has_offsets ? group_param(*this, p, g, 1, c) : 0.0f;
    return dequantize(f, group_param(*this, p, g, 0, c), static_cast<float>(block_code(*this, p, c, col)), offset);
  }
  const uint8_t* pair = data.as<uint8_t>() + p * f.panel_code_bytes(cols) + col / 2 * f.pair_bytes();
  const uint8_t* params = group_params.as<uint8_t>() + p * f.panel_param_bytes(cols);
  const int64_t base_bytes = f.panel_base_bytes(cols);
  const float offset = f.has_offsets ? load_param(f, params, base_bytes, g, 1, c) : 0.0f;
  return dequantize(f, load_param(f, params, base_bytes, g, 0, c), pair_code(f, pair, c, col % 2 != 0), offset);
}

int32_t block_code(const PackedMatrix& m, int64_t p, int64_t c, int64_t k) {
  const uint8_t* panel = m.data.as<uint8_t>() + p * m.quant.panel_code_bytes(m.cols);
  if (m.quant.codes == QuantCodes::kBlockInt8) return panel[block_int8_offset(c, k)] - m.quant.code_bias;
  if (m.quant.codes == QuantCodes::kBlockInt6) {
    const int low = panel[block_int6_low_offset(c, k)] >> (k % kActivationBlock / 16 * 4) & 0xF;
    const int top = panel[block_int6_top_offset(c, k)] >> block_int6_top_shift(k) & 0x3;
    return (top << 4 | low) - m.quant.code_bias;
  }
  const int nibble = panel[block_int4_offset(c, k)] >> (k % kActivationBlock / 16 * 4) & 0xF;
  return m.quant.int4_codes[static_cast<size_t>(nibble)];
}

float group_param(const PackedMatrix& m, int64_t p, int64_t g, int set, int64_t c) {
  const uint8_t* params = m.group_params.as<uint8_t>() + p * m.quant.panel_param_bytes(m.cols);
  return load_param(m.quant, params, m.quant.panel_base_bytes(m.cols), g, set, c);
}

void group_params(const PackedMatrix& m, int64_t p, int64_t g, int set, float* out) {
  // group_param's reading, a panel at a time: load_param inlines here, where
  // a call per column from the kernels' files did not.
  const uint8_t* params = m.group_params.as<uint8_t>() + p * m.quant.panel_param_bytes(m.cols);
  const int64_t base_bytes = m.quant.panel_base_bytes(m.cols);
  for (int64_t c = 0; c < kPanelWidth; ++c) out[c] = load_param(m.quant, params, base_bytes, g, set, c);
}

float quantized_code(const PackedMatrix& m, int64_t p, int64_t c, int64_t k) {
  const QuantFormat& f = m.quant;
  VLLM_CHECK(!f.blocks(), "quantized_code: block int8 matrices' codes are block_code's");
  const uint8_t* pair = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols) + k / 2 * f.pair_bytes();
  return pair_code(f, pair, c, k % 2 != 0);
}

void code_panel(const PackedMatrix& m, int64_t p, int64_t k0, int64_t kc, float* out) {
  const QuantFormat& f = m.quant;
  VLLM_CHECK(!f.blocks(), "code_panel: block int8 matrices are not computed on panels of codes");
  const uint8_t* codes = m.data.as<uint8_t>() + p * f.panel_code_bytes(m.cols);
  for (int64_t k = k0; k < k0 + kc; k += 2) {
    const uint8_t* pair = codes + k / 2 * f.pair_bytes();
    float* even = out + (k - k0) * kPanelWidth;
    float* odd = even + kPanelWidth;
    for (int64_t c = 0; c < kPanelWidth; ++c) {
      even[c] = pair_code(f, pair, c, false);
      odd[c] = pair_code(f, pair, c, true);
    }
  }
}

}  // namespace vllm::kernels
