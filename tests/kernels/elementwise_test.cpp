#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/kernels.h"
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

TEST(RopeTest, RotatesPairsHalfADimensionApart) {
  // head_dim 4: pairs (0, 2) and (1, 3).
  std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> cos = {0.0f, 1.0f};
  const std::vector<float> sin = {1.0f, 0.0f};
  ThreadPool pool(1);
  rope(x.data(), 1, 1, 4, cos.data(), sin.data(), pool);
  // pair 0 rotated by 90 degrees: (1, 3) -> (-3, 1); pair 1 unchanged.
  EXPECT_FLOAT_EQ(x[0], -3);
  EXPECT_FLOAT_EQ(x[2], 1);
  EXPECT_FLOAT_EQ(x[1], 2);
  EXPECT_FLOAT_EQ(x[3], 4);
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
