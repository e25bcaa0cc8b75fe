#include "kernels/ggml_blocks.h"

#include <array>
#include <cstring>

#include "base/logging.h"
#include "kernels/group_quantized.h"
#include "tensor/dtype.h"

namespace vllm::kernels {
namespace {

// K-quants: super-blocks of 256 values.
constexpr int64_t kSuper = 256;

constexpr std::array<GgmlTypeInfo, 15> kTypes = {{
    {GgmlType::kF32, "F32", 1, 4},
    {GgmlType::kF16, "F16", 1, 2},
    {GgmlType::kQ4_0, "Q4_0", 32, 2 + 16},
    {GgmlType::kQ4_1, "Q4_1", 32, 2 + 2 + 16},
    {GgmlType::kQ5_0, "Q5_0", 32, 2 + 4 + 16},
    {GgmlType::kQ5_1, "Q5_1", 32, 2 + 2 + 4 + 16},
    {GgmlType::kQ8_0, "Q8_0", 32, 2 + 32},
    {GgmlType::kQ2_K, "Q2_K", kSuper, 16 + 64 + 2 + 2},
    {GgmlType::kQ3_K, "Q3_K", kSuper, 32 + 64 + 12 + 2},
    {GgmlType::kQ4_K, "Q4_K", kSuper, 2 + 2 + 12 + 128},
    {GgmlType::kQ5_K, "Q5_K", kSuper, 2 + 2 + 12 + 32 + 128},
    {GgmlType::kQ6_K, "Q6_K", kSuper, 128 + 64 + 16 + 2},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 2 + 16},
    {GgmlType::kIQ4_XS, "IQ4_XS", kSuper, 2 + 2 + 4 + 128},
    {GgmlType::kBF16, "BF16", 1, 2},
}};

// ggml's names of every type number it has had, "" where none.
constexpr std::array<const char*, 39> kGgmlNames = {
    "F32",    "F16",      "Q4_0",     "Q4_1",     "Q4_2",  "Q4_3",  "Q5_0",       "Q5_1",       "Q8_0",      "Q8_1",
    "Q2_K",   "Q3_K",     "Q4_K",     "Q5_K",     "Q6_K",  "Q8_K",  "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",   "IQ1_S",
    "IQ4_NL", "IQ3_S",    "IQ2_S",    "IQ4_XS",   "I8",    "I16",   "I32",        "I64",        "F64",       "IQ1_M",
    "BF16",   "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8"};

float half(const uint8_t* at) {
  uint16_t h;
  std::memcpy(&h, at, 2);
  return f16_to_f32(h);
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block,
// packed in 12 bytes: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales)
// and 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11, with their
// top two bits in the top bits of bytes 0-7.
void scale_and_min(const uint8_t* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// Where a decoder puts a row's group form: codes, per group a scale and
// (for types that have one) an offset, and for K-quants their two levels.
struct Groups {
  int8_t* codes;
  float* scales;
  float* offsets;  // null for a type without offsets
  GgmlSteps steps;

  void group(float scale, float offset = 0.0f) {
    *scales++ = scale;
    if (offsets != nullptr) *offsets++ = offset;
  }
  // A K-quant super-block's bases (d, and -dmin where there are offsets) ...
  void super_block(float scale_base, float offset_base = 0.0f) {
    base_scale = scale_base, base_offset = offset_base;
    if (steps.scale_bases == nullptr) return;
    *steps.scale_bases++ = scale_base;
    if (offsets != nullptr) *steps.offset_bases++ = offset_base;
  }
  // ... and a group's steps of them: its scale base * scale_step, its offset likewise.
  void stepped_group(int scale_step, int offset_step = 0) {
    group(base_scale * static_cast<float>(scale_step), base_offset * static_cast<float>(offset_step));
    if (steps.scale_steps == nullptr) return;
    *steps.scale_steps++ = static_cast<int8_t>(scale_step);
    if (offsets != nullptr) *steps.offset_steps++ = static_cast<int8_t>(offset_step);
  }
  void code(int value) { *codes++ = static_cast<int8_t>(value); }

  float base_scale = 0.0f, base_offset = 0.0f;  // of the current super-block
};

// Blocks of 32: a scale d (and a min m), 16 bytes of nibbles holding values
// j (low nibble) and j + 16 (high nibble), and for 5-bit types a 32-bit
// word whose bit j is value j's fifth bit.  Without a min the unsigned
// codes are centred: ggml computes (q - 8) * d (4 bits) or (q - 16) * d.
template <bool kFifthBit, bool kMin>
void decode_32s(const uint8_t* block, Groups& out, int64_t blocks) {
  constexpr int64_t kBytes = 2 + (kMin ? 2 : 0) + (kFifthBit ? 4 : 0) + 16;
  constexpr int kCentre = kMin ? 0 : (kFifthBit ? 16 : 8);
  for (int64_t b = 0; b < blocks; ++b, block += kBytes) {
    out.group(half(block), kMin ? half(block + 2) : 0.0f);
    uint32_t high = 0;
    if constexpr (kFifthBit) std::memcpy(&high, block + (kMin ? 4 : 2), 4);
    const uint8_t* nibbles = block + kBytes - 16;
    for (int j = 0; j < 32; ++j) {
      int q = j < 16 ? nibbles[j] & 0xF : nibbles[j - 16] >> 4;
      if constexpr (kFifthBit) q |= static_cast<int>((high >> j) & 1) << 4;
      out.code(q - kCentre);
    }
  }
}

void decode_q8_0(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 34) {
    out.group(half(block));
    for (int j = 0; j < 32; ++j) out.code(static_cast<int8_t>(block[2 + j]));
  }
}

// Q2_K: scales[16] (low nibble: scale, high: min, of each 16 values),
// qs[64] (2-bit codes), d, dmin.  Each 128 values take 32 bytes of codes:
// value 32 * s + l of the half is bits 2s..2s+1 of byte l.  ggml computes
// (d * scale) * q - dmin * min.
void decode_q2_k(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 84) {
    const uint8_t* scales = block;
    out.super_block(half(block + 80), -half(block + 82));
    int sub = 0;
    for (int half_block = 0; half_block < 2; ++half_block) {
      const uint8_t* codes = block + 16 + 32 * half_block;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part, ++sub) {
          out.stepped_group(scales[sub] & 0xF, scales[sub] >> 4);
          for (int l = 0; l < 16; ++l) out.code((codes[16 * part + l] >> shift) & 3);
        }
      }
    }
  }
}

// Q3_K: hmask[32] (each value's third bit, inverted: clear means minus 4),
// qs[64] (low 2 bits, laid out as in Q2_K), scales[12] (sixteen 6-bit
// scales biased by 32), d.
void decode_q3_k(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 110) {
    const uint8_t* hmask = block;
    const uint8_t* packed = block + 96;
    out.super_block(half(block + 108));
    // Scale i: low 4 bits from byte i % 8 (low nibble for i < 8, high
    // otherwise), high 2 bits from byte 8 + i % 4, bits 2 * (i / 4).
    int scales[16];
    for (int i = 0; i < 16; ++i) {
      const int low = (packed[i % 8] >> (i < 8 ? 0 : 4)) & 0xF;
      const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
      scales[i] = (low | (high << 4)) - 32;
    }
    int sub = 0;
    uint8_t mask = 1;
    for (int half_block = 0; half_block < 2; ++half_block) {
      const uint8_t* codes = block + 32 + 32 * half_block;
      for (int shift = 0; shift < 8; shift += 2, mask = static_cast<uint8_t>(mask << 1)) {
        for (int part = 0; part < 2; ++part, ++sub) {
          out.stepped_group(scales[sub]);
          for (int l = 0; l < 16; ++l) {
            const int low = (codes[16 * part + l] >> shift) & 3;
            out.code(low - ((hmask[16 * part + l] & mask) ? 0 : 4));
          }
        }
      }
    }
  }
}

// Q4_K / Q5_K: d, dmin, 12 bytes of 6-bit scales and mins (scale_and_min),
// for Q5_K qh[32] (fifth bits: value 64 c + l has bit 2c of byte l, value
// 64 c + 32 + l bit 2c + 1), and qs[128]: each 64 values take 32 bytes,
// the first 32 values in the low nibbles, the next 32 in the high ones.
template <bool kFifthBit>
void decode_q45_k(const uint8_t* block, Groups& out, int64_t blocks) {
  constexpr int64_t kBytes = kFifthBit ? 176 : 144;
  for (int64_t b = 0; b < blocks; ++b, block += kBytes) {
    out.super_block(half(block), -half(block + 2));
    const uint8_t* packed = block + 4;
    const uint8_t* high = block + 16;
    const uint8_t* codes = block + (kFifthBit ? 48 : 16);
    for (int chunk = 0; chunk < 4; ++chunk, codes += 32) {
      for (int nibble = 0; nibble < 2; ++nibble) {
        int scale = 0, min = 0;
        scale_and_min(packed, 2 * chunk + nibble, scale, min);
        out.stepped_group(scale, min);
        const int bit = 2 * chunk + nibble;
        for (int l = 0; l < 32; ++l) {
          int q = (codes[l] >> (4 * nibble)) & 0xF;
          if constexpr (kFifthBit) q += ((high[l] >> bit) & 1) ? 16 : 0;
          out.code(q);
        }
      }
    }
  }
}

// Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8, one
// per 16 values), d.  Each 128 values use 64 bytes of ql and 32 of qh:
// value 32 s + l (s = 0..3) has its low bits in ql[l + 32 (s % 2)]
// (low nibble for s < 2) and its high bits at bits 2 s of qh[l].  ggml
// computes (d * scale) * (q - 32).
void decode_q6_k(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 210) {
    out.super_block(half(block + 208));
    for (int half_block = 0; half_block < 2; ++half_block) {
      const uint8_t* ql = block + 64 * half_block;
      const uint8_t* qh = block + 128 + 32 * half_block;
      const auto* scales = reinterpret_cast<const int8_t*>(block + 192 + 8 * half_block);
      for (int s = 0; s < 4; ++s) {
        for (int l = 0; l < 32; ++l) {
          if (l % 16 == 0) out.stepped_group(scales[2 * s + l / 16]);
          const int low = (ql[l + 32 * (s % 2)] >> (s < 2 ? 0 : 4)) & 0xF;
          out.code((low | (((qh[l] >> (2 * s)) & 3) << 4)) - 32);
        }
      }
    }
  }
}

// The 16 levels a nibble of IQ4_NL and IQ4_XS stands for (ggml's kvalues_iq4nl).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// 32 values' nibbles in 16 bytes: value j in the low nibble of byte j, value
// j + 16 in the high one; each code is the level the nibble names.
void iq4_codes(const uint8_t* nibbles, Groups& out) {
  for (int j = 0; j < 32; ++j) out.code(kIq4Levels[j < 16 ? nibbles[j] & 0xF : nibbles[j - 16] >> 4]);
}

// IQ4_NL: d, then 32 values' nibbles.  ggml computes d * level.
void decode_iq4_nl(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 18) {
    out.group(half(block));
    iq4_codes(block + 2, out);
  }
}

// IQ4_XS: d, scales_h (16 bits: 2 high bits of each 32 values' scale),
// scales_l[4] (a nibble each: the 4 low bits), qs[128] (32 values' nibbles
// per 16 bytes).  ggml computes (d * (scale - 32)) * level.
void decode_iq4_xs(const uint8_t* block, Groups& out, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, block += 136) {
    out.super_block(half(block));
    uint16_t high;
    std::memcpy(&high, block + 2, 2);
    for (int sub = 0; sub < 8; ++sub) {
      const int low = (block[4 + sub / 2] >> (4 * (sub % 2))) & 0xF;
      out.stepped_group((low | (((high >> (2 * sub)) & 3) << 4)) - 32);
      iq4_codes(block + 8 + 16 * sub, out);
    }
  }
}

bool has_offsets(GgmlType type) {
  return type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1 || type == GgmlType::kQ2_K || type == GgmlType::kQ4_K ||
         type == GgmlType::kQ5_K;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t number) {
  for (const GgmlTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == number) return info;
  }
  return std::nullopt;
}

std::string ggml_type_name(uint32_t number) {
  if (number < kGgmlNames.size()) return kGgmlNames[number];
  return "type " + std::to_string(number);
}

int64_t ggml_group_size(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return 0;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ6_K:
      return 16;
    default:
      return 32;
  }
}

bool ggml_type_has_offsets(GgmlType type) { return has_offsets(type); }

int64_t ggml_super_groups(GgmlType type) {
  switch (type) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_XS:
      return kSuper / ggml_group_size(type);
    default:
      return 0;
  }
}

void decode_ggml_row(GgmlType type, const void* row, int64_t elements, int8_t* codes, float* scales, float* offsets,
                     GgmlSteps steps) {
  const auto* bytes = static_cast<const uint8_t*>(row);
  const std::optional<GgmlTypeInfo> info = ggml_type_info(static_cast<uint32_t>(type));
  VLLM_CHECK(info && ggml_group_size(type) > 0 && elements % info->block_elements == 0,
             "decode_ggml_row: not a whole number of blocks of a quantized type");
  const int64_t blocks = elements / info->block_elements;
  Groups out{codes, scales, has_offsets(type) ? offsets : nullptr, ggml_super_groups(type) > 0 ? steps : GgmlSteps{}};
  switch (type) {
    case GgmlType::kQ4_0:
      return decode_32s<false, false>(bytes, out, blocks);
    case GgmlType::kQ4_1:
      return decode_32s<false, true>(bytes, out, blocks);
    case GgmlType::kQ5_0:
      return decode_32s<true, false>(bytes, out, blocks);
    case GgmlType::kQ5_1:
      return decode_32s<true, true>(bytes, out, blocks);
    case GgmlType::kQ8_0:
      return decode_q8_0(bytes, out, blocks);
    case GgmlType::kQ2_K:
      return decode_q2_k(bytes, out, blocks);
    case GgmlType::kQ3_K:
      return decode_q3_k(bytes, out, blocks);
    case GgmlType::kQ4_K:
      return decode_q45_k<false>(bytes, out, blocks);
    case GgmlType::kQ5_K:
      return decode_q45_k<true>(bytes, out, blocks);
    case GgmlType::kQ6_K:
      return decode_q6_k(bytes, out, blocks);
    case GgmlType::kIQ4_NL:
      return decode_iq4_nl(bytes, out, blocks);
    case GgmlType::kIQ4_XS:
      return decode_iq4_xs(bytes, out, blocks);
    default:
      return;
  }
}

void dequantize_ggml_row(GgmlType type, const void* row, float* out, int64_t elements) {
  const auto* bytes = static_cast<const uint8_t*>(row);
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(out, bytes, static_cast<size_t>(elements) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < elements; ++i) out[i] = half(bytes + 2 * i);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < elements; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      return;
    default:
      break;
  }
  // ggml's own arithmetic is this one's: each code times its scale is exact
  // in FP32, so its one rounding is where the offset is added (or none).
  GroupQuantized q;
  q.rows = 1, q.cols = elements, q.group_size = ggml_group_size(type);
  q.codes.resize(static_cast<size_t>(elements));
  q.scales.resize(static_cast<size_t>(elements / std::max<int64_t>(q.group_size, 1)));
  if (has_offsets(type)) q.offsets.resize(q.scales.size());
  decode_ggml_row(type, row, elements, q.codes.data(), q.scales.data(), q.offsets.data());
  q.dequantize_rows(0, 1, out);
}

}  // namespace vllm::kernels
