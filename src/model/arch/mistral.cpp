#include "model/arch/decoder_variant.h"

namespace vllm {

// Mistral: Llama plus sliding-window attention when config.sliding_window is set.
DecoderVariant mistral_variant(const ModelConfig& config) {
  DecoderVariant v = llama_variant(config);
  v.name = "MistralForCausalLM";
  v.sliding_window = true;
  return v;
}

}  // namespace vllm
