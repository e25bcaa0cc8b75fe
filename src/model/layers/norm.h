// RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, in the plain form or Gemma's
// (1 + w): the weight is stored as the checkpoint has it and the offset
// added once at load, in float32, as transformers computes it.  Fused with
// the residual add that comes before it.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/layers/weight_reader.h"

namespace vllm {

class RMSNorm {
 public:
  enum class Weight { kPlain, kOnePlus };

  RMSNorm() = default;
  static Result<RMSNorm> load(WeightReader& weights, const std::string& name, int64_t n, double eps,
                              Weight form = Weight::kPlain);

  // y = norm(x).  x, y: [rows, n] (may alias).
  void forward(const float* x, int64_t rows, float* y, ThreadPool& pool) const;
  // residual += delta, then y = norm(residual).  [rows, n] each.
  void add_and_forward(float* residual, const float* delta, int64_t rows, float* y, ThreadPool& pool) const;

  int64_t size() const { return n_; }

 private:
  std::vector<float> weight_;  // [n], the offset included
  int64_t n_ = 0;
  float eps_ = 1e-6f;
};

}  // namespace vllm
