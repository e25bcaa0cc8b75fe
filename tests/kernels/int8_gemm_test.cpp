// Int8 weights against int8 activations (gemm.h's int8 arithmetic,
// packed_matrix.h's kInt8Dot layout): the layout as documented, activations
// quantized as vLLM quantizes them, and every ISA's products equal to exact
// integer sums computed here in int64, through linear() too.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "test_util.h"

namespace vllm::kernels {
namespace {

GroupQuantized random_int8(int64_t rows, int64_t cols, uint32_t seed, float activation_scale = 0.0f) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-128, 127);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = cols;
  q.int8_activations = true;
  q.activation_scale = activation_scale;
  for (int64_t i = 0; i < rows * cols; ++i) q.codes.push_back(static_cast<int8_t>(code(rng)));
  for (int64_t r = 0; r < rows; ++r) q.scales.push_back(scale(rng));
  return q;
}

// vLLM's int8 quantization of one activation row: q = round-to-even(x * 127
// / amax) (dynamic) or round-to-even(x / scale) (static), clamped to int8.
struct QuantizedRow {
  std::vector<int> q;
  float scale = 0.0f;
};
QuantizedRow quantize_row(const float* x, int64_t k, float static_scale) {
  QuantizedRow row;
  float amax = 0.0f;
  for (int64_t i = 0; i < k; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]);
  }
  row.scale = static_scale != 0.0f ? static_scale : amax / 127.0f;
  const float multiplier = amax == 0.0f ? 0.0f : 127.0f / amax;
  for (int64_t i = 0; i < k; ++i) {
    const float v = static_scale != 0.0f ? x[i] / static_scale : x[i] * multiplier;
    const long rounded = std::isnan(v) ? -128 : std::lrint(std::fmax(-128.0f, std::fmin(127.0f, v)));
    row.q.push_back(static_cast<int>(rounded));
  }
  return row;
}

// vLLM's asymmetric (azp) quantization of one row, with 0 in the dynamic
// range (gemm.h): q = clamp(round(x / s) + zp) under a static scale and
// zero point, else s = (max - min) / 255, zp = round(-128 - min / s), q =
// clamp(round(x * (1 / s)) + zp); a row of zeros all zeros.
struct AsymmetricRow {
  std::vector<int> q;
  float scale = 0.0f;
  int zero_point = 0;
};
AsymmetricRow quantize_row_asymmetric(const float* x, int64_t k, float static_scale, int static_zero_point) {
  AsymmetricRow row;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < k; ++i) lo = std::fmin(lo, x[i]), hi = std::fmax(hi, x[i]);
  if (static_scale == 0.0f && hi == lo) {
    row.q.assign(static_cast<size_t>(k), 0);
    return row;
  }
  row.scale = static_scale != 0.0f ? static_scale : (hi - lo) / 255.0f;
  row.zero_point = static_scale != 0.0f ? static_zero_point : static_cast<int>(std::lrint(-128.0f - lo / row.scale));
  const float inverse = 1.0f / row.scale;
  for (int64_t i = 0; i < k; ++i) {
    const float v = static_scale != 0.0f ? x[i] / static_scale : x[i] * inverse;
    const long q = std::isnan(v) ? -128 : std::lrint(std::fmax(-1e9f, std::fmin(1e9f, v))) + row.zero_point;
    row.q.push_back(static_cast<int>(std::clamp<long>(q, -128, 127)));
  }
  return row;
}

// y = s_row * (s_j * float(sum q * code)), the sum exact.
std::vector<float> expected_products(const std::vector<float>& x, int64_t m,
                                     const std::vector<const GroupQuantized*>& parts, float static_scale) {
  const int64_t k = parts[0]->cols;
  std::vector<float> y;
  for (int64_t r = 0; r < m; ++r) {
    const QuantizedRow row = quantize_row(x.data() + r * k, k, static_scale);
    for (const GroupQuantized* p : parts) {
      for (int64_t j = 0; j < p->rows; ++j) {
        int64_t sum = 0;
        for (int64_t i = 0; i < k; ++i)
          sum += int64_t{row.q[static_cast<size_t>(i)]} * p->codes[static_cast<size_t>(j * k + i)];
        y.push_back(row.scale * (p->scales[static_cast<size_t>(j)] * static_cast<float>(sum)));
      }
    }
  }
  return y;
}

// Each code at the byte packed_matrix.h says: chunk of 64 k, half of the
// panel's columns, quad of k, column, k within the quad; and each column's
// code sum after its scale.
TEST(Int8DotPackingTest, CodesSitInTileRowsOfFourK) {
  ThreadPool pool(2);
  const GroupQuantized a = random_int8(40, 200, 1), b = random_int8(9, 200, 2);
  const PackedMatrix m = pack_int8_dot_matrices({&a, &b}, pool);
  ASSERT_EQ(m.quant.codes, QuantCodes::kInt8Dot);
  ASSERT_EQ(m.rows, 49);
  const int64_t depth = 256, panel_bytes = depth * 32;
  EXPECT_EQ(m.quant.panel_code_bytes(200), panel_bytes);
  const auto* bytes = m.data.as<int8_t>();
  for (int64_t r = 0; r < 49; ++r) {
    const GroupQuantized& part = r < 40 ? a : b;
    const int64_t row = r < 40 ? r : r - 40, p = r / 32, c = r % 32;
    int32_t sum = 0;
    for (int64_t k = 0; k < 200; ++k) {
      const int64_t at = p * panel_bytes + (k / 64) * 2048 + (c / 16) * 1024 + (k % 64 / 4) * 64 + (c % 16) * 4 + k % 4;
      const int8_t code = part.codes[static_cast<size_t>(row * 200 + k)];
      ASSERT_EQ(bytes[at], code) << r << "," << k;
      ASSERT_EQ(m.at(r, k), part.scales[static_cast<size_t>(row)] * static_cast<float>(code));
      sum += code;
    }
    for (int64_t k = 200; k < depth; ++k) {  // padding
      ASSERT_EQ(bytes[p * panel_bytes + (k / 64) * 2048 + (c / 16) * 1024 + (k % 64 / 4) * 64 + (c % 16) * 4 + k % 4],
                0);
    }
    EXPECT_EQ(int8_dot_scales(m, p)[c], part.scales[static_cast<size_t>(row)]);
    EXPECT_EQ(int8_dot_code_sums(m, p)[c], sum);
  }
}

TEST(Int8DotPackingTest, StackedPartsTakeTheLargestStaticScale) {
  ThreadPool pool(1);
  const GroupQuantized a = random_int8(8, 64, 1, 0.25f), b = random_int8(8, 64, 2, 0.5f), c = random_int8(8, 64, 3);
  EXPECT_EQ(pack_int8_dot_matrices({&a, &b}, pool).quant.activation_scale, 0.5f);
  EXPECT_DEATH(pack_int8_dot_matrices({&a, &c}, pool), "quantize their activations differently");
}

// Every ISA's rows as quantize_row gives them: dynamic and static, odd
// depths, a row of zeros, a value far past the others (past int8 under a
// static scale), a NaN, a tie at .5.
TEST(Int8GemmTest, EveryIsaQuantizesActivationsAsVllm) {
  for (const int64_t k : {1, 15, 64, 100, 577}) {
    for (const float static_scale : {0.0f, 0.01f}) {
      auto x = testing::random_normal(4 * k, 3);
      for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(k + i)] = 0.0f;  // row 1: zeros
      x[static_cast<size_t>(2 * k)] = 1e6f;                                  // row 2: beyond int8
      if (k > 2) {
        x[static_cast<size_t>(3 * k)] = std::numeric_limits<float>::quiet_NaN();  // row 3: NaN, a tie
        x[static_cast<size_t>(3 * k + 1)] = 0.5f * (static_scale != 0.0f ? static_scale : 0.0f);
      }
      const int64_t depth = int8_dot_depth(k);
      for (cpu::CpuIsa isa : supported_isas()) {
        std::vector<uint8_t> q(static_cast<size_t>(4 * depth), 7);
        std::vector<float> scales(4, -1.0f);
        cpu::gemm_table(isa).quantize_int8_rows(x.data(), 4, k, static_scale, q.data(), scales.data());
        for (int64_t r = 0; r < 4; ++r) {
          const QuantizedRow want = quantize_row(x.data() + r * k, k, static_scale);
          EXPECT_EQ(scales[static_cast<size_t>(r)], want.scale) << cpu::cpu_isa_name(isa) << " row " << r;
          for (int64_t i = 0; i < depth; ++i) {
            const int expect = i < k ? want.q[static_cast<size_t>(i)] + 128 : 128;
            ASSERT_EQ(q[static_cast<size_t>(r * depth + i)], expect)
                << cpu::cpu_isa_name(isa) << " k=" << k << " static=" << static_scale << " row " << r << " at " << i;
          }
        }
      }
    }
  }
}

// Shapes on both sides of each kernel's boundaries: VNNI's 4-row blocks and
// 4-panel decode groups, AMX's 16-row tiles and 32-row blocks, chunks of 64 k.
TEST(Int8GemmTest, EveryIsaGivesTheExactIntegerProducts) {
  ThreadPool pool(1);
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 64}, Shape{1, 130, 96}, Shape{1, 200, 576}, Shape{2, 45, 64}, Shape{3, 140, 320},
                        Shape{4, 97, 64}, Shape{5, 33, 130}, Shape{15, 70, 192}, Shape{16, 64, 256},
                        Shape{17, 40, 1100}, Shape{33, 96, 128}, Shape{70, 50, 576}}) {
    const GroupQuantized q = random_int8(s.n, s.k, 5);
    const PackedMatrix packed = pack_int8_dot_matrices({&q}, pool);
    const auto x = testing::random_normal(s.m * s.k, 4);
    const std::vector<float> want = expected_products(x, s.m, {&q}, 0.0f);
    for (cpu::CpuIsa isa : supported_isas()) {
      const cpu::GemmTable& table = cpu::gemm_table(isa);
      std::vector<uint8_t> a(static_cast<size_t>(s.m * int8_dot_depth(s.k)));
      std::vector<float> row_scales(static_cast<size_t>(s.m));
      table.quantize_int8_rows(x.data(), s.m, s.k, 0.0f, a.data(), row_scales.data());
      std::vector<float> y(want.size(), -1.0f);
      table.int8(a.data(), row_scales.data(), nullptr, s.m, packed, 0, packed.num_panels(), y.data(), s.n);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_EQ(y[i], want[i]) << cpu::cpu_isa_name(isa) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at "
                                 << i;
      }
    }
  }
}

// Asymmetric activations: every ISA's rows as quantize_row_asymmetric gives
// them (dynamic: mixed signs, one sign, zeros, a NaN; static: a zero point,
// values past int8), and every ISA's products y = s_row * (s_j *
// float(sum (q - zp) * code)) exactly, at shapes across the kernels' blocks.
TEST(Int8GemmTest, AsymmetricActivationsOnEveryIsa) {
  ThreadPool pool(1);
  for (const auto& [static_scale, static_zero_point] : {std::pair{0.0f, 0}, std::pair{0.02f, -37}}) {
    constexpr int64_t k = 200;
    auto x = testing::random_normal(5 * k, 21);
    for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(k + i)] = std::fabs(x[static_cast<size_t>(k + i)]) + 3.0f;
    for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(2 * k + i)] = 0.0f;
    x[static_cast<size_t>(3 * k + 5)] = 1e6f;
    x[static_cast<size_t>(4 * k + 9)] = std::numeric_limits<float>::quiet_NaN();
    const int64_t depth = int8_dot_depth(k);
    std::vector<uint8_t> q(static_cast<size_t>(5 * depth), 7);
    std::vector<float> scales(5, -1.0f);
    std::vector<int32_t> zero_points(5, 99);
    cpu::quantize_int8_rows_asymmetric(x.data(), 5, k, static_scale, static_zero_point, q.data(), scales.data(),
                                       zero_points.data());
    for (int64_t r = 0; r < 4; ++r) {  // row 4's NaN spoils its range; its codes are checked below
      const AsymmetricRow want = quantize_row_asymmetric(x.data() + r * k, k, static_scale, static_zero_point);
      EXPECT_EQ(scales[static_cast<size_t>(r)], want.scale) << "row " << r;
      EXPECT_EQ(zero_points[static_cast<size_t>(r)], want.zero_point) << "row " << r;
      for (int64_t i = 0; i < depth; ++i) {
        ASSERT_EQ(q[static_cast<size_t>(r * depth + i)], i < k ? want.q[static_cast<size_t>(i)] + 128 : 128)
            << "static=" << static_scale << " row " << r << " at " << i;
      }
    }
    if (static_scale != 0.0f) {
      EXPECT_EQ(q[static_cast<size_t>(3 * depth + 5)], 255);  // 1e6 / 0.02 - 37 clamped to 127
      EXPECT_EQ(q[static_cast<size_t>(4 * depth + 9)], 0);    // NaN: -128
    }
  }
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s :
       {Shape{1, 130, 96}, Shape{3, 140, 320}, Shape{5, 33, 130}, Shape{17, 40, 1100}, Shape{33, 96, 128}}) {
    const GroupQuantized w = random_int8(s.n, s.k, 22);
    const PackedMatrix packed = pack_int8_dot_matrices({&w}, pool);
    auto x = testing::random_normal(s.m * s.k, 23);
    for (int64_t i = 0; i < s.k; ++i) x[static_cast<size_t>(i)] = 0.5f * x[static_cast<size_t>(i)] + 1.0f;  // skewed
    const int64_t depth = int8_dot_depth(s.k);
    std::vector<uint8_t> a(static_cast<size_t>(s.m * depth));
    std::vector<float> row_scales(static_cast<size_t>(s.m));
    std::vector<int32_t> zero_points(static_cast<size_t>(s.m));
    cpu::quantize_int8_rows_asymmetric(x.data(), s.m, s.k, 0.0f, 0, a.data(), row_scales.data(), zero_points.data());
    std::vector<float> want;
    for (int64_t r = 0; r < s.m; ++r) {
      const AsymmetricRow row = quantize_row_asymmetric(x.data() + r * s.k, s.k, 0.0f, 0);
      for (int64_t j = 0; j < s.n; ++j) {
        int64_t sum = 0;
        for (int64_t i = 0; i < s.k; ++i) {
          sum += int64_t{row.q[static_cast<size_t>(i)] - row.zero_point} * w.codes[static_cast<size_t>(j * s.k + i)];
        }
        want.push_back(row.scale * (w.scales[static_cast<size_t>(j)] * static_cast<float>(sum)));
      }
    }
    ASSERT_NE(zero_points[0], 0);  // the skewed row has a zero point
    for (cpu::CpuIsa isa : supported_isas()) {
      std::vector<float> y(want.size(), -1.0f);
      cpu::gemm_table(isa).int8(a.data(), row_scales.data(), zero_points.data(), s.m, packed, 0, packed.num_panels(),
                                y.data(), s.n);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_EQ(y[i], want[i]) << cpu::cpu_isa_name(isa) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at "
                                 << i;
      }
    }
  }
}

// Through linear() on the ISA in use: stacked parts, a static scale or
// none, a bias, panels and (at 200 rows) rows shared by two threads; a
// sub-range of panels leaves the rest of y alone.
TEST(Int8GemmTest, LinearOnTwoThreadsGivesTheExactProducts) {
  ThreadPool pool(2);
  for (const float static_scale : {0.0f, 0.02f}) {
    const GroupQuantized a = random_int8(100, 160, 11, static_scale), b = random_int8(60, 160, 12, static_scale);
    const PackedMatrix packed = pack_int8_dot_matrices({&a, &b}, pool);
    const auto bias = testing::random_normal(160, 13);
    for (int64_t m : {1, 2, 5, 40, 200}) {
      const auto x = testing::random_normal(m * 160, 14);
      std::vector<float> want = expected_products(x, m, {&a, &b}, static_scale);
      for (int64_t i = 0; i < m * 160; ++i) want[static_cast<size_t>(i)] += bias[static_cast<size_t>(i % 160)];
      std::vector<float> y(want.size());
      linear(x.data(), m, packed, bias.data(), y.data(), pool);
      ASSERT_EQ(y, want) << "m=" << m << " static=" << static_scale;
    }
  }
  const GroupQuantized a = random_int8(160, 128, 15);
  const PackedMatrix packed = pack_int8_dot_matrices({&a}, pool);
  const auto x = testing::random_normal(128, 16);
  const std::vector<float> want = expected_products(x, 1, {&a}, 0.0f);
  std::vector<uint8_t> q(128);
  float row_scale = 0;
  cpu::active_gemm_table().quantize_int8_rows(x.data(), 1, 128, 0.0f, q.data(), &row_scale);
  std::vector<float> y(160, 7.0f);
  cpu::active_gemm_table().int8(q.data(), &row_scale, nullptr, 1, packed, 1, 3, y.data(), 160);
  for (size_t j = 0; j < 160; ++j) EXPECT_EQ(y[j], j >= 32 && j < 96 ? want[j] : 7.0f) << j;
}

}  // namespace
}  // namespace vllm::kernels
