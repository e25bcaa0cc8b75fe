#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Llama: the base of the family; attention_bias puts biases on all four projections.
Result<std::unique_ptr<Model>> build_llama(const ModelConfig& config, WeightReader& weights) {
  return build_llama_family(config, weights, {.qkv_bias = config.attention_bias, .o_bias = config.attention_bias});
}

}  // namespace vllm
