#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "kernels/supported_isas.h"
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

// The panel layout `isa`'s GEMM reads for `dtype`.
PanelLayout layout_for(cpu::CpuIsa isa, DType dtype) {
  return isa == cpu::CpuIsa::kAmx && dtype == DType::kBF16 ? PanelLayout::kAmxTiles : PanelLayout::kColumns;
}

cpu::PackedGemmFn pick(const cpu::GemmTable& t, DType dtype) {
  return dtype == DType::kF32 ? t.f32 : dtype == DType::kBF16 ? t.bf16 : t.f16;
}
cpu::PackedGemmFn gemm_for(cpu::CpuIsa isa, DType dtype) { return pick(cpu::gemm_table(isa), dtype); }
cpu::PackedGemmFn reference_for(cpu::CpuIsa isa, DType dtype) { return pick(cpu::reference_gemm_table(isa), dtype); }

TEST(PackMatrixTest, EveryElementReadsBackWidened) {
  ThreadPool pool(2);
  for (DType dtype : kDTypes) {
    for (PanelLayout layout : {PanelLayout::kColumns, PanelLayout::kAmxTiles}) {
      if (layout == PanelLayout::kAmxTiles && dtype != DType::kBF16) continue;
      const Weights w(dtype, 70, 41, 1);
      const PackedMatrix packed = pack_matrix(w.tensor(), pool, layout);
      ASSERT_EQ(packed.num_panels(), 3);
      for (int64_t r = 0; r < w.rows; ++r) {
        for (int64_t c = 0; c < w.cols; ++c) {
          ASSERT_EQ(packed.at(r, c), w.wide[static_cast<size_t>(r * w.cols + c)]) << dtype_name(dtype);
        }
      }
    }
  }
}

// The AMX tile layout, element by element, as tdpbf16ps reads it: chunks of
// 32 k, each two 1 KiB tiles (columns 0-15, 16-31) of 16 rows of (k, k + 1)
// pairs; the depth past K is zero.
TEST(PackMatrixTest, AmxTilesHoldPairsOfKColumnByColumn) {
  ThreadPool pool(1);
  const Weights w(DType::kBF16, 40, 35, 2);
  const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kAmxTiles);
  ASSERT_EQ(packed.panel_elements(), size_t{64 * 32});  // K padded to 64
  const uint16_t* data = packed.data.as<uint16_t>();
  for (int64_t n = 0; n < 64; ++n) {
    for (int64_t k = 0; k < 64; ++k) {
      const int64_t panel = n / 32, c = n % 32;
      const size_t at = static_cast<size_t>(panel * 64 * 32 + (k / 32) * 1024 + (c / 16) * 512 + (k % 32) / 2 * 32 +
                                            (c % 16) * 2 + k % 2);
      const uint16_t expected = n < w.rows && k < w.cols ? w.half[static_cast<size_t>(n * w.cols + k)] : 0;
      ASSERT_EQ(data[at], expected) << "n " << n << " k " << k;
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
    const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kColumns);
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
// depth-block (512) and pair boundary.  (amx's BF16 arithmetic has no
// scalar model: the AmxGemmTest cases below.)
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
      const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kColumns);
      for (cpu::CpuIsa isa : supported_isas()) {
        if (layout_for(isa, dtype) != PanelLayout::kColumns) continue;
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
  const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kColumns);
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
  // The scalar definition of the active arithmetic, or (amx, which has none) its kernel in one call.
  cpu::PackedGemmFn reference = cpu::reference_gemm_table(cpu::active_cpu_isa()).bf16;
  if (reference == nullptr) reference = cpu::active_gemm_table().bf16;
  reference(x.data(), m, packed.data.data(), k, n, 0, packed.num_panels(), ref.data(), n);
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

// A prefill-sized batch (the threads may share its rows rather than the
// panels, and AMX then rounds the rows once for both: linear.cpp) gives
// each row the bits it gets alone, bias included.
TEST(LinearTest, LargeBatchRowsEqualTheSameRowsAlone) {
  ThreadPool pool(2);
  struct Case {
    int64_t m, n, k;
  };
  for (const Case c : {Case{200, 101, 99}, Case{150, 1300, 99}, Case{129, 64, 99}, Case{70, 96, 1100},
                       Case{160, 100, 1100}, Case{300, 2050, 40}}) {
    const int64_t k = c.k;
    const auto x = testing::random_normal(c.m * k, 11);
    const auto bias = testing::random_normal(c.n, 12);
    for (DType dtype : kDTypes) {
      const Weights w(dtype, c.n, k, 13);
      const PackedMatrix packed = pack_matrix(w.tensor(), pool);
      std::vector<float> all(static_cast<size_t>(c.m * c.n)), one(static_cast<size_t>(c.n));
      linear(x.data(), c.m, packed, bias.data(), all.data(), pool);
      for (int64_t r = 0; r < c.m; ++r) {
        linear(x.data() + r * k, 1, packed, bias.data(), one.data(), pool);
        for (int64_t j = 0; j < c.n; ++j) {
          ASSERT_EQ(one[static_cast<size_t>(j)], all[static_cast<size_t>(r * c.n + j)])
              << dtype_name(dtype) << " m " << c.m << " n " << c.n << " row " << r;
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

// A product's `then` runs once, after every panel of its y is written and
// before linear_group returns; a Linear with products alongside gives what
// each gives alone (a LoRA adapter's shrinks beside the base GEMM).
TEST(LinearTest, ProductsAlongsideALinearEqualEachAloneAndTheirThensSeeWholeOutputs) {
  ThreadPool pool(2);
  const int64_t k = 96;
  for (DType dtype : kDTypes) {
    for (const int64_t m : {1, 2, 9}) {
      const Weights base(dtype, 300, k, 50);
      const PackedMatrix base_packed = pack_matrix(base.tensor(), pool);
      const auto x = testing::random_normal(m * k, 51), bias = testing::random_normal(300, 52);
      std::vector<float> alone(static_cast<size_t>(m * 300)), together(alone.size());
      linear(x.data(), m, base_packed, bias.data(), alone.data(), pool);
      const std::vector<int64_t> rows = {16, 200, 32};
      std::vector<PackedMatrix> packed;
      std::vector<std::vector<float>> ys, seen, want;
      for (size_t i = 0; i < rows.size(); ++i) {
        packed.push_back(pack_matrix(Weights(dtype, rows[i], k, 60 + i).tensor(), pool));
        ys.emplace_back(static_cast<size_t>(m * rows[i]), -1.0f);
        want.emplace_back(ys.back().size());
        linear(x.data(), m, packed.back(), nullptr, want.back().data(), pool);
      }
      std::vector<int> calls(rows.size(), 0);
      seen.assign(rows.size(), {});
      std::vector<std::function<void()>> thens;
      for (size_t i = 0; i < rows.size(); ++i) {
        thens.emplace_back([&, i] {
          ++calls[i];
          seen[i] = ys[i];
        });
      }
      std::vector<LinearProblem> alongside;
      for (size_t i = 0; i < rows.size(); ++i) alongside.push_back({x.data(), m, &packed[i], ys[i].data(), &thens[i]});
      linear(x.data(), m, base_packed, bias.data(), together.data(), pool, alongside);
      EXPECT_EQ(together, alone) << dtype_name(dtype) << " m " << m;
      for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(calls[i], 1) << "product " << i;
        EXPECT_EQ(seen[i], want[i]) << dtype_name(dtype) << " m " << m << " product " << i << " seen by its then";
      }
    }
  }
}

// The AMX GEMM, where this CPU and its kernel offer it.
class AmxGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAmx) GTEST_SKIP() << "no AMX-BF16 on this CPU (or tiles refused)";
  }
  static void gemm(const std::vector<float>& x, int64_t m, const PackedMatrix& w, float* y) {
    gemm_for(cpu::CpuIsa::kAmx, DType::kBF16)(x.data(), m, w.data.data(), w.cols, w.rows, 0, w.num_panels(), y, w.rows);
  }
};

// One k pair per output is the one sum the hardware is known to round once:
// y = float32(x0 w0 + x1 w1) exactly (measured; the pair's products are
// exact in float64).  That pins every index of the tile layout, the column
// and row edges and the activations' rounding to BF16.
TEST_F(AmxGemmTest, OnePairOfKIsTheRoundedExactSum) {
  ThreadPool pool(1);
  for (const int64_t k : {1, 2}) {
    for (const int64_t m : {1, 5, 16, 17, 33}) {
      const int64_t n = 45;
      auto x = testing::random_normal(m * k, 30 + m);
      x[0] = 1e-39f;  // subnormal: BF16 rounding makes it zero
      const Weights w(DType::kBF16, n, k, 31);
      const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kAmxTiles);
      std::vector<float> y(static_cast<size_t>(m * n));
      gemm(x, m, packed, y.data());
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0;
          for (int64_t l = 0; l < k; ++l) {
            const float xr = x[r * k + l] == 1e-39f ? 0.0f : bf16_to_f32(f32_to_bf16(x[r * k + l]));
            exact += double{xr} * w.wide[static_cast<size_t>(j * k + l)];
          }
          ASSERT_EQ(y[static_cast<size_t>(r * n + j)], static_cast<float>(exact))
              << "m " << m << " k " << k << " row " << r << " column " << j;
        }
      }
    }
  }
}

// Longer sums against float64 over the BF16-rounded activations, within
// FP32 accumulation's error, on shapes off every tile (16 rows, 32-row
// blocks, 16-column tiles, 32-k chunks) and across passes of rows.
TEST_F(AmxGemmTest, IsTheProductOfRoundedActivations) {
  ThreadPool pool(1);
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{1, 64, 576}, Shape{3, 70, 1025}, Shape{16, 33, 64}, Shape{17, 100, 31},
                        Shape{40, 64, 300}, Shape{200, 40, 4100}}) {
    const auto x = testing::random_normal(s.m * s.k, 32);
    const Weights w(DType::kBF16, s.n, s.k, 33);
    const PackedMatrix packed = pack_matrix(w.tensor(), pool, PanelLayout::kAmxTiles);
    std::vector<float> y(static_cast<size_t>(s.m * s.n));
    gemm(x, s.m, packed, y.data());
    double worst = 0, worst_unrounded = 0;
    for (int64_t r = 0; r < s.m; ++r) {
      for (int64_t j = 0; j < s.n; ++j) {
        double rounded = 0, exact = 0, magnitude = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          const double weight = w.wide[static_cast<size_t>(j * s.k + l)];
          const double xr = bf16_to_f32(f32_to_bf16(x[r * s.k + l]));
          rounded += xr * weight;
          exact += double{x[r * s.k + l]} * weight;
          magnitude += std::abs(xr * weight);
        }
        const double got = y[static_cast<size_t>(r * s.n + j)];
        worst = std::max(worst, std::abs(got - rounded) / magnitude);
        worst_unrounded = std::max(worst_unrounded, std::abs(got - exact) / magnitude);
      }
    }
    // One FP32 rounding per chunk plus the chunk's own: far below BF16's 2^-9.
    EXPECT_LT(worst, (static_cast<double>(s.k) / 32 + 4) * 0x1p-24) << "m " << s.m << " n " << s.n << " k " << s.k;
    if (s.k > 32) {
      EXPECT_GT(worst_unrounded, 1e-4) << "the activations' rounding is really there";
    }
  }
}

// A row's result is the same bits in any batch, block position and thread
// count: the order over k never depends on m.
TEST_F(AmxGemmTest, RowResultIndependentOfBatchAndThreads) {
  ThreadPool one(1), two(2);
  const int64_t n = 70, k = 1100, rows = 70;
  const auto x = testing::random_normal(rows * k, 34);
  const Weights w(DType::kBF16, n, k, 35);
  const PackedMatrix packed = pack_matrix(w.tensor(), one, PanelLayout::kAmxTiles);
  std::vector<float> all(static_cast<size_t>(rows * n));
  gemm(x, rows, packed, all.data());
  ASSERT_TRUE(force_cpu_isa("amx").is_ok());
  for (int64_t batch : {1, 2, 3, 15, 16, 17, 31, 32, 33}) {
    for (int64_t r = 0; r + batch <= rows; r += batch) {
      std::vector<float> some(static_cast<size_t>(batch * n));
      linear(x.data() + r * k, batch, packed, nullptr, some.data(), batch % 2 == 0 ? two : one);
      for (int64_t j = 0; j < batch * n; ++j) {
        ASSERT_EQ(some[static_cast<size_t>(j)], all[static_cast<size_t>(r * n + j)]) << "batch " << batch;
      }
    }
  }
  ASSERT_TRUE(force_cpu_isa("auto").is_ok());
}

TEST(CpuIsaTest, ForcingALowerIsaWorksAndAnUnknownOneIsAnError) {
  const std::string best = cpu_isa();
  ASSERT_TRUE(force_cpu_isa("scalar").is_ok());
  EXPECT_EQ(cpu_isa(), "scalar");
  const Status bad = force_cpu_isa("avx9000");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("auto, amx, avx512_bf16, avx512, avx2 or scalar"), std::string::npos) << bad.message();
  if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAvx512) {
    EXPECT_FALSE(force_cpu_isa("avx512").is_ok());
  }
  if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAvx512Bf16) {
    EXPECT_FALSE(force_cpu_isa("avx512_bf16").is_ok());
  }
  if (cpu::supported_cpu_isa() < cpu::CpuIsa::kAmx) {
    EXPECT_FALSE(force_cpu_isa("amx").is_ok());
  }
  ASSERT_TRUE(force_cpu_isa("auto").is_ok());
  EXPECT_EQ(cpu_isa(), best);
}

}  // namespace
}  // namespace vllm::kernels
