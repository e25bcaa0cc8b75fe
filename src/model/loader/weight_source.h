// Where a model's tensors come from: a safetensors checkpoint or a GGUF
// file.  Architectures never see the format, only names and tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "kernels/group_quantized.h"
#include "tensor/tensor.h"

namespace vllm {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  virtual bool has(const std::string& name) const = 0;
  // The tensor (a view into the source's memory) or a NotFound error naming it.
  virtual Result<Tensor> get(const std::string& name) const = 0;
  // The tensor's group form (kernels/group_quantized.h) when the source
  // stores it quantized (a GGUF file's Q4_K matrix), else nullopt; get()
  // gives such a tensor dequantized.
  virtual Result<std::optional<kernels::GroupQuantized>> quantized(const std::string&) const {
    return std::optional<kernels::GroupQuantized>();
  }
  // How many of "<prefix>0.", "<prefix>1.", ... have tensors, counting up to
  // the first index that has none (e.g. the decoder layers under "model.layers.").
  virtual int64_t count_numbered(const std::string& prefix) const = 0;
  // Where the weights come from, for error messages (a file path).
  virtual const std::string& source() const = 0;
};

}  // namespace vllm
