// A LoRA adapter as the engine serves it: the adapter's weights under the
// name requests ask for, and an id that no other load ever gets, so that
// the prefix cache and the runner's slots never mistake one load for another
// (a name unloaded and loaded again from another path is another adapter).
#pragma once

#include <cstdint>
#include <string>

#include "model/lora/peft_adapter.h"

namespace vllm {

// --enable-lora's settings, with vLLM's defaults.
struct LoraConfig {
  int32_t max_loras = 1;       // distinct adapters in one step (--max-loras)
  int32_t max_lora_rank = 16;  // adapters of a higher rank are refused (--max-lora-rank)
  int32_t max_cpu_loras = 0;   // adapters kept loaded in memory (--max-cpu-loras); 0: max_loras
};

struct LoraAdapter {
  int64_t id = 0;  // > 0
  std::string name;
  PeftAdapter weights;
};

}  // namespace vllm
