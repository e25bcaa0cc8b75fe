// GPTQ checkpoints (quant_method "gptq"), as AutoGPTQ and GPTQModel write
// them and vLLM reads them.  Each quantized linear layer <prefix> has, for
// K inputs, N outputs, b bits (2, 4 or 8) and G groups of group_size inputs
// (one group of all K for group_size -1):
//   <prefix>.qweight  int32 [K * b / 32, N]: input k's code in bits
//                     b * (k % (32 / b)) of row k / (32 / b);
//   <prefix>.qzeros   int32 [G, N * b / 32]: each group's zero point, packed
//                     the same way along N, stored minus one in checkpoint
//                     format "gptq" (v1) and as it is in "gptq_v2";
//   <prefix>.scales   float16 [G, N];
//   <prefix>.g_idx    int32 [K] (optional): each input's group;
// and w[n, k] = scale[g, n] * (code[k, n] - zero[g, n]), g = g_idx[k].
#pragma once

#include <memory>
#include <string>

#include "base/json.h"
#include "model/quant/quant_method.h"

namespace vllm {

struct GptqConfig {
  int bits = 4;
  int64_t group_size = 128;  // -1: one group per row
  bool desc_act = false;
  bool zeros_minus_one = true;  // checkpoint_format "gptq" (v1); false for "gptq_v2"
};

// The method from a quantization_config object (`source` names its file in errors).
Result<std::unique_ptr<QuantMethod>> make_gptq_method(const Json& quantization_config, const std::string& source);

}  // namespace vllm
