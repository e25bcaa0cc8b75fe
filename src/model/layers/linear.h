// The one place a weight matrix meets activations: y = x W^T + b.  Every
// architecture's projections are Linears, so that a weight format (quantized
// matrices) or a per-request delta (LoRA) hooks in here and nowhere else.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "model/layers/weight_reader.h"
#include "model/model.h"

namespace vllm {

class Linear {
 public:
  Linear() = default;

  // Checkpoint matrices [rows[i], in_features] stacked by rows into one
  // output of sum(rows) features (q, k, v read together; gate and up; or one
  // fused tensor), with biases of the same names' parts when `bias_names` is
  // not empty.
  static Result<Linear> load(WeightReader& weights, const std::vector<std::string>& names,
                             const std::vector<int64_t>& rows, int64_t in_features,
                             const std::vector<std::string>& bias_names = {});
  // Over a matrix another layer owns too (an LM head tied to the embedding table).
  static Linear shared(std::shared_ptr<const kernels::PackedMatrix> weight);

  // y: [num_rows, out_features] of x: [num_rows, in_features].
  void forward(const float* x, int64_t num_rows, float* y, ThreadPool& pool) const;

  // Several bias-free Linears' forward passes at once, as each alone gives
  // them (a mixture's experts: one parallel region for all their GEMMs).
  struct Call {
    const Linear* linear;
    const float* x;
    int64_t num_rows;
    float* y;
  };
  static void forward_group(const std::vector<Call>& calls, ThreadPool& pool);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  // For the benchmarks' limits: its multiply-adds per row and bytes read.
  void add_cost(ModelCost& cost, bool lm_head = false) const;

 private:
  std::shared_ptr<const kernels::PackedMatrix> weight_;  // [out_features, in_features]
  std::vector<float> bias_;                              // [out_features], or empty
  int64_t in_features_ = 0, out_features_ = 0;
};

}  // namespace vllm
