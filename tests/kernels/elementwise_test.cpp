#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/supported_isas.h"
#include "test_util.h"

namespace vllm::kernels {
namespace {

TEST(RmsNormTest, MatchesFormula) {
  ThreadPool pool(1);
  const std::vector<float> x = {1, -2, 3, 0.5f, 0, 4};
  const std::vector<float> w = {0.5f, 1, 2};
  std::vector<float> y(6);
  rms_norm(x.data(), 2, 3, w.data(), 1e-5f, y.data(), pool);
  for (int r = 0; r < 2; ++r) {
    double ss = 0;
    for (int i = 0; i < 3; ++i) ss += x[r * 3 + i] * x[r * 3 + i];
    const double inv = 1.0 / std::sqrt(ss / 3 + 1e-5);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[r * 3 + i], x[r * 3 + i] * inv * w[i], 1e-6);
  }
}

// torch's LayerNorm: centred, the biased variance, then weight and bias.
TEST(LayerNormTest, MatchesFormula) {
  ThreadPool pool(1);
  const std::vector<float> x = {1, -2, 3, 100.5f, 100, 104};  // the second row far from 0
  const std::vector<float> w = {0.5f, 1, 2}, b = {0.25f, -1, 0};
  std::vector<float> y(6);
  layer_norm(x.data(), 2, 3, w.data(), b.data(), 1e-5f, y.data(), pool);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 3; ++i) mean += x[r * 3 + i] / 3.0;
    for (int i = 0; i < 3; ++i) var += (x[r * 3 + i] - mean) * (x[r * 3 + i] - mean) / 3.0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(y[r * 3 + i], (x[r * 3 + i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i], 1e-5) << r << " " << i;
    }
  }
}

TEST(RopeTest, RotatesPairsHalfADimensionApart) {
  // head_dim 4: pairs (0, 2) and (1, 3).
  std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> cos = {0.0f, 1.0f};
  const std::vector<float> sin = {1.0f, 0.0f};
  ThreadPool pool(1);
  rope(x.data(), 1, 1, 4, 4, cos.data(), sin.data(), pool);
  // pair 0 rotated by 90 degrees: (1, 3) -> (-3, 1); pair 1 unchanged.
  EXPECT_FLOAT_EQ(x[0], -3);
  EXPECT_FLOAT_EQ(x[2], 1);
  EXPECT_FLOAT_EQ(x[1], 2);
  EXPECT_FLOAT_EQ(x[3], 4);
}

TEST(RopeTest, PartialRotaryTurnsTheLeadingDimensionsAndPassesTheRest) {
  // Two heads of 6, rotary_dim 4: pairs (0, 2) and (1, 3) of each head; 4 and 5 untouched.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<float> cos = {0.0f, -1.0f};
  const std::vector<float> sin = {1.0f, 0.0f};
  ThreadPool pool(1);
  rope(x.data(), 1, 2, 6, 4, cos.data(), sin.data(), pool);
  // pair 0 by 90 degrees: (a, b) -> (-b, a); pair 1 by 180: (a, b) -> (-a, -b).
  EXPECT_EQ(x, (std::vector<float>{-3, -2, 1, -4, 5, 6, -9, -8, 7, -10, 11, 12}));
}

TEST(RopeTest, InterleavedLayoutTurnsAdjacentPairs) {
  // Two heads of 6, rotary_dim 4: pairs (0, 1) and (2, 3) of each head; 4 and 5 untouched.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<float> cos = {0.0f, -1.0f};
  const std::vector<float> sin = {1.0f, 0.0f};
  ThreadPool pool(1);
  rope(x.data(), 1, 2, 6, 4, cos.data(), sin.data(), pool, RopeLayout::kInterleaved);
  // pair 0 by 90 degrees: (a, b) -> (-b, a); pair 1 by 180: (a, b) -> (-a, -b).
  EXPECT_EQ(x, (std::vector<float>{-2, 1, -3, -4, 5, 6, -8, 7, -9, -10, 11, 12}));
}

TEST(SiluAndMulTest, MatchesFormula) {
  // Two tokens, each row = gate | up.
  const std::vector<float> gate_up = {-1, 0, 2, 3, 4, 5, 0.5f, -2, 7, 1, 2, -3};
  std::vector<float> out(6);
  ThreadPool pool(1);
  silu_and_mul(gate_up.data(), 2, 3, out.data(), pool);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 3; ++i) {
      const float g = gate_up[t * 6 + i], u = gate_up[t * 6 + 3 + i];
      EXPECT_NEAR(out[t * 3 + i], g / (1 + std::exp(-g)) * u, 1e-6);
    }
  }
}

// SwiGLU and the shifted exponentials: the formula within float32 rounding,
// and every ISA the same bits as the scalar reference (lengths off every
// vector width; gates large enough that e^-gate would overflow unclamped).
TEST(ActivationsTest, MatchTheFormulaAndAgreeAcrossIsasBitForBit) {
  for (int64_t n : {1, 7, 16, 37, 1536}) {
    auto gate_up = testing::random_normal(2 * n, 21);
    for (int64_t i = 0; i < n; i += 5) gate_up[static_cast<size_t>(i)] *= 60.0f;  // some at +-100 and beyond
    std::vector<float> ref(static_cast<size_t>(n)), exps_ref(static_cast<size_t>(2 * n));
    cpu::activation_table(cpu::CpuIsa::kScalar).silu_and_mul_row(gate_up.data(), n, ref.data());
    cpu::activation_table(cpu::CpuIsa::kScalar).exp_shifted(gate_up.data(), 2 * n, 90.0f, exps_ref.data());
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate_up[static_cast<size_t>(i)], u = gate_up[static_cast<size_t>(n + i)];
      const double want = g / (1 + std::exp(-g)) * u;
      EXPECT_NEAR(ref[static_cast<size_t>(i)], want, 1e-6 * std::max(1.0, std::abs(want))) << "n " << n << " i " << i;
    }
    for (int64_t i = 0; i < 2 * n; ++i) {
      const float arg = gate_up[static_cast<size_t>(i)] - 90.0f;  // in float32, as the kernel forms it
      if (arg < -87) continue;                                    // clamped there, by contract
      const double want = std::exp(arg);
      EXPECT_NEAR(exps_ref[static_cast<size_t>(i)], want, 1e-6 * want) << "x " << gate_up[static_cast<size_t>(i)];
    }
    for (cpu::CpuIsa isa : supported_isas()) {
      std::vector<float> out(static_cast<size_t>(n)), exps(static_cast<size_t>(2 * n));
      cpu::activation_table(isa).silu_and_mul_row(gate_up.data(), n, out.data());
      cpu::activation_table(isa).exp_shifted(gate_up.data(), 2 * n, 90.0f, exps.data());
      EXPECT_EQ(out, ref) << cpu::cpu_isa_name(isa) << " n " << n;
      EXPECT_EQ(exps, exps_ref) << cpu::cpu_isa_name(isa) << " n " << n;
    }
  }
}

// GeGLU with GELU's tanh form: the formula (PyTorch's approximate="tanh") in
// float64 within float32 rounding, and the same bits on every ISA.
TEST(ActivationsTest, GeluTanhMatchesTheFormulaAndAgreesAcrossIsas) {
  for (int64_t n : {1, 7, 16, 37, 2304}) {
    auto gate_up = testing::random_normal(2 * n, 22);
    for (int64_t i = 0; i < n; i += 5) gate_up[static_cast<size_t>(i)] *= 40.0f;  // tanh saturated both ways
    std::vector<float> ref(static_cast<size_t>(n));
    cpu::activation_table(cpu::CpuIsa::kScalar).gelu_tanh_and_mul_row(gate_up.data(), n, ref.data());
    for (int64_t i = 0; i < n; ++i) {
      const double g = gate_up[static_cast<size_t>(i)], u = gate_up[static_cast<size_t>(n + i)];
      const double want = 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))) * u;
      EXPECT_NEAR(ref[static_cast<size_t>(i)], want, 2e-6 * std::max(1.0, std::abs(want))) << "n " << n << " i " << i;
    }
    for (cpu::CpuIsa isa : supported_isas()) {
      std::vector<float> out(static_cast<size_t>(n));
      cpu::activation_table(isa).gelu_tanh_and_mul_row(gate_up.data(), n, out.data());
      EXPECT_EQ(out, ref) << cpu::cpu_isa_name(isa) << " n " << n;
    }
  }
}

// The fused op is the residual add then the norm, bit for bit, and rows big
// enough to be split over threads give what one thread gives.
TEST(FusedAddRmsNormTest, EqualsAddThenNormOnOneOrTwoThreads) {
  const int64_t rows = 64, n = 576;
  const auto residual = testing::random_normal(rows * n, 1), delta = testing::random_normal(rows * n, 2),
             w = testing::random_normal(n, 3);
  ThreadPool one(1), two(2);
  std::vector<float> expected_residual = residual, expected(static_cast<size_t>(rows * n));
  for (size_t i = 0; i < expected_residual.size(); ++i) expected_residual[i] += delta[i];
  rms_norm(expected_residual.data(), rows, n, w.data(), 1e-5f, expected.data(), one);
  for (ThreadPool* pool : {&one, &two}) {
    std::vector<float> res = residual, y(static_cast<size_t>(rows * n));
    fused_add_rms_norm(res.data(), delta.data(), rows, n, w.data(), 1e-5f, y.data(), *pool);
    EXPECT_EQ(res, expected_residual);
    EXPECT_EQ(y, expected);
  }
}

TEST(FusedAddLayerNormTest, EqualsAddThenNormOnOneOrTwoThreads) {
  const int64_t rows = 64, n = 576;
  const auto residual = testing::random_normal(rows * n, 1), delta = testing::random_normal(rows * n, 2),
             w = testing::random_normal(n, 3), b = testing::random_normal(n, 4);
  ThreadPool one(1), two(2);
  std::vector<float> expected_residual = residual, expected(static_cast<size_t>(rows * n));
  for (size_t i = 0; i < expected_residual.size(); ++i) expected_residual[i] += delta[i];
  layer_norm(expected_residual.data(), rows, n, w.data(), b.data(), 1e-5f, expected.data(), one);
  for (ThreadPool* pool : {&one, &two}) {
    std::vector<float> res = residual, y(static_cast<size_t>(rows * n));
    fused_add_layer_norm(res.data(), delta.data(), rows, n, w.data(), b.data(), 1e-5f, y.data(), *pool);
    EXPECT_EQ(res, expected_residual);
    EXPECT_EQ(y, expected);
  }
}

TEST(EmbeddingTest, WidensBf16Rows) {
  const std::vector<uint16_t> table = {f32_to_bf16(1.5f), f32_to_bf16(-2), f32_to_bf16(3), f32_to_bf16(0.25f)};
  ThreadPool pool(1);
  const PackedMatrix packed = pack_matrix(Tensor{table.data(), DType::kBF16, {2, 2}}, pool);
  const int32_t ids[] = {1, 0};
  std::vector<float> out(4);
  embedding(packed, ids, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 0.25f, 1.5f, -2}));
}

}  // namespace
}  // namespace vllm::kernels
