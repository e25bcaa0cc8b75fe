// `--lora-modules` values as vLLM's parser reads them: NAME=PATH, or a JSON
// object {"name": ..., "path": ..., "base_model_name": ...}.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/lora/lora_module.h"

namespace vllm::cli {

// Empty values are skipped; an error names the value that is wrong.
Result<std::vector<LoraModule>> parse_lora_modules(const std::vector<std::string>& values);

}  // namespace vllm::cli
