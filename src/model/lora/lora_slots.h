// The adapters one Linear serves at once: vLLM's punica idea on the CPU.
// The base GEMM runs once for every row; beside it, in the same parallel
// region, for each slot's rows gathered together, the low-rank shrink
// t = x A^T ([rows, r]) of each adapted part of a stacked Linear (q, k and v;
// gate and up; A folded: folded_shrink.h), each followed on its thread by
// its expand t (scaling B)^T;
// the deltas are added into the part's output columns once the region ends.
// A row of slot -1 (the base model) or of an empty slot is left alone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"
#include "model/lora/peft_adapter.h"

namespace vllm {

class LoraSlots {
 public:
  // Slot `slot` takes `adapter`'s packed matrices of `modules` (the
  // Linear's stacked parts, `rows` output features each, in order), or holds
  // nothing for this Linear when `adapter` is null or adapts none of them.
  void set(int32_t slot, const PeftAdapter* adapter, const std::vector<std::string>& modules,
           const std::vector<int64_t>& rows);

  // The Linear's y [num_rows, out_features] of x [num_rows, in_features]
  // with each row's adapter delta added; slots[r] is row r's slot (-1: none).
  // base_product(alongside) computes the Linear's own y = x W^T (+ b) with
  // the adapters' products `alongside` in its parallel region
  // (kernels::linear's overload), so that the Linear forks and joins once.
  using BaseProduct = std::function<void(const std::vector<kernels::LinearProblem>& alongside)>;
  void forward(const float* x, int64_t num_rows, int64_t in_features, const int32_t* slots, float* y,
               int64_t out_features, const BaseProduct& base_product) const;

  // No slot holds a part of this Linear.
  bool empty() const;

 private:
  struct Part {
    int64_t first_column = 0, columns = 0;
    int64_t rank = 0, fold = 1;
    std::shared_ptr<const kernels::PackedMatrix> a;         // [fold * rank, in_features / fold]: folded_shrink.h
    std::shared_ptr<const kernels::PackedMatrix> scaled_b;  // [columns, rank]: B times the adapter's scaling
  };
  std::vector<std::vector<Part>> parts_;  // by slot
};

}  // namespace vllm
