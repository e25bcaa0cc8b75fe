#include "model/quant/layer_source.h"

#include <algorithm>
#include <cmath>

namespace vllm {

std::string QuantizedLayerSource::quantized_prefix(const std::string& name) const {
  constexpr std::string_view kWeight = ".weight";
  if (!name.ends_with(kWeight)) return "";
  const std::string prefix = name.substr(0, name.size() - kWeight.size());
  return base_.has(prefix + marker_) ? prefix : "";
}

Result<std::optional<kernels::GroupQuantized>> QuantizedLayerSource::quantized(const std::string& name) const {
  const std::string prefix = quantized_prefix(name);
  if (prefix.empty()) return std::optional<kernels::GroupQuantized>();
  VLLM_ASSIGN_OR_RETURN(kernels::GroupQuantized q, read_layer(prefix));
  return std::optional<kernels::GroupQuantized>(std::move(q));
}

Result<Tensor> QuantizedLayerSource::get(const std::string& name) const {
  const std::string prefix = quantized_prefix(name);
  if (prefix.empty()) return base_.get(name);
  auto [slot, fresh] = dequantized_.try_emplace(name);
  if (fresh) {
    VLLM_ASSIGN_OR_RETURN(const kernels::GroupQuantized q, read_layer(prefix));
    slot->second.shape = {q.rows, q.cols};
    slot->second.values.resize(static_cast<size_t>(q.rows * q.cols));
    q.dequantize_rows(0, q.rows, slot->second.values.data());
  }
  return Tensor{slot->second.values.data(), DType::kF32, slot->second.shape};
}

Result<Tensor> QuantizedLayerSource::packed_codes(const std::string& prefix, const std::string& where) const {
  VLLM_ASSIGN_OR_RETURN(const Tensor packed, base_.get(prefix + ".qweight"));
  if (packed.dtype != DType::kI32 || packed.rank() != 2) {
    return invalid_argument(where + ": qweight must be a 2-D int32 tensor");
  }
  return packed;
}

Result<float> QuantizedLayerSource::layer_scalar(const std::string& name) const {
  Result<Tensor> t = base_.get(name);
  if (!t.is_ok()) return not_found(base_.source() + ": quantized layer lacks tensor '" + name + "'");
  const bool ones = std::all_of(t->shape.begin(), t->shape.end(), [](int64_t d) { return d == 1; });
  if (!ones) {
    return invalid_argument(base_.source() + ": tensor '" + name + "' is " + shape_to_string(t->shape) +
                            ", expected one value");
  }
  VLLM_ASSIGN_OR_RETURN(const std::vector<float> value, layer_floats(name, t->shape));
  return value[0];
}

Result<int64_t> QuantizedLayerSource::layer_integer(const std::string& name) const {
  Result<Tensor> t = base_.get(name);
  if (!t.is_ok()) return not_found(base_.source() + ": quantized layer lacks tensor '" + name + "'");
  const bool ones = std::all_of(t->shape.begin(), t->shape.end(), [](int64_t d) { return d == 1; });
  if (!ones || (t->dtype != DType::kI8 && t->dtype != DType::kI32 && t->dtype != DType::kI64)) {
    return invalid_argument(base_.source() + ": tensor '" + name + "' is " + dtype_name(t->dtype) + " " +
                            shape_to_string(t->shape) + ", expected one integer (I8, I32, I64)");
  }
  switch (t->dtype) {
    case DType::kI8:
      return int64_t{t->as<int8_t>()[0]};
    case DType::kI32:
      return int64_t{t->as<int32_t>()[0]};
    default:
      return t->as<int64_t>()[0];
  }
}

Result<std::vector<float>> QuantizedLayerSource::layer_floats(const std::string& name,
                                                              const std::vector<int64_t>& shape) const {
  Result<Tensor> t = base_.get(name);
  if (!t.is_ok()) return not_found(base_.source() + ": quantized layer lacks tensor '" + name + "'");
  if (!is_float_dtype(t->dtype) || t->shape != shape) {
    return invalid_argument(base_.source() + ": tensor '" + name + "' is " + dtype_name(t->dtype) + " " +
                            shape_to_string(t->shape) + ", expected a float type (F32, BF16, F16) " +
                            shape_to_string(shape));
  }
  return widened_values(*t);
}

Result<std::vector<int64_t>> QuantizedLayerSource::weight_shape(const std::string& prefix) const {
  VLLM_ASSIGN_OR_RETURN(const Tensor weight, base_.get(prefix + ".weight"));
  if (weight.rank() != 2) {
    return invalid_argument(base_.source() + ": tensor '" + prefix + ".weight' is " + shape_to_string(weight.shape) +
                            ", expected a matrix");
  }
  return weight.shape;
}

Result<kernels::GroupQuantized> QuantizedLayerSource::fp8_layer(
    const std::string& prefix, int64_t group, const std::function<float(int64_t row, int64_t g)>& scale) const {
  VLLM_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, weight_shape(prefix));
  VLLM_ASSIGN_OR_RETURN(const Tensor weight, layer_tensor(prefix + ".weight", DType::kF8E4M3, shape));
  const int64_t n = shape[0], k_total = shape[1], groups = k_total / group;
  kernels::GroupQuantized q;
  q.rows = n, q.cols = k_total, q.group_size = group, q.fp8_codes = true;
  const auto* codes = weight.as<uint8_t>();
  for (int64_t i = 0; i < n * k_total; ++i) {
    if (e4m3_is_nan(codes[i])) {
      return invalid_argument(base_.source() + ": tensor '" + prefix + ".weight' holds an FP8 NaN at row " +
                              std::to_string(i / k_total) + ", column " + std::to_string(i % k_total));
    }
  }
  q.codes.assign(weight.as<int8_t>(), weight.as<int8_t>() + n * k_total);
  q.scales.resize(static_cast<size_t>(n * groups));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < groups; ++g) q.scales[static_cast<size_t>(r * groups + g)] = scale(r, g);
  }
  return q;
}

Result<kernels::GroupQuantized> QuantizedLayerSource::fp8_block_scaled_layer(const std::string& prefix,
                                                                             const std::string& scale_name,
                                                                             int64_t block_rows,
                                                                             int64_t block_cols) const {
  VLLM_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, weight_shape(prefix));
  const int64_t n = shape[0], k_total = shape[1];
  const int64_t rows = block_rows > 0 ? block_rows : n, cols = block_cols > 0 ? block_cols : k_total;
  if (k_total % cols != 0) {
    return invalid_argument(base_.source() + ": FP8 layer '" + prefix + "': scale blocks of " + std::to_string(cols) +
                            " columns do not divide its " + std::to_string(k_total) + " inputs");
  }
  const int64_t scale_rows = (n + rows - 1) / rows, scale_cols = k_total / cols;
  std::vector<float> scales;
  if (scale_rows == 1 && scale_cols == 1) {
    VLLM_ASSIGN_OR_RETURN(const float scale, layer_scalar(prefix + scale_name));
    scales.push_back(scale);
  } else {
    VLLM_ASSIGN_OR_RETURN(scales, layer_floats(prefix + scale_name, {scale_rows, scale_cols}));
  }
  for (const float s : scales) {
    if (!std::isfinite(s))
      return invalid_argument(base_.source() + ": tensor '" + prefix + scale_name + "' is not finite");
  }
  return fp8_layer(prefix, cols,
                   [&](int64_t r, int64_t g) { return scales[static_cast<size_t>(r / rows * scale_cols + g)]; });
}

Result<std::vector<int32_t>> QuantizedLayerSource::group_order(const int32_t* g_idx, int64_t k_total, int64_t group,
                                                               const std::string& where) {
  const int64_t groups = k_total / group;
  std::vector<int64_t> filled(static_cast<size_t>(groups), 0);
  std::vector<int32_t> order(static_cast<size_t>(k_total));
  bool in_order = true;
  for (int64_t k = 0; k < k_total; ++k) {
    const int64_t g = g_idx[k];
    const std::string puts = where + ": g_idx puts input " + std::to_string(k) + " in group " + std::to_string(g);
    if (g < 0 || g >= groups) return invalid_argument(puts + " of " + std::to_string(groups));
    if (filled[static_cast<size_t>(g)] == group) {
      return invalid_argument(puts + ", which has its " + std::to_string(group) + " inputs already");
    }
    order[static_cast<size_t>(g * group + filled[static_cast<size_t>(g)]++)] = static_cast<int32_t>(k);
    in_order &= g == k / group;
  }
  if (in_order) order.clear();
  return order;
}

Result<Tensor> QuantizedLayerSource::layer_tensor(const std::string& name, DType dtype,
                                                  const std::vector<int64_t>& shape) const {
  Result<Tensor> t = base_.get(name);
  if (!t.is_ok()) return not_found(base_.source() + ": quantized layer lacks tensor '" + name + "'");
  if (t->dtype != dtype || t->shape != shape) {
    return invalid_argument(base_.source() + ": tensor '" + name + "' is " + dtype_name(t->dtype) + " " +
                            shape_to_string(t->shape) + ", expected " + dtype_name(dtype) + " " +
                            shape_to_string(shape));
  }
  return t;
}

}  // namespace vllm
