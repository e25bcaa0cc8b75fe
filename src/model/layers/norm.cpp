#include "model/layers/norm.h"

#include "kernels/kernels.h"

namespace vllm {

Result<RMSNorm> RMSNorm::load(WeightReader& weights, const std::string& name, int64_t n, double eps, Weight form) {
  RMSNorm norm;
  VLLM_ASSIGN_OR_RETURN(norm.weight_, weights.vector(name, n, WeightKind::kNorm));
  if (form == Weight::kOnePlus) {
    for (float& w : norm.weight_) w = 1.0f + w;
  }
  norm.n_ = n;
  norm.eps_ = static_cast<float>(eps);
  return norm;
}

void RMSNorm::forward(const float* x, int64_t rows, float* y, ThreadPool& pool) const {
  kernels::rms_norm(x, rows, n_, weight_.data(), eps_, y, pool);
}

void RMSNorm::add_and_forward(float* residual, const float* delta, int64_t rows, float* y, ThreadPool& pool) const {
  kernels::fused_add_rms_norm(residual, delta, rows, n_, weight_.data(), eps_, y, pool);
}

}  // namespace vllm
