// AWQ checkpoints (quant_method "awq", version "gemm"), as AutoAWQ writes
// them and vLLM reads them.  Each quantized linear layer <prefix> has, for K
// inputs, N outputs and G groups of group_size inputs:
//   <prefix>.qweight  int32 [K, N / 8]: 4-bit codes packed along the
//                     outputs, word c's nibble i holding output
//                     8c + {0, 2, 4, 6, 1, 3, 5, 7}[i];
//   <prefix>.qzeros   int32 [G, N / 8]: each group's zero point, packed alike;
//   <prefix>.scales   float16 [G, N];
// and w[n, k] = scale[g, n] * (code[k, n] - zero[g, n]), g = k / group_size.
#pragma once

#include <memory>
#include <string>

#include "base/json.h"
#include "model/quant/quant_method.h"

namespace vllm {

// The method from a quantization_config object (`source` names its file in errors).
Result<std::unique_ptr<QuantMethod>> make_awq_method(const Json& quantization_config, const std::string& source);

}  // namespace vllm
