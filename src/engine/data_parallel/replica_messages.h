// What rank 0's DataParallelEngine and a remote replica's leader say to each
// other (over Communicator::post / poll): requests, aborts, adapter changes
// and the end one way; the requests' outputs, the replica's counters, the
// adapter changes' answers and its last word back.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "engine/engine_stats.h"
#include "engine/lora/lora_module.h"
#include "engine/output_processor.h"
#include "engine/prompt_input.h"
#include "engine/sample/sampling_params.h"

namespace vllm::data_parallel {

// To a replica.  A request goes as the caller gave it: the replica tokenises
// it and compiles its grammar again, as its own engine's input processor.
struct AddRequest {
  std::string request_id;
  PromptInput prompt;
  SamplingParams params;  // its compiled grammar is not sent
};
struct AbortRequest {
  std::string request_id;
};
struct LoadLora {
  LoraModule module;
  bool replace = false;
};
struct UnloadLora {
  std::string name;
};
// Abort what is unfinished, answer Stopped, and end.
struct Shutdown {};

// From a replica.
struct Outputs {
  std::vector<RequestOutput> outputs;
};
struct Stats {
  EngineCoreStats stats;
};
struct LoraDone {  // the answer to LoadLora or UnloadLora
  Status status;
};
struct Stopped {};  // after the last Outputs

using ReplicaMessage =
    std::variant<AddRequest, AbortRequest, LoadLora, UnloadLora, Shutdown, Outputs, Stats, LoraDone, Stopped>;

std::string encode(const ReplicaMessage& message);
ReplicaMessage decode(const std::string& bytes);

}  // namespace vllm::data_parallel
