// What the scheduler hands the model runner for one step, and what the core
// returns per request after it.  The runner sees the scheduler only through
// this header.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/sched/request.h"

namespace vllm {

// One request's share of a step: a prefill chunk or a decode token.
// The spans point into the scheduler's state and stay valid until the next
// call to schedule() or update_from_output().
struct ScheduledChunk {
  RequestId request_id = 0;
  std::span<const int32_t> token_ids;    // [num_new_tokens]: the tokens computed this step
  int32_t num_computed_tokens = 0;       // position of token_ids[0] in the sequence
  int32_t num_prompt_tokens = 0;         // of the whole sequence
  std::span<const BlockId> block_table;  // covers num_computed_tokens + token_ids.size() tokens
  int32_t num_logits = 0;                // trailing rows whose logits are wanted
  bool sample = false;                   // the last row samples the next token (the chunk reaches the end)

  int32_t num_new_tokens() const { return static_cast<int32_t>(token_ids.size()); }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // running requests first, then newly admitted ones
  int32_t total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted;  // sent back to the waiting queue this step
  std::vector<RequestId> timed_out;  // finished unscheduled: they waited past max_queue_seconds
};

// A step's result for one request.
struct EngineCoreOutput {
  RequestId request_id = 0;
  std::vector<int32_t> new_token_ids;
  std::vector<float> new_token_logprobs;       // raw logprob of each new token
  std::vector<PositionLogprobs> new_logprobs;  // per new token, when the request asks for logprobs
  // With the request's first output, when it asks: prompt tokens 1.. (token 0 has none).
  std::optional<std::vector<PositionLogprobs>> prompt_logprobs;
  std::optional<FinishReason> finish_reason;  // set on the request's last output
  std::optional<int32_t> stop_token_id;       // the stop_token_ids entry that finished it
  // The last new token is the eos or stop token that finished the request:
  // its text is not part of the output (vLLM), special token or not.
  bool ended_by_stop_token = false;
  std::optional<double> queue_time;  // with the first output: seconds from arrival to first scheduled
};

}  // namespace vllm
