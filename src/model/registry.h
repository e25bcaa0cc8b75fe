// architectures[0] -> the decoder variant that runs it.
#pragma once

#include <string>
#include <vector>

#include "model/arch/decoder_variant.h"

namespace vllm {

std::vector<std::string> supported_architectures();
Result<DecoderVariant> decoder_variant_for(const ModelConfig& config);

}  // namespace vllm
