// A model directory's weights: model.safetensors, or the shards listed in
// model.safetensors.index.json.  All files stay mapped while this lives.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/loader/safetensors.h"
#include "model/loader/weight_source.h"

namespace vllm {

class Checkpoint : public WeightSource {
 public:
  static Result<Checkpoint> open(const std::string& model_dir);

  bool has(const std::string& name) const override { return index_.count(name) != 0; }
  int64_t count_numbered(const std::string& prefix) const override;
  Result<Tensor> get(const std::string& name) const override;
  const std::string& source() const override { return source_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const Tensor*> index_;
  std::string source_;
};

}  // namespace vllm
