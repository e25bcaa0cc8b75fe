#include "model/quant/layer_source.h"

namespace vllm {

std::string QuantizedLayerSource::quantized_prefix(const std::string& name) const {
  constexpr std::string_view kWeight = ".weight";
  if (!name.ends_with(kWeight) || base_.has(name)) return "";
  const std::string prefix = name.substr(0, name.size() - kWeight.size());
  return base_.has(prefix + ".qweight") ? prefix : "";
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
