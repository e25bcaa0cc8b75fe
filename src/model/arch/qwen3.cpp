#include "model/arch/architectures.h"
#include "model/arch/llama_family.h"

namespace vllm {

// Qwen3: RMSNorm over each head of q and k before RoPE; optional attention_bias.
Result<std::unique_ptr<Model>> build_qwen3(const ModelConfig& config, WeightReader& weights) {
  return build_llama_family(config, weights,
                            {.qkv_bias = config.attention_bias,
                             .o_bias = config.attention_bias,
                             .qk_norm = AttentionConfig::QKNorm::kPerHead,
                             .sliding_window = true});
}

}  // namespace vllm
