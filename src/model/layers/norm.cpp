#include "model/layers/norm.h"

#include <algorithm>

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
  if (bias_.empty()) return kernels::rms_norm(x, rows, n_, weight_.data(), eps_, y, pool);
  kernels::layer_norm(x, rows, n_, weight_.data(), bias_.data(), eps_, y, pool);
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
