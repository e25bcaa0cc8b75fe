// The body of POST /v1/completions (docs/API.md §6, §7.1) as engine inputs.
// Unknown fields are ignored; a known field of the wrong type, a value out
// of range or a conflict is an error naming the field.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/llm_engine.h"

namespace vllm::server {

struct CompletionRequest {
  std::vector<PromptInput> prompts;  // choice index = prompt * n + sequence
  SamplingParams params;
  std::string model;  // empty: the default
  bool stream = false;
  bool include_usage = false;
  bool echo = false;
};

Result<CompletionRequest> parse_completion_request(const std::string& body);

}  // namespace vllm::server
