// Pieces of the engine's outputs as the API reports them, shared by the
// server's responses and `generate --output`.
#pragma once

#include <optional>

#include "base/json.h"
#include "engine/output_processor.h"

namespace vllm::api {

// "stop", "length", "abort", or null while unfinished.
OrderedJson finish_reason_json(const std::optional<FinishReason>& reason);

// The matched stop string, the stop token id, or null.
OrderedJson stop_reason_json(const StopReason& reason);

// A logprob as JSON can carry it: -inf is reported as -9999.0, as vLLM does.
double reported_logprob(float logprob);

}  // namespace vllm::api
