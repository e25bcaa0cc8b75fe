// How a checkpoint stores its quantized linear weights, as config.json's
// quantization_config (or an old AutoGPTQ quantize_config.json beside it)
// says: one QuantMethod per quant_method.  A method wraps the checkpoint as
// a WeightSource that hands each quantized linear weight over, under the
// name the architectures ask for ("<layer>.weight"), in the group form
// (WeightSource::quantized), built from the method's own tensors and
// checked against their shapes; Linear then keeps it quantized.
// Architectures never see the method.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/loader/weight_source.h"
#include "model/model_config.h"

namespace vllm {

class QuantMethod {
 public:
  virtual ~QuantMethod() = default;
  // config.json's quant_method ("gptq").
  virtual const char* name() const = 0;
  // `checkpoint`, which must outlive the result, with its quantized weights in the group form.
  virtual std::unique_ptr<WeightSource> wrap(const WeightSource& checkpoint) const = 0;
};

// The method of the checkpoint in `model_dir` that `config` describes: null
// for an unquantized one; an error naming an unknown quant_method or a
// setting the method cannot honour.  `requested` is --quantization: empty
// or "none", the checkpoint's own method, or "int8" / "fp8" for an
// unquantized one (dynamic_quantization.h); anything else is an error.
Result<std::unique_ptr<QuantMethod>> quant_method_for(const ModelConfig& config, const std::string& model_dir,
                                                      const std::string& requested = "");

}  // namespace vllm
