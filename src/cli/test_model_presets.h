// Shapes for `make-test-model`: tiny ones per architecture (for reference
// tests) and the exact shapes of real models (for benchmarks), taken from
// their public config.json files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

struct TestModelPreset {
  std::string name;
  std::string arch;  // llama, mistral, qwen2, qwen3
  Json config;       // config.json without torch_dtype
};

std::vector<std::string> test_model_preset_names();
std::vector<std::string> test_model_arch_names();

// `arch` is required for "tiny" and must agree with a named preset's own.
Result<TestModelPreset> find_test_model_preset(const std::string& preset, const std::optional<std::string>& arch);

}  // namespace vllm
