#include "model/arch/decoder_variant.h"

namespace vllm {

// Qwen2: biases on q, k and v (never on o).  Its sliding window only applies
// with use_sliding_window, which the config parser already folds in.
DecoderVariant qwen2_variant(const ModelConfig&) {
  DecoderVariant v;
  v.name = "Qwen2ForCausalLM";
  v.qkv_bias = true;
  v.sliding_window = true;
  return v;
}

}  // namespace vllm
