// Integer matrices against activations quantized to int8 in blocks of 32
// (gemm.h's block int8 arithmetic, packed_matrix.h's kBlockInt4 /
// kBlockInt8 layouts): which parts are packed so, the layout as documented,
// activations quantized as ggml quantizes Q8_0 blocks, and every ISA's
// outputs equal to the arithmetic's definition computed here, through
// linear() too, and close to the product of the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "kernels/supported_isas.h"
#include "tensor/dtype.h"
#include "test_util.h"

namespace vllm::kernels {
namespace {

// Codes drawn from `levels`, FP16-exact scales (or not), offsets if asked:
// a GGUF type's group form, in groups of 32 or 16.  With super_groups, the
// parameters in two levels as the K-quants give them (group_quantized.h):
// an FP16 base per super-block times a 6-bit step per group, offsets a
// negative base times one (Q4_K's d * sc and -dmin * m).
GroupQuantized random_blocks(int64_t rows, int64_t cols, const std::vector<int>& levels, bool offsets, uint32_t seed,
                             bool f16_scales = true, int64_t super_groups = 0, int64_t group_size = 32) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, levels.size() - 1);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), offset(-0.2f, 0.2f);
  std::uniform_int_distribution<int> step(-32, 63);
  const auto stored = [&](float v) { return f16_scales ? f16_to_f32(f32_to_f16(v)) : v; };
  const auto f16 = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = group_size, q.block_int8_activations = true;
  for (int64_t i = 0; i < rows * cols; ++i) q.codes.push_back(static_cast<int8_t>(levels[pick(rng)]));
  q.super_groups = super_groups;
  for (int64_t g = 0; g < rows * cols / group_size; ++g) {
    if (super_groups == 0) {
      q.scales.push_back(stored(scale(rng)));
      if (offsets) q.offsets.push_back(stored(offset(rng)));
      continue;
    }
    if (g % super_groups == 0) {
      q.scale_bases.push_back(f16(scale(rng) / 32));
      if (offsets) q.offset_bases.push_back(-f16(std::fabs(offset(rng)) / 32));
    }
    q.scale_steps.push_back(static_cast<int8_t>(step(rng)));
    q.scales.push_back(q.scale_bases.back() * static_cast<float>(q.scale_steps.back()));
    if (offsets) {
      q.offset_steps.push_back(static_cast<int8_t>(step(rng)));
      q.offsets.push_back(q.offset_bases.back() * static_cast<float>(q.offset_steps.back()));
    }
  }
  return q;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}
const std::vector<int> kQ4_0 = range(-8, 7), kQ4_1 = range(0, 15), kQ8_0 = range(-127, 127);
const std::vector<int> kQ6_K = range(-32, 31), kQ5_0 = range(-16, 15), kQ5 = range(0, 31);  // kQ5: Q5_1's, Q5_K's
const std::vector<int> kIq4Nl = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// ggml's Q8_0 quantization of one block of 32: d = amax / 127, q =
// round-to-even(x * (1 / d)) clamped to [-127, 127] (0 for a block of
// zeros, -127 for a NaN), and the codes' sums over each half (16 values).
struct Block {
  int q[32];
  float scale;
  int sums[2];
};
Block quantize_block(const float* x) {
  Block b{};
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]);
  }
  b.scale = amax / 127.0f;
  const float inverse = b.scale == 0.0f ? 0.0f : 1.0f / b.scale;
  for (int i = 0; i < 32; ++i) {
    const float v = x[i] * inverse;
    b.q[i] = std::isnan(v) ? -127 : static_cast<int>(std::lrint(std::fmax(-127.0f, std::fmin(127.0f, v))));
    b.sums[i / 16] += b.q[i];
  }
  return b;
}

// The arithmetic's definition, over the group form itself: groups (of 32
// or 16 values) in k order, acc = fma(scale, float(d) * s, acc), then
// fma(offset, s * float(t), acc), s the block's scale and t the sum of the
// group's activation codes.
std::vector<float> expected(const std::vector<float>& x, int64_t m, const GroupQuantized& w) {
  const int64_t k = w.cols, size = w.group_size;
  std::vector<float> y(static_cast<size_t>(m * w.rows));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < w.rows; ++j) {
      float acc = 0.0f;
      for (int64_t first = 0; first < k; first += size) {
        const Block a = quantize_block(x.data() + r * k + first / 32 * 32);
        int64_t d = 0;
        for (int64_t i = first; i < first + size; ++i)
          d += int64_t{a.q[i % 32]} * w.codes[static_cast<size_t>(j * k + i)];
        const int t = size == 32 ? a.sums[0] + a.sums[1] : a.sums[first % 32 / 16];
        const auto g = static_cast<size_t>((j * k + first) / size);
        acc = std::fma(w.scales[g], static_cast<float>(d) * a.scale, acc);
        if (!w.offsets.empty()) acc = std::fma(w.offsets[g], a.scale * static_cast<float>(t), acc);
      }
      y[static_cast<size_t>(r * w.rows + j)] = acc;
    }
  }
  return y;
}

TEST(BlockInt8PackingTest, OnlyPartsThatAllAskForItInGroupsOf32Or16) {
  ThreadPool pool(1);
  const GroupQuantized q4 = random_blocks(8, 64, kQ4_0, false, 1), q8 = random_blocks(8, 64, kQ8_0, false, 2);
  EXPECT_EQ(pack_quantized_matrices({&q4}, pool).quant.codes, QuantCodes::kBlockInt4);
  EXPECT_EQ(pack_quantized_matrices({&q4, &q8}, pool).quant.codes, QuantCodes::kBlockInt8);
  GroupQuantized exact = q4;
  exact.block_int8_activations = false;
  EXPECT_EQ(pack_quantized_matrices({&q8, &exact}, pool).quant.codes, QuantCodes::kInt8);
  const GroupQuantized sixteens = random_blocks(8, 64, kQ4_0, false, 3, true, 0, 16);
  EXPECT_EQ(pack_quantized_matrices({&sixteens}, pool).quant.codes, QuantCodes::kBlockInt4);
  EXPECT_EQ(pack_quantized_matrices({&sixteens, &q8}, pool).quant.group_size, 16);
  EXPECT_EQ(pack_quantized_matrices({&sixteens, &q8}, pool).quant.codes, QuantCodes::kBlockInt8);
  // 8-bit codes whose range fits six bits once biased by the lowest's
  // magnitude are kept in six.
  struct Six {
    std::vector<int> levels;
    QuantCodes codes;
    int32_t bias;
  };
  for (const Six& six :
       {Six{kQ6_K, QuantCodes::kBlockInt6, 32}, Six{kQ5, QuantCodes::kBlockInt6, 0},
        Six{range(-33, 30), QuantCodes::kBlockInt6, 33}, Six{range(1, 63), QuantCodes::kBlockInt6, 0},
        Six{range(-32, 32), QuantCodes::kBlockInt8, 128}, Six{range(1, 64), QuantCodes::kBlockInt8, 128}}) {
    const GroupQuantized w = random_blocks(8, 512, six.levels, false, 9, true, 0, 16);
    const PackedMatrix packed = pack_quantized_matrices({&w}, pool);
    EXPECT_EQ(packed.quant.codes, six.codes) << six.levels.front() << ".." << six.levels.back();
    EXPECT_EQ(packed.quant.code_bias, six.bias) << six.levels.front() << ".." << six.levels.back();
  }
  const GroupQuantized eights = random_blocks(8, 64, kQ4_0, false, 3, true, 0, 8);
  EXPECT_EQ(pack_quantized_matrices({&eights}, pool).quant.codes, QuantCodes::kInt4);
  // Parameters in two levels (Q4_K's, Q5_K's) stay steps; beside a part
  // with one level, all become FP32.
  const GroupQuantized stepped = random_blocks(8, 512, kQ4_1, true, 4, true, 8);
  const GroupQuantized one_level = random_blocks(8, 512, kQ4_1, true, 5, false);
  const PackedMatrix alone = pack_quantized_matrices({&stepped}, pool);
  EXPECT_EQ(alone.quant.codes, QuantCodes::kBlockInt4);
  EXPECT_EQ(alone.quant.params, QuantParams::kSteps);
  const PackedMatrix mixed = pack_quantized_matrices({&stepped, &one_level}, pool);
  EXPECT_EQ(mixed.quant.codes, QuantCodes::kBlockInt4);
  EXPECT_EQ(mixed.quant.params, QuantParams::kF32);
}

// Each number at the byte (and nibble) packed_matrix.h says: block of 32 k,
// half of the panel's columns, quad of k (4-bit: its low or high nibbles),
// column, k within the quad; stored as code + code_bias (4-bit: the
// nibble's index into int4_codes; 6-bit: the number's low four bits so,
// its top two in the half's two rows after them, quad q's in row q / 4 at
// bits 2 (q % 4) and up).
TEST(BlockInt8PackingTest, NumbersSitInRowsOfFourK) {
  ThreadPool pool(1);
  for (const auto* levels : {&kQ8_0, &kQ4_0, &kIq4Nl, &kQ4_1, &kQ6_K, &kQ5}) {
    const bool offsets = levels == &kQ4_1 || levels == &kQ5;
    const GroupQuantized a = random_blocks(40, 96, *levels, offsets, 4), b = random_blocks(9, 96, *levels, offsets, 5);
    const PackedMatrix m = pack_quantized_matrices({&a, &b}, pool);
    const int bits = levels == &kQ8_0 ? 8 : levels->size() > 16 ? 6 : 4;
    ASSERT_EQ(m.quant.codes, bits == 4   ? QuantCodes::kBlockInt4
                             : bits == 6 ? QuantCodes::kBlockInt6
                                         : QuantCodes::kBlockInt8);
    EXPECT_EQ(m.quant.code_bias, bits == 8 ? 128 : -(*levels)[0] > 0 ? -(*levels)[0] : 0);
    const int64_t panel_bytes = 96 * 32 * bits / 8;
    ASSERT_EQ(m.quant.panel_code_bytes(96), panel_bytes);
    const auto* bytes = m.data.as<uint8_t>();
    for (int64_t r = 0; r < 49; ++r) {
      const GroupQuantized& part = r < 40 ? a : b;
      const int64_t row = r < 40 ? r : r - 40, p = r / 32, c = r % 32;
      for (int64_t k = 0; k < 96; ++k) {
        const int code = part.codes[static_cast<size_t>(row * 96 + k)];
        const int64_t quad = k % 32 / 4;
        if (bits == 4) {
          const int64_t at = p * panel_bytes + k / 32 * 512 + c / 16 * 256 + quad % 4 * 64 + c % 16 * 4 + k % 4;
          const int nibble = quad < 4 ? bytes[at] & 0xF : bytes[at] >> 4;
          ASSERT_EQ(m.quant.int4_codes[static_cast<size_t>(nibble)], code) << r << "," << k;
        } else if (bits == 6) {
          const int64_t half = p * panel_bytes + k / 32 * 768 + c / 16 * 384, lane = c % 16 * 4 + k % 4;
          const int64_t at = half + quad % 4 * 64 + lane;
          const int low = quad < 4 ? bytes[at] & 0xF : bytes[at] >> 4;
          const int top = bytes[half + 256 + quad / 4 * 64 + lane] >> (2 * (quad % 4)) & 3;
          ASSERT_EQ(top * 16 + low, code + m.quant.code_bias) << r << "," << k;
        } else {
          const int64_t at = p * panel_bytes + k / 32 * 1024 + c / 16 * 512 + quad * 64 + c % 16 * 4 + k % 4;
          ASSERT_EQ(bytes[at], code + 128) << r << "," << k;
        }
        const auto g = static_cast<size_t>(row * 3 + k / 32);
        const float value = offsets ? std::fma(part.scales[g], static_cast<float>(code), part.offsets[g])
                                    : part.scales[g] * static_cast<float>(code);
        ASSERT_EQ(m.at(r, k), value) << r << "," << k;
      }
    }
  }
}

// Every ISA's blocks as quantize_block gives them: a block of zeros, one
// value far past the others, a NaN, a tie at .5, values of both signs.
TEST(BlockInt8GemmTest, EveryIsaQuantizesActivationsAsGgmlQ8_0) {
  const int64_t k = 160, m = 3;
  auto x = testing::random_normal(m * k, 6);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(32 + i)] = 0.0f;  // row 0, block 1: zeros
  x[static_cast<size_t>(64)] = 1e6f;                                   // row 0, block 2: one far past
  x[static_cast<size_t>(k + 3)] = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(2 * k + i)] = i == 0 ? 127.0f : 0.5f;  // ties at .5
  for (cpu::CpuIsa isa : supported_isas()) {
    for (const int64_t group_size : {32, 16}) {  // code sums per block, or per half
      const int64_t per_block = 32 / group_size;
      std::vector<int8_t> q(static_cast<size_t>(m * k), 99);
      std::vector<float> scales(static_cast<size_t>(m * k / 32), -1.0f);
      std::vector<int32_t> sums(scales.size() * per_block, -1);
      cpu::gemm_table(isa).quantize_int8_blocks(x.data(), m, k, group_size, q.data(), scales.data(), sums.data());
      for (int64_t b = 0; b < m * k / 32; ++b) {
        const Block want = quantize_block(x.data() + b * 32);
        EXPECT_EQ(scales[static_cast<size_t>(b)], want.scale) << cpu::cpu_isa_name(isa) << " block " << b;
        for (int64_t g = 0; g < per_block; ++g) {
          const int want_sum = per_block == 1 ? want.sums[0] + want.sums[1] : want.sums[g];
          EXPECT_EQ(sums[static_cast<size_t>(b * per_block + g)], want_sum)
              << cpu::cpu_isa_name(isa) << " block " << b << " group " << g;
        }
        for (int i = 0; i < 32; ++i) {
          ASSERT_EQ(q[static_cast<size_t>(b * 32 + i)], want.q[i])
              << cpu::cpu_isa_name(isa) << " block " << b << "+" << i;
        }
      }
    }
  }
}

// Shapes on both sides of the kernels' boundaries (4-row blocks, decode's
// groups of four panels, the last panel's missing columns, AMX's tiles of 16
// rows and groups of panels), each code kind (stored in 4, 6 or 8 bits),
// with and without offsets, FP16, FP32 and two-level parameters (steps over
// super-blocks of 1, 2, 3 or 8 groups, as the width allows), groups of 32
// and of 16 (Q6_K's, Q3_K's, Q2_K's).
TEST(BlockInt8GemmTest, EveryIsaGivesTheDefinitionsBits) {
  ThreadPool pool(2);
  struct Shape {
    int64_t m, n, k;
  };
  struct Kind {
    const std::vector<int>* levels;
    bool offsets, f16, steps = false;
    int64_t group = 32;
  };
  const std::vector<int> kQ3_K = range(-4, 3), kQ2_K = range(0, 3);
  for (const Kind kind :
       {Kind{&kQ8_0, false, true}, Kind{&kQ4_0, false, true}, Kind{&kIq4Nl, false, true}, Kind{&kQ4_1, true, true},
        Kind{&kQ8_0, true, false}, Kind{&kQ4_0, false, false}, Kind{&kQ4_1, true, true, true},
        Kind{&kQ5, true, true, true}, Kind{&kQ5_0, false, true}, Kind{&kIq4Nl, false, true, true},
        Kind{&kQ6_K, false, true, true, 16}, Kind{&kQ3_K, false, true, true, 16}, Kind{&kQ2_K, true, true, true, 16},
        Kind{&kQ8_0, true, false, false, 16}}) {
    for (const Shape s : {Shape{1, 1, 32}, Shape{1, 200, 576}, Shape{1, 130, 96}, Shape{2, 45, 64}, Shape{3, 140, 320},
                          Shape{4, 97, 64}, Shape{5, 33, 128}, Shape{9, 70, 192}, Shape{16, 64, 96},
                          Shape{17, 500, 576}, Shape{40, 70, 192}}) {
      int64_t super_groups = 0;
      for (const int64_t groups : {8, 3, 2, 1}) {
        if (kind.steps && super_groups == 0 && s.k / kind.group % groups == 0) super_groups = groups;
      }
      const GroupQuantized w =
          random_blocks(s.n, s.k, *kind.levels, kind.offsets, 7, kind.f16, super_groups, kind.group);
      const PackedMatrix packed = pack_quantized_matrices({&w}, pool);
      ASSERT_TRUE(packed.block_int8());
      // Parameters in steps are stored so unless each is an FP16 number too
      // (a rare few: a step of 0, or of a power of two).
      bool f16_exact = kind.f16;
      for (const auto* params : {&w.scales, &w.offsets}) {
        for (const float v : *params) f16_exact &= f16_to_f32(f32_to_f16(v)) == v;
      }
      ASSERT_EQ(packed.quant.params, f16_exact    ? QuantParams::kF16
                                     : kind.steps ? QuantParams::kSteps
                                                  : QuantParams::kF32);
      const auto x = testing::random_normal(s.m * s.k, 8);
      const std::vector<float> want = expected(x, s.m, w);
      // Close to the product of the dequantized weights: the activations'
      // rounding is all that differs.
      std::vector<float> dense(static_cast<size_t>(s.n * s.k));
      w.dequantize_rows(0, s.n, dense.data());
      for (int64_t r = 0; r < s.m; ++r) {
        for (int64_t j = 0; j < s.n; ++j) {
          double exact = 0.0, magnitude = 0.0;
          for (int64_t i = 0; i < s.k; ++i) {
            exact += double{x[static_cast<size_t>(r * s.k + i)]} * dense[static_cast<size_t>(j * s.k + i)];
            magnitude +=
                std::fabs(double{x[static_cast<size_t>(r * s.k + i)]} * dense[static_cast<size_t>(j * s.k + i)]);
          }
          ASSERT_NEAR(want[static_cast<size_t>(r * s.n + j)], exact, 0.02 * magnitude + 1e-6);
        }
      }
      for (cpu::CpuIsa isa : supported_isas()) {
        const cpu::GemmTable& table = cpu::gemm_table(isa);
        std::vector<int8_t> q(static_cast<size_t>(s.m * s.k));
        std::vector<float> scales(static_cast<size_t>(s.m * s.k / 32));
        std::vector<int32_t> sums(static_cast<size_t>(s.m * s.k / kind.group));
        table.quantize_int8_blocks(x.data(), s.m, s.k, kind.group, q.data(), scales.data(), sums.data());
        std::vector<float> y(want.size(), -1.0f);
        table.block_int8(q.data(), scales.data(), sums.data(), s.m, packed, 0, packed.num_panels(), y.data(), s.n);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(y[i], want[i]) << cpu::cpu_isa_name(isa) << " m=" << s.m << " n=" << s.n << " k=" << s.k
                                   << " offsets=" << kind.offsets << " group=" << kind.group << " at " << i;
        }
        ASSERT_TRUE(force_cpu_isa(cpu::cpu_isa_name(isa)).is_ok());
        std::vector<float> through_linear(want.size(), -1.0f);
        linear(x.data(), s.m, packed, nullptr, through_linear.data(), pool);
        ASSERT_TRUE(force_cpu_isa("auto").is_ok());
        ASSERT_EQ(through_linear, want) << cpu::cpu_isa_name(isa) << " m=" << s.m << " n=" << s.n;
      }
    }
  }
}

}  // namespace
}  // namespace vllm::kernels
