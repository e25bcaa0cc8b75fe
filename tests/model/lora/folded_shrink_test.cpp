#include "model/lora/folded_shrink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "test_util.h"

namespace vllm {
namespace {

// A small rank is folded until it fills a panel of 32, as far as the input
// width divides; a rank that fills one already is not.
TEST(FoldedShrinkTest, FoldsASmallRankUntilItFillsAPanel) {
  EXPECT_EQ(shrink_fold(16, 576), 2);
  EXPECT_EQ(shrink_fold(8, 576), 4);
  EXPECT_EQ(shrink_fold(4, 576), 8);
  EXPECT_EQ(shrink_fold(12, 576), 2);  // 24 of 32 columns
  EXPECT_EQ(shrink_fold(32, 576), 1);
  EXPECT_EQ(shrink_fold(64, 576), 1);
  EXPECT_EQ(shrink_fold(8, 6), 2);  // 6 splits in two, not in four
  EXPECT_EQ(shrink_fold(16, 7), 1);
}

// x A'^T of the folded A, unfolded, is x A^T: the sum of each output's
// pieces, within float rounding of a straight dot product.
TEST(FoldedShrinkTest, UnfoldedProductOfTheFoldedMatrixIsTheShrink) {
  ThreadPool pool(2);
  for (const int64_t rank : {4, 8, 12, 16, 32}) {
    const int64_t in = 96, rows = 5;
    const std::vector<float> a = testing::random_normal(rank * in, 70 + rank),
                             x = testing::random_normal(rows * in, 71);
    const int64_t fold = shrink_fold(rank, in);
    const std::vector<float> folded_a = fold_lora_a(a, rank, in, fold);
    const kernels::PackedMatrix packed =
        kernels::pack_matrix(Tensor{folded_a.data(), DType::kF32, {fold * rank, in / fold}}, pool);
    std::vector<float> folded(static_cast<size_t>(rows * fold * fold * rank)), t(static_cast<size_t>(rows * rank));
    kernels::linear(x.data(), rows * fold, packed, nullptr, folded.data(), pool);
    unfold_shrink(folded.data(), rows, rank, fold, t.data());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < rank; ++j) {
        double want = 0;
        for (int64_t k = 0; k < in; ++k) want += static_cast<double>(x[i * in + k]) * a[j * in + k];
        EXPECT_NEAR(t[static_cast<size_t>(i * rank + j)], want, 1e-4 * (1 + std::fabs(want)))
            << "rank " << rank << " row " << i << " output " << j;
      }
    }
  }
}

}  // namespace
}  // namespace vllm
