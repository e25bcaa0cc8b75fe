#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Mistral: Llama with sliding-window attention when config.sliding_window is set.
Result<std::unique_ptr<Model>> build_mistral(const ModelConfig& config, WeightReader& weights) {
  return build_llama_family(
      config, weights, {.qkv_bias = config.attention_bias, .o_bias = config.attention_bias, .sliding_window = true});
}

}  // namespace vllm
