#include "model/layers/kv_cache_scales.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace vllm {

namespace {

// `name`, where the checkpoint holds it, checked to be a usable scale.
Result<std::optional<float>> scale_if_present(WeightReader& weights, const std::string& name) {
  VLLM_ASSIGN_OR_RETURN(const std::optional<float> scale, weights.scalar_if_present(name));
  if (scale && (!std::isfinite(*scale) || *scale <= 0)) {
    return invalid_argument("tensor '" + name + "' is " + std::to_string(*scale) +
                            ", a KV cache scale must be positive and finite");
  }
  return scale;
}

}  // namespace

Result<std::optional<kernels::KVScales>> load_kv_cache_scales(WeightReader& weights, const std::string& prefix) {
  VLLM_ASSIGN_OR_RETURN(const std::optional<float> key, scale_if_present(weights, prefix + "k_scale"));
  VLLM_ASSIGN_OR_RETURN(const std::optional<float> value, scale_if_present(weights, prefix + "v_scale"));
  VLLM_ASSIGN_OR_RETURN(const std::optional<float> both, scale_if_present(weights, prefix + "kv_scale"));
  using Found = std::optional<kernels::KVScales>;
  if (key && value) return Found(kernels::KVScales{*key, *value});
  if (!key && !value && !both) return Found();
  // vLLM reads kv_scale as k_scale, and gives a lone scale to both.
  const float found = std::max({key.value_or(0.0f), value.value_or(0.0f), both.value_or(0.0f)});
  return Found(kernels::KVScales{found, found});
}

}  // namespace vllm
