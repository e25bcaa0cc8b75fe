// architectures[0] -> the builder of that architecture.
#pragma once

#include <string>
#include <vector>

#include "model/arch/architectures.h"
#include "model/layers/weight_reader.h"

namespace vllm {

std::vector<std::string> supported_architectures();
// The builder, or an error listing the supported architectures.
Result<ArchitectureBuilder> architecture_builder(const std::string& architecture);

// Before anything is sized from the config: num_hidden_layers no larger
// than the layers `weights` has tensors for under `prefix` (a count stated
// wrongly, num_hidden_layers 1e9, is one clear error, not a failed allocation).
Status check_layers_present(const ModelConfig& config, const WeightSource& weights, const std::string& prefix);

// Before any weight is read: whether `group`'s ranks (null: one) can split
// the model's heads, intermediate size and vocabulary (tensor parallelism).
Status check_tensor_parallel_size(const ModelConfig& config, const Communicator* group);

// Every tensor a checkpoint of this config must hold: names, shapes and
// kinds (make-test-model writes exactly these).
Result<std::vector<WeightSpec>> model_weight_specs(const ModelConfig& config);

}  // namespace vllm
