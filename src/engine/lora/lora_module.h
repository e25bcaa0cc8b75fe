// A LoRA adapter as a server or a command line names it (vLLM's
// LoRAModulePath): what --lora-modules and POST /v1/load_lora_adapter give,
// and what /v1/models lists.  Safe for the server's side of the engine's
// front door: it names no model type.
#pragma once

#include <string>

namespace vllm {

struct LoraModule {
  std::string name;             // what a request's `model` (or `lora`) field names
  std::string path;             // the adapter's directory, as given
  std::string base_model_name;  // its card's parent; empty: the first served model name
};

}  // namespace vllm
