// The adapters one Linear serves at once: vLLM's punica idea on the CPU.
// The base GEMM runs once for every row; then, for each slot's rows
// gathered together, the low-rank shrink t = x A^T ([rows, r]) and expand
// t (scaling B)^T, added into the output columns of each adapted part of a
// stacked Linear (q, k and v; gate and up).  A row of slot -1 (the base
// model) or of an empty slot is left alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
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

  // y [num_rows, out_features] += each row's adapter delta of x [num_rows,
  // in_features]; slots[r] is row r's slot (-1: none).
  void apply(const float* x, int64_t num_rows, int64_t in_features, const int32_t* slots, float* y,
             int64_t out_features, ThreadPool& pool) const;

  // No slot holds a part of this Linear.
  bool empty() const;

 private:
  struct Part {
    int64_t first_column = 0, columns = 0;
    std::shared_ptr<const kernels::PackedMatrix> a;         // [rank, in_features]
    std::shared_ptr<const kernels::PackedMatrix> scaled_b;  // [columns, rank]: B times the adapter's scaling
  };
  std::vector<std::vector<Part>> parts_;  // by slot
};

}  // namespace vllm
