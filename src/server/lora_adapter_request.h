// The bodies of vLLM's run-time adapter endpoints (enabled by
// VLLM_ALLOW_RUNTIME_LORA_UPDATING): POST /v1/load_lora_adapter
// {"lora_name", "lora_path", "load_inplace"} and POST /v1/unload_lora_adapter
// {"lora_name", "lora_int_id"}.
#pragma once

#include <string>

#include "base/status.h"
#include "engine/lora/lora_module.h"

namespace vllm::server {

struct LoadLoraRequest {
  LoraModule module;
  bool load_inplace = false;  // replace an adapter of the same name
};

// Errors are 400s with vLLM's messages; an unknown field is named.
Result<LoadLoraRequest> parse_load_lora_request(const std::string& body);
// The name to unload.  lora_int_id is accepted, as vLLM does, and the name
// decides (the ids are the engine's own).
Result<std::string> parse_unload_lora_request(const std::string& body);

}  // namespace vllm::server
