#include "kernels/cpu/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace {

std::vector<float> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

double exact_dot(const float* x, const std::vector<float>& w, size_t k) {
  double s = 0;
  for (size_t i = 0; i < k; ++i) s += static_cast<double>(x[i]) * w[i];
  return s;
}

// The reference and every ISA variant this CPU can run.
std::vector<cpu::DotTable> supported_tables() {
  std::vector<cpu::DotTable> tables = {cpu::ref_dot_table()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    tables.push_back(cpu::avx2_dot_table());
  }
  return tables;
}

class DotTest : public ::testing::TestWithParam<int64_t> {};

// Every ISA variant against a float64 dot of the same (widened) values.
TEST_P(DotTest, EveryVariantMatchesFloat64) {
  const int64_t k = GetParam();
  const auto x = random_vector(static_cast<size_t>(k), 1);
  const auto w = random_vector(static_cast<size_t>(k), 2);
  std::vector<uint16_t> w_bf16(w.size()), w_f16(w.size());
  std::vector<float> w_bf16_wide(w.size()), w_f16_wide(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w_bf16[i] = f32_to_bf16(w[i]);
    w_f16[i] = f32_to_f16(w[i]);
    w_bf16_wide[i] = bf16_to_f32(w_bf16[i]);
    w_f16_wide[i] = f16_to_f32(w_f16[i]);
  }
  const std::vector<cpu::DotTable> tables = supported_tables();
  const double tol = 1e-5 * std::sqrt(static_cast<double>(k)) + 1e-6;
  for (const auto& t : tables) {
    float y = 0;
    t.f32(x.data(), 1, w.data(), 1, k, &y, 1);
    EXPECT_NEAR(y, exact_dot(x.data(), w, static_cast<size_t>(k)), tol) << t.isa_name;
    t.bf16(x.data(), 1, w_bf16.data(), 1, k, &y, 1);
    EXPECT_NEAR(y, exact_dot(x.data(), w_bf16_wide, static_cast<size_t>(k)), tol) << t.isa_name;
    t.f16(x.data(), 1, w_f16.data(), 1, k, &y, 1);
    EXPECT_NEAR(y, exact_dot(x.data(), w_f16_wide, static_cast<size_t>(k)), tol) << t.isa_name;
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, DotTest, ::testing::Values(1, 7, 8, 31, 32, 33, 64, 576, 1000));

TEST(LinearTest, MatchesNaiveProductWithBias) {
  const int64_t m = 5, n = 67, k = 40;
  const auto x = random_vector(static_cast<size_t>(m * k), 3);
  const auto w = random_vector(static_cast<size_t>(n * k), 4);
  const auto bias = random_vector(static_cast<size_t>(n), 5);
  Tensor wt{w.data(), DType::kF32, {n, k}};
  std::vector<float> y(static_cast<size_t>(m * n));
  ThreadPool pool(2);
  linear(x.data(), m, wt, bias.data(), y.data(), pool);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias[static_cast<size_t>(j)];
      for (int64_t l = 0; l < k; ++l)
        s += static_cast<double>(x[static_cast<size_t>(i * k + l)]) * w[static_cast<size_t>(j * k + l)];
      EXPECT_NEAR(y[static_cast<size_t>(i * n + j)], s, 1e-4);
    }
  }
}

// A row's result must not depend on how many other rows are in the batch,
// for every weight dtype, with row and column counts off the micro-tile grid.
TEST(LinearTest, RowResultIndependentOfBatchSize) {
  const int64_t n = 101, k = 99, rows = 11;
  const auto x = random_vector(static_cast<size_t>(rows * k), 6);
  const auto w = random_vector(static_cast<size_t>(n * k), 7);
  std::vector<uint16_t> w_bf16(w.size()), w_f16(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w_bf16[i] = f32_to_bf16(w[i]);
    w_f16[i] = f32_to_f16(w[i]);
  }
  const std::vector<Tensor> weights = {Tensor{w.data(), DType::kF32, {n, k}},
                                       Tensor{w_bf16.data(), DType::kBF16, {n, k}},
                                       Tensor{w_f16.data(), DType::kF16, {n, k}}};
  ThreadPool pool(2);
  for (const Tensor& wt : weights) {
    std::vector<float> all(static_cast<size_t>(rows * n)), some(static_cast<size_t>(rows * n));
    linear(x.data(), rows, wt, nullptr, all.data(), pool);
    for (int64_t batch : {1, 2, 4, 5}) {
      for (int64_t r = 0; r + batch <= rows; r += batch) {
        linear(x.data() + r * k, batch, wt, nullptr, some.data(), pool);
        for (int64_t j = 0; j < batch * n; ++j) {
          ASSERT_EQ(some[static_cast<size_t>(j)], all[static_cast<size_t>(r * n + j)])
              << dtype_name(wt.dtype) << " batch " << batch;
        }
      }
    }
  }
}

// Each ISA's blocked kernels against the scalar reference on whole matrices
// (sizes off every tile and panel grid), and each row of a block equal, bit
// for bit, to that row computed alone.
TEST(LinearTest, EveryVariantMatchesTheReferenceAndItsOwnSingleRows) {
  const int64_t m = 113, n = 13, k = 301;
  const auto x = random_vector(static_cast<size_t>(m * k), 8);
  const auto w = random_vector(static_cast<size_t>(n * k), 9);
  std::vector<uint16_t> w_bf16(w.size());
  for (size_t i = 0; i < w.size(); ++i) w_bf16[i] = f32_to_bf16(w[i]);
  std::vector<float> ref(static_cast<size_t>(m * n));
  cpu::ref_dot_table().bf16(x.data(), m, w_bf16.data(), n, k, ref.data(), n);
  for (const cpu::DotTable& t : supported_tables()) {
    std::vector<float> block(static_cast<size_t>(m * n)), row(static_cast<size_t>(n));
    t.bf16(x.data(), m, w_bf16.data(), n, k, block.data(), n);
    for (int64_t r = 0; r < m; ++r) {
      t.bf16(x.data() + r * k, 1, w_bf16.data(), n, k, row.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(r * n + j);
        ASSERT_NEAR(block[i], ref[i], 1e-3) << t.isa_name << " row " << r << " col " << j;
        ASSERT_EQ(block[i], row[static_cast<size_t>(j)]) << t.isa_name << " row " << r << " col " << j;
      }
    }
  }
}

}  // namespace
}  // namespace vllm::kernels
