#include "model/arch/decoder_variant.h"

namespace vllm {

// Llama: the base decoder; attention_bias puts biases on all four projections.
DecoderVariant llama_variant(const ModelConfig& config) {
  DecoderVariant v;
  v.name = "LlamaForCausalLM";
  v.qkv_bias = config.attention_bias;
  v.o_bias = config.attention_bias;
  return v;
}

}  // namespace vllm
