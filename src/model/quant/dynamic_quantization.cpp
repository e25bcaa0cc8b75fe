#include "model/quant/dynamic_int8.h"

#include <vector>

namespace vllm {
namespace {

class DynamicInt8Source : public WeightSource {
 public:
  explicit DynamicInt8Source(const WeightSource& base) : base_(base) {}

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
    return std::optional<kernels::GroupQuantized>(
        kernels::int8_rows_for_int8_activations(values.data(), t.dim(0), t.dim(1)));
  }

 private:
  const WeightSource& base_;
};

class DynamicInt8Method : public QuantMethod {
 public:
  const char* name() const override { return "int8"; }
  std::unique_ptr<WeightSource> wrap(const WeightSource& checkpoint) const override {
    return std::make_unique<DynamicInt8Source>(checkpoint);
  }
};

}  // namespace

std::unique_ptr<QuantMethod> make_dynamic_int8_method() { return std::make_unique<DynamicInt8Method>(); }

}  // namespace vllm
