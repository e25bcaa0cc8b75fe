#include "model/lora/folded_shrink.h"

#include "kernels/packed_matrix.h"

namespace vllm {

int64_t shrink_fold(int64_t rank, int64_t in_features) {
  int64_t fold = 1;
  while (2 * fold * rank <= kernels::kPanelWidth && in_features % (2 * fold) == 0) fold *= 2;
  return fold;
}

std::vector<float> fold_lora_a(const std::vector<float>& a, int64_t rank, int64_t in_features, int64_t fold) {
  const int64_t piece = in_features / fold;
  std::vector<float> folded(a.size());
  // Row c * rank + j of A' is piece c of A's row j.
  for (int64_t c = 0; c < fold; ++c) {
    for (int64_t j = 0; j < rank; ++j) {
      for (int64_t k = 0; k < piece; ++k)
        folded[static_cast<size_t>((c * rank + j) * piece + k)] =
            a[static_cast<size_t>(j * in_features + c * piece + k)];
    }
  }
  return folded;
}

void unfold_shrink(const float* folded, int64_t rows, int64_t rank, int64_t fold, float* t) {
  // Row i * f + c of x A'^T is piece c of x's row i against every piece: its block c is the one of A's piece c.
  const int64_t width = fold * rank;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < rank; ++j) {
      float sum = 0;
      for (int64_t c = 0; c < fold; ++c) sum += folded[(i * fold + c) * width + c * rank + j];
      t[i * rank + j] = sum;
    }
  }
}

}  // namespace vllm
