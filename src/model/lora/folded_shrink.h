// A LoRA shrink t = x A^T ([rows, r]) of a small rank r reads A from panels
// kernels::kPanelWidth (32) outputs wide: rank 16 would stream as many zero
// columns as values, rank 8 three times as many.  Decode is bound by the
// bytes it reads, so A is packed folded instead: split along its input
// dimension into f = 32 / r pieces (while they divide it), stacked as the
// rows of A' [f * r, in / f].  x, read as [rows * f, in / f] (the same
// memory), times A' gives each piece of each row against every piece of A;
// t sums the f matching blocks.  The multiply-adds are those of the padded
// panel, the bytes of A are not padded.
#pragma once

#include <cstdint>
#include <vector>

namespace vllm {

// f for a rank and input width: 1 (no folding) when r fills a panel already.
int64_t shrink_fold(int64_t rank, int64_t in_features);

// A' [f * rank, in_features / f] of a [rank, in_features].
std::vector<float> fold_lora_a(const std::vector<float>& a, int64_t rank, int64_t in_features, int64_t fold);

// t [rows, rank] from x A'^T ([rows * f, f * rank]).
void unfold_shrink(const float* folded, int64_t rows, int64_t rank, int64_t fold, float* t);

}  // namespace vllm
