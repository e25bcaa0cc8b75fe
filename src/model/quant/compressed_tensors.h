// compressed-tensors checkpoints (quant_method "compressed-tensors"), as
// llm-compressor writes them and vLLM reads them.  quantization_config's
// config_groups each give a scheme (weights; input_activations, or null
// for weight-only) to the linear layers their `targets` name ("Linear" for
// all, a layer name, or "re:" and a regular expression matched from the
// name's start), except those `ignore` names the same way; each group's
// `format` (else the config's) says how its layers are stored.  For a layer
// <prefix> of N outputs and K inputs:
//   int-quantized (W8A8):  <prefix>.weight int8 [N, K] and
//     <prefix>.weight_scale [N, 1] (strategy "channel") or [1] ("tensor"),
//     symmetric: w = scale * code; with input_activations, int8 activations
//     per token (dynamic) or with <prefix>.input_scale [1] (static,
//     strategy "tensor"), symmetric or with zero points (asymmetric: per
//     token, or <prefix>.input_zero_point int8 [1] if static), computed in
//     int8 (gemm.h's int8 arithmetic);
//   pack-quantized (W4A16, W8A16): <prefix>.weight_packed int32
//     [N, K * b / 32], input k's code (stored plus 2^(b-1)) in bits
//     b * (k % (32 / b)) of word k / (32 / b); <prefix>.weight_shape int64
//     [2] = (N, K); <prefix>.weight_scale [N, K / group_size] ("group") or
//     [N, 1] ("channel"); if asymmetric, <prefix>.weight_zero_point int32
//     [ceil(N / (32 / b)), groups] packed alike along the outputs; with
//     actorder "group", <prefix>.weight_g_idx int32 [K];
//     w = scale * (code - zero point);
//   float-quantized (FP8, FP8_DYNAMIC, FP8_BLOCK): <prefix>.weight F8_E4M3
//     [N, K] and <prefix>.weight_scale [1], [N, 1] or, for strategy "block"
//     with block_structure [rows, cols], [ceil(N / rows), K / cols]; w =
//     scale * e4m3(code), widened in registers, the activations left in FP32
//     whatever input_activations says (as vLLM's W8A16 fallback on hardware
//     without FP8 products).
// A kv_cache_scheme (FP8, per tensor, static) gives each attention module
// k_scale and v_scale for --kv-cache-dtype fp8 (model/layers/kv_cache_scales.h).
// Scales are F32, BF16 or F16.  What vLLM refuses (asymmetric weights in
// int-quantized, group-wise int8 weights with activations, any other
// kv_cache_scheme) and what we do not have yet (NVFP4 and other formats,
// sparsity, transforms) are refused with one line naming it.
#pragma once

#include <memory>
#include <string>

#include "base/json.h"
#include "model/quant/quant_method.h"

namespace vllm {

// The method from a quantization_config object (`source` names its file in errors).
Result<std::unique_ptr<QuantMethod>> make_compressed_tensors_method(const Json& quantization_config,
                                                                    const std::string& source);

}  // namespace vllm
