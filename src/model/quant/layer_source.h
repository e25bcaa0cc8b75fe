// What the quantization methods share whose layers are stored as tensors
// "<prefix>.<something>" beside or instead of "<prefix>.weight" (GPTQ and
// AWQ's qweight, compressed-tensors' weight_scale): a WeightSource over the
// checkpoint in which "<prefix>.weight" is such a layer, given in the group
// form (or dequantized, for a layer that stacks it with a dense one), and
// the group form of integer codes with per-group scales and zero points.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/group_quantized.h"
#include "model/loader/weight_source.h"
#include "model/quant/quant_method.h"

namespace vllm {

class QuantizedLayerSource : public WeightSource {
 public:
  // A layer is quantized where the checkpoint holds "<prefix>" + marker.
  QuantizedLayerSource(const WeightSource& base, std::string marker) : base_(base), marker_(std::move(marker)) {}

  bool has(const std::string& name) const override { return base_.has(name) || !quantized_prefix(name).empty(); }
  int64_t count_numbered(const std::string& prefix) const override { return base_.count_numbered(prefix); }
  const std::string& source() const override { return base_.source(); }
  Result<std::optional<kernels::GroupQuantized>> quantized(const std::string& name) const override;
  // A quantized layer dequantized to F32, kept while the source lives.
  Result<Tensor> get(const std::string& name) const override;

 protected:
  // The layer whose tensors start with `prefix`, checked.
  virtual Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const = 0;
  // The layer's "<prefix>.qweight", checked to be a 2-D int32 tensor.
  Result<Tensor> packed_codes(const std::string& prefix, const std::string& where) const;
  // `name`, which a layer must have, of that dtype and shape.
  Result<Tensor> layer_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape) const;
  // `name`, which a layer must have: one float value, whatever its shape of
  // ones ([1] as compressed-tensors writes it, a 0-d tensor as others do).
  Result<float> layer_scalar(const std::string& name) const;
  // The same for an integer (I8, I32 or I64) value: a zero point.
  Result<int64_t> layer_integer(const std::string& name) const;
  // `name`, which a layer must have, of that shape and a float dtype (F32, BF16, F16), widened.
  Result<std::vector<float>> layer_floats(const std::string& name, const std::vector<int64_t>& shape) const;
  // The columns of k_total inputs in the order of their groups (each
  // group's in input order) for g_idx, each input's group (act-order, whose
  // groups are scattered over the inputs), or empty when they already are;
  // an error unless every group has `group` inputs.
  // An FP8 layer: <prefix>.weight, F8_E4M3 [N, K] (no NaN codes), whose
  // value at (r, k) is scale(r, k / group) * e4m3(code); `scales` holds
  // N * K / group values (group divides K).
  Result<kernels::GroupQuantized> fp8_layer(const std::string& prefix, int64_t group,
                                            const std::function<float(int64_t row, int64_t g)>& scale) const;
  // An FP8 layer scaled per block of block_rows x block_cols values by
  // `scale_name` [ceil(N / block_rows), ceil(K / block_cols)] (block_cols
  // dividing K); 0 for either means the whole dimension, and one scale for
  // the tensor may have the shape `tensor_scale_shape` ([1], or [] too).
  Result<kernels::GroupQuantized> fp8_block_scaled_layer(const std::string& prefix, const std::string& scale_name,
                                                         int64_t block_rows, int64_t block_cols) const;
  // <prefix>.weight's shape, which must be a 2-D tensor.
  Result<std::vector<int64_t>> weight_shape(const std::string& prefix) const;
  static Result<std::vector<int32_t>> group_order(const int32_t* g_idx, int64_t k_total, int64_t group,
                                                  const std::string& where);

  const WeightSource& base_;

 private:
  std::string marker_;
  struct Dense {
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  // "<prefix>" of a "<prefix>.weight" the checkpoint holds as "<prefix>.qweight" and companions, else "".
  std::string quantized_prefix(const std::string& name) const;

  mutable std::map<std::string, Dense> dequantized_;
};

// The QuantMethod `name` whose wrapper is a Source(checkpoint, settings).
template <typename Source, typename Settings>
class LayerSourceMethod : public QuantMethod {
 public:
  LayerSourceMethod(const char* name, Settings settings) : name_(name), settings_(std::move(settings)) {}
  const char* name() const override { return name_; }
  std::unique_ptr<WeightSource> wrap(const WeightSource& checkpoint) const override {
    return std::make_unique<Source>(checkpoint, settings_);
  }

 private:
  const char* name_;
  Settings settings_;
};

// The group form of w[n, k] = scale(g, n) * (code(k, n) - zero(g, n)), g =
// k / group, for b-bit codes and zero points: both are centred on 2^(b-1),
// so that 8-bit ones fit int8, and the offset is -scale * zero (both
// products exact in FP32, so the fma gives the formula's bits).
template <typename Code, typename Zero, typename Scale>
kernels::GroupQuantized group_form(int64_t inputs, int64_t outputs, int64_t group, int bits, Code code, Zero zero,
                                   Scale scale) {
  const int centre = 1 << (bits - 1);
  const int64_t groups = inputs / group;
  kernels::GroupQuantized q;
  q.rows = outputs, q.cols = inputs, q.group_size = group;
  q.codes.resize(static_cast<size_t>(outputs * inputs));
  q.scales.resize(static_cast<size_t>(outputs * groups));
  q.offsets.resize(q.scales.size());
  for (int64_t n = 0; n < outputs; ++n) {
    for (int64_t k = 0; k < inputs; ++k)
      q.codes[static_cast<size_t>(n * inputs + k)] = static_cast<int8_t>(code(k, n) - centre);
    for (int64_t g = 0; g < groups; ++g) {
      const float s = scale(g, n);
      q.scales[static_cast<size_t>(n * groups + g)] = s;
      q.offsets[static_cast<size_t>(n * groups + g)] = -(s * static_cast<float>(zero(g, n) - centre));
    }
  }
  return q;
}

// The `bits`-wide field `index` of a row of int32 words, 32 / bits fields a
// word from its low bits (slot: the field's place within its word).
inline int packed_field(const int32_t* words, int bits, int64_t word, int slot) {
  return static_cast<int>((static_cast<uint32_t>(words[word]) >> (bits * slot)) & ((1u << bits) - 1u));
}

}  // namespace vllm
