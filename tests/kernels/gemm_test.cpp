#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "test_util.h"

namespace vllm::kernels {
namespace {

// A weight matrix in one dtype: its stored values and their float32 widening.
struct Weights {
  DType dtype;
  std::vector<float> f32;
  std::vector<uint16_t> half;
  std::vector<float> wide;
  int64_t rows, cols;

  Weights(DType d, int64_t n, int64_t k, uint64_t seed)
      : dtype(d), f32(testing::random_normal(n * k, seed)), rows(n), cols(k) {
    wide = f32;
    if (d == DType::kF32) return;
    half.resize(f32.size());
    for (size_t i = 0; i < f32.size(); ++i) {
      half[i] = d == DType::kBF16 ? f32_to_bf16(f32[i]) : f32_to_f16(f32[i]);
      wide[i] = d == DType::kBF16 ? bf16_to_f32(half[i]) : f16_to_f32(half[i]);
    }
  }
  Tensor tensor() const {
    return Tensor{dtype == DType::kF32 ? static_cast<const void*>(f32.data()) : half.data(), dtype, {rows, cols}};
  }
};

const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::vector<cpu::CpuIsa> supported_isas() {
  std::vector<cpu::CpuIsa> isas;
  for (cpu::CpuIsa isa : {cpu::CpuIsa::kScalar, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512, cpu::CpuIsa::kAvx512Bf16}) {
    if (isa <= cpu::supported_cpu_isa()) isas.push_back(isa);
  }
  return isas;
}

cpu::PackedGemmFn pick(const cpu::GemmTable& t, DType dtype) {
  return dtype == DType::kF32 ? t.f32 : dtype == DType::kBF16 ? t.bf16 : t.f16;
}
cpu::PackedGemmFn gemm_for(cpu::CpuIsa isa, DType dtype) { return pick(cpu::gemm_table(isa), dtype); }
cpu::PackedGemmFn reference_for(cpu::CpuIsa isa, DType dtype) { return pick(cpu::reference_gemm_table(isa), dtype); }

TEST(PackMatrixTest, EveryElementReadsBackWidened) {
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    const Weights w(dtype, 70, 9, 1);
    const PackedMatrix packed = pack_matrix(w.tensor(), pool);
    ASSERT_EQ(packed.num_panels(), 3);
    for (int64_t r = 0; r < w.rows; ++r) {
      for (int64_t c = 0; c < w.cols; ++c) {
        ASSERT_EQ(packed.at(r, c), w.wide[static_cast<size_t>(r * w.cols + c)]) << dtype_name(dtype);
      }
    }
  }
}

// The scalar reference against a float64 product of the same widened values.
TEST(PackedGemmTest, ReferenceMatchesFloat64) {
  ThreadPool pool(1);
  const int64_t m = 3, n = 37, k = 300;
  const auto x = testing::random_normal(m * k, 2);
  for (DType dtype : kDTypes) {
    const Weights w(dtype, n, k, 3);
    const PackedMatrix packed = pack_matrix(w.tensor(), pool);
    std::vector<float> y(static_cast<size_t>(m * n));
    gemm_for(cpu::CpuIsa::kScalar, dtype)(x.data(), m, packed.data.data(), k, n, 0, packed.num_panels(), y.data(), n);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += double{x[r * k + l]} * w.wide[static_cast<size_t>(j * k + l)];
        EXPECT_NEAR(y[static_cast<size_t>(r * n + j)], s, 1e-4) << dtype_name(dtype);
      }
    }
  }
}

// gemm.h's promise: every ISA computes the same chain as its scalar
// definition (the FMA chain; for avx512_bf16's BF16 weights, the pair
// chain), bit for bit, on shapes off every tile, panel, row-block (192),
// depth-block (512) and pair boundary.
TEST(PackedGemmTest, EveryIsaEqualsItsReferenceBitForBit) {
  ThreadPool pool(1);
  struct Shape {
    int64_t m, n, k;
  };
  // (No rows at all: nothing read; rows 1 to 3 take the few-rows path on
  // AVX-512, from 4 the register tiles.)
  for (const Shape s : {Shape{0, 40, 64}, Shape{1, 1, 1}, Shape{1, 64, 576}, Shape{1, 70, 1025}, Shape{2, 33, 7},
                        Shape{2, 300, 65}, Shape{3, 200, 300}, Shape{4, 97, 64}, Shape{5, 31, 513}, Shape{6, 130, 129},
                        Shape{7, 64, 33}, Shape{13, 70, 300}, Shape{200, 40, 257}, Shape{30, 64, 1100}}) {
    auto x = testing::random_normal(s.m * s.k, 4);
    // Some activations subnormal or rounding to subnormal, where BF16 conversion flushes.
    for (size_t i = 0; i < x.size(); i += 7) x[i] *= i % 2 == 0 ? 1e-39f : 1e-37f;
    for (DType dtype : kDTypes) {
      const Weights w(dtype, s.n, s.k, 5);
      const PackedMatrix packed = pack_matrix(w.tensor(), pool);
      for (cpu::CpuIsa isa : supported_isas()) {
        std::vector<float> ref(static_cast<size_t>(s.m * s.n)), y(ref.size(), -1.0f);
        reference_for(isa, dtype)(x.data(), s.m, packed.data.data(), s.k, s.n, 0, packed.num_panels(), ref.data(), s.n);
        gemm_for(isa, dtype)(x.data(), s.m, packed.data.data(), s.k, s.n, 0, packed.num_panels(), y.data(), s.n);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_EQ(y[i], ref[i]) << cpu::cpu_isa_name(isa) << " " << dtype_name(dtype) << " m=" << s.m << " n=" << s.n
                                  << " k=" << s.k << " at " << i;
        }
      }
    }
  }
}

// The pair arithmetic's scalar definition against float64 over BF16-rounded
// activations: the same function, up to float32 accumulation.
TEST(PackedGemmTest, Bf16PairReferenceIsTheProductOfRoundedActivations) {
  ThreadPool pool(1);
  const int64_t m = 3, n = 37, k = 301;
  const auto x = testing::random_normal(m * k, 12);
  const Weights w(DType::kBF16, n, k, 13);
  const PackedMatrix packed = pack_matrix(w.tensor(), pool);
  std::vector<float> y(static_cast<size_t>(m * n));
  cpu::ref_bf16_pair_gemm()(x.data(), m, packed.data.data(), k, n, 0, packed.num_panels(), y.data(), n);
  double max_error = 0, max_error_unrounded = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double rounded = 0, exact = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double weight = w.wide[static_cast<size_t>(j * k + l)];
        rounded += double{bf16_to_f32(f32_to_bf16(x[r * k + l]))} * weight;
        exact += double{x[r * k + l]} * weight;
      }
      const double got = y[static_cast<size_t>(r * n + j)];
      max_error = std::max(max_error, std::abs(got - rounded));
      max_error_unrounded = std::max(max_error_unrounded, std::abs(got - exact));
    }
  }
  EXPECT_LT(max_error, 1e-4);
  EXPECT_GT(max_error_unrounded, 1e-3);  // the rounding is really there
}

TEST(LinearTest, AddsBiasAndMatchesTheReferenceOnTwoThreads) {
  ThreadPool one(1), two(2);
  const int64_t m = 5, n = 100, k = 40;
  const auto x = testing::random_normal(m * k, 6);
  const auto bias = testing::random_normal(n, 7);
  const Weights w(DType::kBF16, n, k, 8);
  const PackedMatrix packed = pack_matrix(w.tensor(), one);
  std::vector<float> y(static_cast<size_t>(m * n)), ref(static_cast<size_t>(m * n));
  linear(x.data(), m, packed, bias.data(), y.data(), two);
  cpu::reference_gemm_table(cpu::active_cpu_isa())
      .bf16(x.data(), m, packed.data.data(), k, n, 0, packed.num_panels(), ref.data(), n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      ASSERT_EQ(y[i], ref[i] + bias[static_cast<size_t>(j)]);
    }
  }
}

// A row's result must not depend on how many other rows are in the batch.
TEST(LinearTest, RowResultIndependentOfBatchSize) {
  ThreadPool pool(2);
  const int64_t n = 101, k = 99, rows = 11;
  const auto x = testing::random_normal(rows * k, 9);
  for (DType dtype : kDTypes) {
    const Weights w(dtype, n, k, 10);
    const PackedMatrix packed = pack_matrix(w.tensor(), pool);
    std::vector<float> all(static_cast<size_t>(rows * n)), some(static_cast<size_t>(rows * n));
    linear(x.data(), rows, packed, nullptr, all.data(), pool);
    for (int64_t batch : {1, 2, 3, 4, 5, 6, 7}) {
      for (int64_t r = 0; r + batch <= rows; r += batch) {
        linear(x.data() + r * k, batch, packed, nullptr, some.data(), pool);
        for (int64_t j = 0; j < batch * n; ++j) {
          ASSERT_EQ(some[static_cast<size_t>(j)], all[static_cast<size_t>(r * n + j)])
              << dtype_name(dtype) << " batch " << batch;
        }
      }
    }
  }
}

// Grouped products (a mixture's experts) equal each product alone, bit for bit.
TEST(LinearTest, GroupEqualsEachProductAlone) {
  ThreadPool pool(2);
  const int64_t k = 72;
  struct Case {
    int64_t m, n;
  };
  const std::vector<Case> cases = {{1, 200}, {3, 64}, {1, 33}, {7, 130}, {2, 512}};
  for (DType dtype : kDTypes) {
    std::vector<Weights> weights;
    std::vector<PackedMatrix> packed;
    std::vector<std::vector<float>> xs, alone, grouped;
    for (size_t i = 0; i < cases.size(); ++i) {
      weights.emplace_back(dtype, cases[i].n, k, 20 + i);
      packed.push_back(pack_matrix(weights.back().tensor(), pool));
      xs.push_back(testing::random_normal(cases[i].m * k, 40 + i));
      alone.emplace_back(static_cast<size_t>(cases[i].m * cases[i].n));
      grouped.emplace_back(static_cast<size_t>(cases[i].m * cases[i].n));
      linear(xs[i].data(), cases[i].m, packed[i], nullptr, alone[i].data(), pool);
    }
    std::vector<LinearProblem> problems;
    for (size_t i = 0; i < cases.size(); ++i) {
      problems.push_back({xs[i].data(), cases[i].m, &packed[i], grouped[i].data()});
    }
    linear_group(problems, pool);
    for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(grouped[i], alone[i]) << dtype_name(dtype) << " product " << i;
  }
}

TEST(CpuIsaTest, ForcingALowerIsaWorksAndAnUnknownOneIsAnError) {
  const std::string best = cpu_isa();
  ASSERT_TRUE(force_cpu_isa("scalar").is_ok());
  EXPECT_EQ(cpu_isa(), "scalar");
  const Status bad = force_cpu_isa("avx9000");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("auto, avx512_bf16, avx512, avx2 or scalar"), std::string::npos) << bad.message();
  if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAvx512) {
    EXPECT_FALSE(force_cpu_isa("avx512").is_ok());
  }
  if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAvx512Bf16) {
    EXPECT_FALSE(force_cpu_isa("avx512_bf16").is_ok());
  }
  ASSERT_TRUE(force_cpu_isa("auto").is_ok());
  EXPECT_EQ(cpu_isa(), best);
}

}  // namespace
}  // namespace vllm::kernels
