// A model directory's weights: model.safetensors, or the shards listed in
// model.safetensors.index.json.  All files stay mapped while this lives.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/loader/safetensors.h"

namespace vllm {

class Checkpoint {
 public:
  static Result<Checkpoint> open(const std::string& model_dir);

  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // How many of "<prefix>0.", "<prefix>1.", ... have tensors, counting up to
  // the first index that has none (e.g. the decoder layers under "model.layers.").
  int64_t count_numbered(const std::string& prefix) const;
  // The tensor or a NotFound error naming it.
  Result<Tensor> get(const std::string& name) const;
  // Where the weights come from, for error messages.
  const std::string& source() const { return source_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const Tensor*> index_;
  std::string source_;
};

}  // namespace vllm
