#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Qwen2: biases on q, k and v (never on o).  Its sliding window only applies
// with use_sliding_window, which the config parser already folds in.
Result<std::unique_ptr<Model>> build_qwen2(const ModelConfig& config, WeightReader& weights) {
  return build_llama_family(config, weights, {.qkv_bias = true, .sliding_window = true});
}

}  // namespace vllm
