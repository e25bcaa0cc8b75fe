#include "model/layers/norm.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace vllm {

Result<Norm> Norm::load(WeightReader& weights, const std::string& module, int64_t n, double eps, Form form) {
  Norm norm;
  VLLM_ASSIGN_OR_RETURN(norm.weight_, weights.vector(module + ".weight", n, WeightKind::kNorm));
  if (form == Form::kRmsOnePlus) {
    for (float& w : norm.weight_) w = 1.0f + w;
  }
  if (form == Form::kLayer) {
    VLLM_ASSIGN_OR_RETURN(norm.bias_, weights.vector(module + ".bias", n, WeightKind::kBias));
  }
  norm.n_ = n;
  norm.eps_ = static_cast<float>(eps);
  return norm;
}

Result<Norm> Norm::load_split(WeightReader& weights, const std::string& module, int64_t n, const IndexRange& range,
                              double eps, Communicator* group, int replicas) {
  Norm norm;
  VLLM_ASSIGN_OR_RETURN(norm.weight_, weights.vector_shards({module + ".weight"}, {n}, WeightKind::kNorm, {range}));
  norm.n_ = range.size_of(n);
  norm.eps_ = static_cast<float>(eps);
  norm.group_ = group;
  norm.whole_n_ = n;
  norm.replicas_ = replicas;
  return norm;
}

Norm Norm::identity(int64_t n) {
  Norm norm;
  norm.n_ = n;
  norm.identity_ = true;
  return norm;
}

void Norm::forward(const float* x, int64_t rows, float* y, ThreadPool& pool) const {
  if (identity_) {
    if (x != y) std::copy(x, x + rows * n_, y);
    return;
  }
  if (group_ != nullptr) return forward_split(x, rows, y, pool);
  if (bias_.empty()) return kernels::rms_norm(x, rows, n_, weight_.data(), eps_, y, pool);
  kernels::layer_norm(x, rows, n_, weight_.data(), bias_.data(), eps_, y, pool);
}

void Norm::forward_split(const float* x, int64_t rows, float* y, ThreadPool& pool) const {
  std::vector<float> squares(static_cast<size_t>(rows));
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      double sum = 0;  // this rank's part, rounded to float32 for the group's sum
      for (int64_t i = 0; i < n_; ++i) sum += double{x[r * n_ + i]} * x[r * n_ + i];
      squares[static_cast<size_t>(r)] = static_cast<float>(sum);
    }
  });
  group_->all_reduce_sum(squares.data(), rows);
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float mean = squares[static_cast<size_t>(r)] / static_cast<float>(replicas_) / static_cast<float>(whole_n_);
      const float inv = 1.0f / std::sqrt(mean + eps_);
      for (int64_t i = 0; i < n_; ++i) y[r * n_ + i] = x[r * n_ + i] * inv * weight_[static_cast<size_t>(i)];
    }
  });
}

void Norm::add_and_forward(float* residual, const float* delta, int64_t rows, float* y, ThreadPool& pool) const {
  if (identity_) {
    for (int64_t i = 0; i < rows * n_; ++i) residual[i] += delta[i];
    return forward(residual, rows, y, pool);
  }
  if (bias_.empty()) return kernels::fused_add_rms_norm(residual, delta, rows, n_, weight_.data(), eps_, y, pool);
  kernels::fused_add_layer_norm(residual, delta, rows, n_, weight_.data(), bias_.data(), eps_, y, pool);
}

}  // namespace vllm
