// `--quantization int8`: an unquantized checkpoint whose linear layers
// (every matrix a Linear asks for, except the LM head, which vLLM keeps in
// the checkpoint's dtype too, and the token embedding) are quantized as they load, per output channel
// to int8 (kernels::int8_rows_for_int8_activations), and computed against
// int8 activations quantized per token: what a compressed-tensors W8A8
// checkpoint of those codes and scales runs as.
#pragma once

#include <memory>

#include "model/quant/quant_method.h"

namespace vllm {

std::unique_ptr<QuantMethod> make_dynamic_int8_method();

}  // namespace vllm
