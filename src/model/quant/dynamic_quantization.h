// `--quantization int8|fp8`: an unquantized checkpoint whose linear layers
// (every matrix a Linear asks for, except the LM head, which vLLM keeps in
// the checkpoint's dtype too, and the token embedding) are quantized as they
// load:
//   int8: per output channel, each row exactly as an activation row is
//         quantized (kernels::int8_rows_for_int8_activations), computed
//         against int8 activations quantized per token (W8A8): what a
//         compressed-tensors W8A8 checkpoint of those codes runs as;
//   fp8:  per tensor as vLLM's dynamic FP8 does (scale max|w| / 448, codes
//         the E4M3 numbers nearest w * (1 / scale)), widened in registers
//         against FP32 activations: what a quant_method fp8 checkpoint of
//         those codes runs as.  (vLLM scales a fused q/k/v or gate/up matrix
//         as one tensor; here each checkpoint tensor has its own scale.)
#pragma once

#include <memory>
#include <string>

#include "model/quant/quant_method.h"

namespace vllm {

// The method `name` names (int8, fp8), or null for another name.
std::unique_ptr<QuantMethod> make_dynamic_method(const std::string& name);

}  // namespace vllm
