#include "model/quant/dynamic_quantization.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vllm {
namespace {

// w [rows, cols] as FP8 E4M3 codes with one scale for the tensor.
kernels::GroupQuantized fp8_per_tensor(const std::vector<float>& w, int64_t rows, int64_t cols) {
  float amax = 0.0f;
  for (const float v : w) amax = std::max(amax, std::fabs(v));
  const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
  const float inverse = 1.0f / scale;
  kernels::GroupQuantized q;
  q.rows = rows, q.cols = cols, q.group_size = cols, q.fp8_codes = true;
  q.codes.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) q.codes[i] = static_cast<int8_t>(f32_to_e4m3(w[i] * inverse));
  q.scales.assign(static_cast<size_t>(rows), scale);
  return q;
}

class DynamicSource : public WeightSource {
 public:
  DynamicSource(const WeightSource& base, bool fp8) : base_(base), fp8_(fp8) {}

  bool has(const std::string& name) const override { return base_.has(name); }
  Result<Tensor> get(const std::string& name) const override { return base_.get(name); }
  int64_t count_numbered(const std::string& prefix) const override { return base_.count_numbered(prefix); }
  const std::string& source() const override { return base_.source(); }

  Result<std::optional<kernels::GroupQuantized>> quantized(const std::string& name) const override {
    // The token embedding and the LM head (arch/common.cpp's names) stay as
    // stored: vLLM quantizes neither, and the embedding is a table, not a product.
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight" || !base_.has(name)) {
      return std::optional<kernels::GroupQuantized>();
    }
    VLLM_ASSIGN_OR_RETURN(const Tensor t, base_.get(name));
    if (!is_float_dtype(t.dtype) || t.rank() != 2) return std::optional<kernels::GroupQuantized>();
    const std::vector<float> values = widened_values(t);
    if (fp8_) return std::optional<kernels::GroupQuantized>(fp8_per_tensor(values, t.dim(0), t.dim(1)));
    return std::optional<kernels::GroupQuantized>(
        kernels::int8_rows_for_int8_activations(values.data(), t.dim(0), t.dim(1)));
  }

 private:
  const WeightSource& base_;
  bool fp8_;
};

class DynamicMethod : public QuantMethod {
 public:
  explicit DynamicMethod(bool fp8) : fp8_(fp8) {}
  const char* name() const override { return fp8_ ? "fp8" : "int8"; }
  std::unique_ptr<WeightSource> wrap(const WeightSource& checkpoint) const override {
    return std::make_unique<DynamicSource>(checkpoint, fp8_);
  }

 private:
  bool fp8_;
};

}  // namespace

std::unique_ptr<QuantMethod> make_dynamic_method(const std::string& name) {
  if (name != "int8" && name != "fp8") return nullptr;
  return std::make_unique<DynamicMethod>(name == "fp8");
}

}  // namespace vllm
