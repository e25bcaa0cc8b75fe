// FP8 checkpoints (quant_method "fp8", as vLLM and transformers' FP8
// integrations write them: Qwen3-FP8, DeepSeek-V3).  quantization_config:
// activation_scheme "dynamic" or "static", fmt "e4m3" (optional),
// weight_block_size [rows, cols] (optional), ignored_layers /
// modules_to_not_convert.  Each FP8 linear layer <prefix> has
// <prefix>.weight F8_E4M3 [N, K] and, per tensor, <prefix>.weight_scale
// (one value: [] or [1]), or with weight_block_size, <prefix>.weight_scale_inv
// [ceil(N / rows), ceil(K / cols)]; w = scale * e4m3(code) (the "inverse"
// scale multiplies too).  A static scheme's <prefix>.input_scale is not
// used: FP8 weights are widened in registers and the activations stay FP32,
// as vLLM runs FP8 checkpoints on hardware without FP8 products.
#pragma once

#include <memory>
#include <string>

#include "base/json.h"
#include "model/quant/quant_method.h"

namespace vllm {

// The method from a quantization_config object (`source` names its file in errors).
Result<std::unique_ptr<QuantMethod>> make_fp8_method(const Json& quantization_config, const std::string& source);

}  // namespace vllm
