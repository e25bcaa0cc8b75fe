// Quantized weights (group_quantized.h, packed_matrix.h): packing keeps every
// value, and every ISA's quantized GEMM is gemm.h's quantized arithmetic bit
// for bit, whatever the batch, and the F32 GEMM over the dequantized matrix
// within float32 rounding.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "kernels/supported_isas.h"
#include "tensor/dtype.h"
#include "test_util.h"

namespace vllm::kernels {
namespace {

// The values codes are drawn from, ascending.
using Codes = std::vector<int>;
Codes codes_between(int low, int high) {
  Codes c;
  for (int v = low; v <= high; ++v) c.push_back(v);
  return c;
}
const Codes kUnsigned4 = codes_between(0, 15), kSigned4 = codes_between(-8, 7), kSigned8 = codes_between(-128, 127);
// A non-linear 4-bit format's 16 levels (ggml's IQ4_NL).
const Codes kNonLinear4 = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

enum class Params { kF16, kF32, kSteps };

// Random codes from `range`, scales and offsets (or none): FP16 numbers,
// arbitrary floats, or in two levels (an FP16 base per super-block of
// `super_groups` groups times a step of 0..63 per group, as K-quants).
GroupQuantized random_quantized(int64_t rows, int64_t cols, int64_t group, const Codes& range, bool offsets,
                                Params params, uint32_t seed, int64_t super_groups = 8) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> code(0, range.size() - 1);
  std::uniform_int_distribution<int> step(0, 63);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), offset(-0.3f, 0.3f);
  auto param = [&](float v) { return params == Params::kF16 ? f16_to_f32(f32_to_f16(v)) : v; };
  GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = group;
  for (int64_t i = 0; i < rows * cols; ++i) q.codes.push_back(static_cast<int8_t>(range[code(rng)]));
  if (params == Params::kSteps) {
    q.super_groups = super_groups;
    for (int64_t i = 0; i < rows * q.groups_per_row() / super_groups; ++i) {
      q.scale_bases.push_back(f16_to_f32(f32_to_f16(scale(rng) / 32)));
      if (offsets) q.offset_bases.push_back(f16_to_f32(f32_to_f16(-scale(rng) / 4)));
    }
  }
  for (int64_t g = 0; g < rows * q.groups_per_row(); ++g) {
    if (params != Params::kSteps) {
      q.scales.push_back(param(scale(rng)));
      if (offsets) q.offsets.push_back(param(offset(rng)));
      continue;
    }
    const auto base = static_cast<size_t>(g / super_groups);
    q.scale_steps.push_back(static_cast<int8_t>(step(rng)));
    q.scales.push_back(q.scale_bases[base] * static_cast<float>(q.scale_steps.back()));
    if (!offsets) continue;
    q.offset_steps.push_back(static_cast<int8_t>(step(rng)));
    q.offsets.push_back(q.offset_bases[base] * static_cast<float>(q.offset_steps.back()));
  }
  return q;
}

// The stacked parts' values, dequantized, as a dense F32 packed matrix.
PackedMatrix dequantized(const std::vector<const GroupQuantized*>& parts, std::vector<float>& values,
                         ThreadPool& pool) {
  values.clear();
  int64_t rows = 0;
  for (const GroupQuantized* p : parts) {
    std::vector<float> part(static_cast<size_t>(p->rows * p->cols));
    p->dequantize_rows(0, p->rows, part.data());
    values.insert(values.end(), part.begin(), part.end());
    rows += p->rows;
  }
  return pack_matrix(Tensor{values.data(), DType::kF32, {rows, parts[0]->cols}}, pool, PanelLayout::kColumns);
}

// A tensor-parallel rank's share: rows and whole groups of columns, the same values.
TEST(GroupQuantizedTest, APartHoldsTheSameValues) {
  struct Case {
    GroupQuantized whole;
    int64_t first_row, num_rows, first_col, num_cols;
  };
  std::vector<Case> cases = {
      {random_quantized(6, 512, 32, kUnsigned4, true, Params::kSteps, 1), 2, 3, 256, 256},  // super-blocks of 256
      {random_quantized(5, 512, 16, kSigned8, false, Params::kSteps, 2, 16), 0, 5, 0, 256},
      {random_quantized(4, 128, 32, kUnsigned4, true, Params::kF32, 3), 1, 2, 32, 64},
      {random_quantized(4, 64, 64, kSigned8, false, Params::kF16, 4), 0, 4, 16, 32},  // one group a row
  };
  for (const Case& c : cases) {
    GroupQuantized copy = c.whole;
    const GroupQuantized part = std::move(copy).part(c.first_row, c.num_rows, c.first_col, c.num_cols);
    ASSERT_EQ(part.rows, c.num_rows);
    ASSERT_EQ(part.cols, c.num_cols);
    for (int64_t r = 0; r < c.num_rows; ++r) {
      for (int64_t col = 0; col < c.num_cols; ++col) {
        ASSERT_EQ(part.value(r, col), c.whole.value(c.first_row + r, c.first_col + col)) << r << " " << col;
      }
    }
    if (part.super_groups > 0) {  // the two levels stay consistent with the scales
      for (int64_t g = 0; g < c.num_rows * part.groups_per_row(); ++g) {
        const auto base = static_cast<size_t>(g / part.super_groups);
        ASSERT_EQ(part.scales[static_cast<size_t>(g)],
                  part.scale_bases[base] * static_cast<float>(part.scale_steps[static_cast<size_t>(g)]));
      }
    }
  }
}

TEST(GroupQuantizedTest, ColumnsThatCutAGroupOrAnInputOrderAreNotSeparable) {
  const GroupQuantized steps = random_quantized(2, 512, 32, kUnsigned4, true, Params::kSteps, 5);
  EXPECT_TRUE(steps.columns_separable(256, 256));
  EXPECT_FALSE(steps.columns_separable(128, 128));  // inside a super-block of 8 groups
  GroupQuantized groups = random_quantized(2, 128, 32, kUnsigned4, true, Params::kF32, 6);
  EXPECT_TRUE(groups.columns_separable(32, 64));
  EXPECT_FALSE(groups.columns_separable(16, 32));
  EXPECT_TRUE(random_quantized(2, 64, 64, kSigned8, false, Params::kF32, 7).columns_separable(8, 24));
  for (int32_t c = 127; c >= 0; --c) groups.input_order.push_back(c);
  EXPECT_FALSE(groups.columns_separable(0, 64));
  EXPECT_TRUE(groups.columns_separable(0, 128));
}

TEST(QuantizedPackingTest, EveryValueReadsBackAndTheFormatIsTheNarrowestThatHoldsIt) {
  ThreadPool pool(2);
  struct Case {
    const Codes& codes;
    bool offsets;
    Params params;
    QuantCodes expect_codes;
  };
  for (const Case& c :
       {Case{kUnsigned4, true, Params::kF16, QuantCodes::kInt4}, Case{kSigned4, false, Params::kF32, QuantCodes::kInt4},
        Case{kNonLinear4, false, Params::kF16, QuantCodes::kInt4},
        Case{kSigned8, false, Params::kF16, QuantCodes::kInt8}, Case{kSigned8, true, Params::kF32, QuantCodes::kInt8},
        Case{kUnsigned4, true, Params::kSteps, QuantCodes::kInt4}}) {
    const GroupQuantized q = random_quantized(45, 512, 32, c.codes, c.offsets, c.params, 7);
    const PackedMatrix m = pack_quantized_matrices({&q}, pool);
    EXPECT_EQ(m.quant.codes, c.expect_codes);
    if (c.expect_codes == QuantCodes::kInt4) {  // the nibbles stand for the codes in ascending order
      EXPECT_EQ(Codes(m.quant.int4_codes.begin(), m.quant.int4_codes.end()), c.codes);
    }
    EXPECT_EQ(m.quant.has_offsets, c.offsets);
    EXPECT_EQ(static_cast<int>(m.quant.params), static_cast<int>(c.params));
    for (int64_t r = 0; r < q.rows; ++r) {
      for (int64_t k = 0; k < q.cols; ++k) ASSERT_EQ(m.at(r, k), q.value(r, k)) << r << "," << k;
    }
  }
}

// A 4-bit part with groups of 32 and offsets beside an 8-bit one with groups
// of 16 and none (Q4_K q_proj beside Q6_K v_proj): one matrix of 8-bit codes,
// groups of 16 and offsets, every value kept; in two levels when both parts
// are (super-blocks of 256 values), else FP32.
TEST(QuantizedPackingTest, MixedPartsShareTheWidestFormat) {
  ThreadPool pool(1);
  for (const bool second_in_steps : {true, false}) {
    const GroupQuantized a = random_quantized(40, 512, 32, kUnsigned4, true, Params::kSteps, 1, 8);
    const GroupQuantized b =
        random_quantized(8, 512, 16, kSigned8, false, second_in_steps ? Params::kSteps : Params::kF16, 2, 16);
    const PackedMatrix m = pack_quantized_matrices({&a, &b}, pool);
    EXPECT_EQ(m.quant.codes, QuantCodes::kInt8);
    EXPECT_EQ(m.quant.group_size, 16);
    EXPECT_TRUE(m.quant.has_offsets);
    EXPECT_EQ(static_cast<int>(m.quant.params),
              static_cast<int>(second_in_steps ? QuantParams::kSteps : QuantParams::kF32));
    ASSERT_EQ(m.rows, 48);
    for (int64_t k = 0; k < 512; ++k) {
      for (int64_t r = 0; r < 40; ++r) ASSERT_EQ(m.at(r, k), a.value(r, k));
      for (int64_t r = 0; r < 8; ++r) ASSERT_EQ(m.at(40 + r, k), b.value(r, k));
    }
  }
}

// gemm.h's quantized arithmetic written out from the stacked parts' own
// codes and parameters (independent of the packing): rows m of x against
// every part's rows, one after the other.
std::vector<float> quantized_definition(const std::vector<float>& x, int64_t m,
                                        const std::vector<const GroupQuantized*>& parts) {
  bool offsets = false;
  for (const GroupQuantized* q : parts) offsets = offsets || !q->offsets.empty();
  std::vector<float> y;
  for (int64_t r = 0; r < m; ++r) {
    for (const GroupQuantized* q : parts) {
      const float* row = x.data() + r * q->cols;
      for (int64_t j = 0; j < q->rows; ++j) {
        float acc = 0.0f;
        for (int64_t g = 0; g < q->groups_per_row(); ++g) {
          float partial = 0.0f, sum = 0.0f;
          for (int64_t k = g * q->group_size; k < (g + 1) * q->group_size; ++k) {
            const int8_t code = q->codes[static_cast<size_t>(j * q->cols + k)];
            const float number = q->fp8_codes ? e4m3_to_f32(static_cast<uint8_t>(code)) : code;
            partial = std::fma(row[k], number, partial);
            sum += row[k];
          }
          const auto at = static_cast<size_t>(j * q->groups_per_row() + g);
          acc = std::fma(q->scales[at], partial, acc);
          if (offsets) acc = std::fma(q->offsets.empty() ? 0.0f : q->offsets[at], sum, acc);
        }
        y.push_back(acc);
      }
    }
  }
  // Rows were appended part by part; y is [m, rows of all parts] already.
  return y;
}

// Every ISA's quantized GEMM gives the definition's bits, and is the F32
// GEMM over the dequantized matrix within float32 rounding (relative to
// the sum of the products' magnitudes).
void expect_definition(const std::vector<float>& x, int64_t m, const std::vector<const GroupQuantized*>& parts,
                       ThreadPool& pool, const std::string& what) {
  const PackedMatrix packed = pack_quantized_matrices(parts, pool);
  const int64_t n = packed.rows, k = packed.cols;
  const std::vector<float> want = quantized_definition(x, m, parts);
  std::vector<float> values;
  const PackedMatrix dense = dequantized(parts, values, pool);
  std::vector<float> f32(want.size());
  cpu::reference_gemm_table(cpu::CpuIsa::kScalar)
      .f32(x.data(), m, dense.data.data(), k, n, 0, dense.num_panels(), f32.data(), n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double magnitude = 0.0;
      for (int64_t c = 0; c < k; ++c) magnitude += std::fabs(x[r * k + c] * values[j * k + c]);
      ASSERT_NEAR(want[r * n + j], f32[r * n + j], 1e-5 * magnitude + 1e-30) << what << " r=" << r << " j=" << j;
    }
  }
  for (cpu::CpuIsa isa : supported_isas()) {
    std::vector<float> y(want.size(), -1.0f);
    cpu::gemm_table(isa).quantized(x.data(), m, packed, 0, packed.num_panels(), y.data(), n);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], want[i]) << cpu::cpu_isa_name(isa) << " " << what << " at " << i;
  }
}

// On shapes off every panel, few-rows (3), tile, row-block (192) and
// code-depth (256) boundary (one group of the whole row across it), for
// each format.
TEST(QuantizedGemmTest, EveryIsaIsTheDefinitionBitForBit) {
  ThreadPool pool(1);
  struct Shape {
    int64_t m, n, k, group;
  };
  struct Format {
    const Codes& codes;
    bool offsets;
    Params params;
  };
  for (const Shape s :
       {Shape{1, 1, 32, 32}, Shape{1, 130, 96, 32}, Shape{1, 200, 576, 64}, Shape{2, 45, 64, 16}, Shape{3, 70, 320, 32},
        Shape{4, 97, 64, 64}, Shape{13, 70, 288, 32}, Shape{200, 40, 512, 128}, Shape{5, 33, 320, 320}}) {
    auto x = testing::random_normal(s.m * s.k, 4);
    for (const Format& f : {Format{kUnsigned4, true, Params::kF16}, Format{kSigned4, false, Params::kF16},
                            Format{kNonLinear4, false, Params::kSteps}, Format{kSigned8, false, Params::kF32},
                            Format{kUnsigned4, true, Params::kF32}, Format{kUnsigned4, true, Params::kSteps},
                            Format{kSigned8, false, Params::kSteps}}) {
      // Two levels over all of a row's groups (one super-block as wide as the row).
      const GroupQuantized q =
          random_quantized(s.n, s.k, s.group, f.codes, f.offsets, f.params, 5, /*super_groups=*/s.k / s.group);
      expect_definition(x, s.m, {&q}, pool,
                        "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                            " group=" + std::to_string(s.group));
    }
  }
}

// FP8 E4M3 codes (every byte but the two NaNs: subnormals, zeros of both
// signs, 448), one scale per group: each value reads back as scale *
// e4m3(code), and every ISA's GEMM is the definition over those numbers.
GroupQuantized random_fp8(int64_t rows, int64_t cols, int64_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = group, q.fp8_codes = true;
  for (int64_t i = 0; i < rows * cols; ++i) {
    int b = byte(rng);
    while ((b & 0x7F) == 0x7F) b = byte(rng);
    q.codes.push_back(static_cast<int8_t>(b));
  }
  for (int64_t g = 0; g < rows * q.groups_per_row(); ++g) q.scales.push_back(scale(rng));
  return q;
}

TEST(QuantizedGemmTest, Fp8CodesAreTheirE4m3Values) {
  ThreadPool pool(1);
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);  // the least subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1p-6f);  // the least normal
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);   // the largest
  EXPECT_EQ(e4m3_to_f32(0xC4), -3.0f);    // sign, exponent 8, mantissa 4
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xFF)));
  for (const auto [m, n, k, group] : {std::array<int64_t, 4>{1, 70, 256, 128}, {3, 33, 64, 64}, {13, 96, 320, 32}}) {
    const GroupQuantized q = random_fp8(n, k, group, 21);
    const PackedMatrix packed = pack_quantized_matrices({&q}, pool);
    EXPECT_EQ(packed.quant.codes, QuantCodes::kFp8);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const float want = q.scales[static_cast<size_t>(r * (k / group) + c / group)] *
                           e4m3_to_f32(static_cast<uint8_t>(q.codes[static_cast<size_t>(r * k + c)]));
        ASSERT_EQ(packed.at(r, c), want) << r << "," << c;
      }
    }
    expect_definition(testing::random_normal(m * k, 22), m, {&q}, pool, "m=" + std::to_string(m));
  }
}

// Through linear(): panels shared among threads, a bias added, and each row
// the definition's whatever the batch around it (a part without offsets
// stacked on one with them); a sub-range of panels leaves the rest of y alone.
TEST(QuantizedGemmTest, LinearOnTwoThreadsIsTheDefinitionWhateverTheBatch) {
  ThreadPool pool(2);
  const GroupQuantized a = random_quantized(100, 128, 32, kSigned4, false, Params::kF16, 11);
  const GroupQuantized b = random_quantized(60, 128, 32, kUnsigned4, true, Params::kSteps, 12, 2);
  const PackedMatrix packed = pack_quantized_matrices({&a, &b}, pool);
  const auto bias = testing::random_normal(160, 13);
  for (int64_t m : {1, 2, 5, 40}) {
    const auto x = testing::random_normal(m * 128, 14);
    std::vector<float> y(static_cast<size_t>(m * 160));
    linear(x.data(), m, packed, bias.data(), y.data(), pool);
    std::vector<float> want = quantized_definition(x, m, {&a, &b});
    for (size_t i = 0; i < want.size(); ++i) want[i] += bias[i % 160];
    ASSERT_EQ(y, want) << "m=" << m;
  }
  const auto x = testing::random_normal(128, 15);
  std::vector<float> y(160, 7.0f);
  cpu::active_gemm_table().quantized(x.data(), 1, packed, 1, 3, y.data(), 160);
  const std::vector<float> want = quantized_definition(x, 1, {&a, &b});
  for (size_t j = 0; j < 160; ++j) {
    const bool in_range = j >= 32 && j < 96;
    EXPECT_EQ(y[j], in_range ? want[j] : 7.0f) << j;
  }
}

}  // namespace
}  // namespace vllm::kernels
