#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Phi-3 (and Phi-3.5 / Phi-4-mini): q, k and v in one qkv_proj tensor, gate
// and up in one gate_up_proj, no biases; a sliding window when config.json
// sets one; LongRoPE and partial rotary come from the config.
Result<std::unique_ptr<Model>> build_phi3(const ModelConfig& config, WeightReader& weights) {
  return build_llama_family(config, weights, {.sliding_window = true, .fused_projections = true});
}

}  // namespace vllm
