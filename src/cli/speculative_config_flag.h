// `--speculative-config JSON`, as vLLM reads it (its SpeculativeConfig keys),
// into the engine's SpeculativeConfig.
#pragma once

#include <string>

#include "base/status.h"
#include "engine/spec/speculative_config.h"

namespace vllm::cli {

// The flag's JSON object; an error names the key that is wrong or not supported.
Result<SpeculativeConfig> parse_speculative_config(const std::string& text);

}  // namespace vllm::cli
