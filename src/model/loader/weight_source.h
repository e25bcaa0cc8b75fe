// Where a model's tensors come from: a safetensors checkpoint today (a GGUF
// file later).  Architectures never see the format, only names and tensors.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "tensor/tensor.h"

namespace vllm {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  virtual bool has(const std::string& name) const = 0;
  // The tensor (a view into the source's memory) or a NotFound error naming it.
  virtual Result<Tensor> get(const std::string& name) const = 0;
  // How many of "<prefix>0.", "<prefix>1.", ... have tensors, counting up to
  // the first index that has none (e.g. the decoder layers under "model.layers.").
  virtual int64_t count_numbered(const std::string& prefix) const = 0;
  // Where the weights come from, for error messages (a file path).
  virtual const std::string& source() const = 0;
};

}  // namespace vllm
