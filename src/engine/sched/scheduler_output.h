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

// One request's share of a step: a prefill chunk, or a decode token and
// perhaps draft tokens after it (speculative decoding).
// The spans point into the scheduler's state and stay valid until the next
// call to schedule() or update_from_output().
struct ScheduledChunk {
  RequestId request_id = 0;
  std::span<const int32_t> token_ids;        // known tokens computed this step
  std::span<const int32_t> draft_token_ids;  // then these guesses, to be verified
  int32_t num_computed_tokens = 0;           // position of token_ids[0] in the sequence
  int32_t num_prompt_tokens = 0;             // of the whole sequence
  std::span<const BlockId> block_table;      // covers num_computed_tokens + num_new_tokens() tokens
  int32_t num_logits = 0;                    // trailing rows whose logits are wanted
  // The chunk reaches the last known token: its row samples the next token
  // (and each draft's row verifies the draft after it).
  bool sample = false;

  int32_t num_draft_tokens() const { return static_cast<int32_t>(draft_token_ids.size()); }
  int32_t num_new_tokens() const { return static_cast<int32_t>(token_ids.size()) + num_draft_tokens(); }
  // The i-th token computed this step, draft or not.
  int32_t new_token(int32_t i) const {
    const auto n = static_cast<int32_t>(token_ids.size());
    return i < n ? token_ids[static_cast<size_t>(i)] : draft_token_ids[static_cast<size_t>(i - n)];
  }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // running requests first, then newly admitted ones
  int32_t total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted;  // sent back to the waiting queue this step
  std::vector<RequestId> timed_out;  // finished unscheduled: they waited past max_queue_seconds
};

// What a step's sampling gives each chunk that samples, in chunk order: its
// new tokens, one, or with drafts the accepted drafts and one more.
struct ModelRunnerOutput {
  std::vector<std::vector<SampledToken>> sampled_tokens;
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
