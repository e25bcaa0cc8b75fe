#include "kernels/cpu/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"

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
  if (cpu::best_cpu_isa() >= cpu::CpuIsa::kAvx2) tables.push_back(cpu::avx2_dot_table());
  return tables;
}

class DotTest : public ::testing::TestWithParam<int64_t> {};

// Every ISA variant against a float64 dot of the same values.
TEST_P(DotTest, EveryVariantMatchesFloat64) {
  const int64_t k = GetParam();
  const auto x = random_vector(static_cast<size_t>(k), 1);
  const auto w = random_vector(static_cast<size_t>(k), 2);
  const double tol = 1e-5 * std::sqrt(static_cast<double>(k)) + 1e-6;
  for (const auto& t : supported_tables()) {
    float y = 0;
    t.f32(x.data(), 1, w.data(), 1, k, &y, 1);
    EXPECT_NEAR(y, exact_dot(x.data(), w, static_cast<size_t>(k)), tol) << t.isa_name;
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, DotTest, ::testing::Values(1, 7, 8, 31, 32, 33, 64, 576, 1000));

// Attention scores a group of query rows at once: each row of a block must
// equal, bit for bit, that row computed alone (sizes off every tile grid).
TEST(DotBlockTest, EveryVariantMatchesTheReferenceAndItsOwnSingleRows) {
  const int64_t m = 113, n = 13, k = 301;
  const auto x = random_vector(static_cast<size_t>(m * k), 8);
  const auto w = random_vector(static_cast<size_t>(n * k), 9);
  std::vector<float> ref(static_cast<size_t>(m * n));
  cpu::ref_dot_table().f32(x.data(), m, w.data(), n, k, ref.data(), n);
  for (const cpu::DotTable& t : supported_tables()) {
    std::vector<float> block(static_cast<size_t>(m * n)), row(static_cast<size_t>(n));
    t.f32(x.data(), m, w.data(), n, k, block.data(), n);
    for (int64_t r = 0; r < m; ++r) {
      t.f32(x.data() + r * k, 1, w.data(), n, k, row.data(), n);
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
