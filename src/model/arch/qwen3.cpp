#include "model/arch/decoder_variant.h"

namespace vllm {

// Qwen3: RMSNorm over each head of q and k before RoPE; optional attention_bias.
DecoderVariant qwen3_variant(const ModelConfig& config) {
  DecoderVariant v;
  v.name = "Qwen3ForCausalLM";
  v.qkv_bias = config.attention_bias;
  v.o_bias = config.attention_bias;
  v.qk_norm = true;
  v.sliding_window = true;
  return v;
}

}  // namespace vllm
