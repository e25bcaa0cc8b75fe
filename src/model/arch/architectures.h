// One builder per architecture (one file each): a model from its config and
// its weights, read through `weights` (a checkpoint, or a lister of names).
#pragma once

#include <memory>

#include "model/layers/weight_reader.h"
#include "model/model.h"

namespace vllm {

using ArchitectureBuilder = Result<std::unique_ptr<Model>> (*)(const ModelConfig& config, WeightReader& weights);

Result<std::unique_ptr<Model>> build_llama(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_mistral(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_qwen2(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_qwen3(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_gemma2(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_gemma3(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_phi3(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_stablelm(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_granite(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_mixtral(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_qwen2_moe(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_qwen3_moe(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_olmoe(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_deepseek_v2(const ModelConfig& config, WeightReader& weights);
Result<std::unique_ptr<Model>> build_deepseek_v3(const ModelConfig& config, WeightReader& weights);

}  // namespace vllm
