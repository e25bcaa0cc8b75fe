// The normalisations before and after sub-layers, fused with the residual
// add that comes before them:
//  - RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, in the plain form or
//    Gemma's (1 + w): the weight is stored as the checkpoint has it and the
//    offset added once at load, in float32, as transformers computes it;
//  - LayerNorm, y = (x - mean(x)) / sqrt(var(x) + eps) * w + b (torch's
//    nn.LayerNorm: the biased variance).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/layers/weight_reader.h"

namespace vllm {

class Norm {
 public:
  enum class Form { kRms, kRmsOnePlus, kLayer };

  Norm() = default;
  // The module's `weight` tensor (and `bias`, for kLayer): [n] each.
  static Result<Norm> load(WeightReader& weights, const std::string& module, int64_t n, double eps,
                           Form form = Form::kRms);
  // An RMSNorm over features split across `group`'s ranks (OLMoE's q/k norm
  // over a whole projection whose heads tensor parallelism splits): this
  // rank holds `range` of the module's n features (and of its weight), and
  // the group sums each row's squares.  Where `replicas` ranks hold each
  // feature (KV heads replicated across ranks), the sum counts each once.
  static Result<Norm> load_split(WeightReader& weights, const std::string& module, int64_t n, const IndexRange& range,
                                 double eps, Communicator* group, int replicas);
  // y = x: where a layer has no norm (an EAGLE head's first layer and end).
  static Norm identity(int64_t n);

  // y = norm(x).  x, y: [rows, n] (may alias).
  void forward(const float* x, int64_t rows, float* y, ThreadPool& pool) const;
  // residual += delta, then y = norm(residual).  [rows, n] each.
  void add_and_forward(float* residual, const float* delta, int64_t rows, float* y, ThreadPool& pool) const;

  int64_t size() const { return n_; }

 private:
  std::vector<float> weight_;  // [n], the offset included
  std::vector<float> bias_;    // [n] for a LayerNorm; empty for an RMSNorm
  // A split norm's mean of squares over the group's features, this rank's
  // n_ of them: the squares' sums over `group_`, / `replicas_`, / whole_n_.
  void forward_split(const float* x, int64_t rows, float* y, ThreadPool& pool) const;

  int64_t n_ = 0;
  float eps_ = 1e-6f;
  Communicator* group_ = nullptr;  // a split norm's group, else null
  int64_t whole_n_ = 0;
  int replicas_ = 1;
  bool identity_ = false;
};

}  // namespace vllm
