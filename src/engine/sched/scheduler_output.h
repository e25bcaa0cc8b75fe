// What the scheduler hands the runner for one step (a message: the runner
// keeps its own state of every request from it), what the runner gives back,
// and what the core returns per request after it.  The runner sees the
// scheduler only through this header.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/sample/sampler.h"
#include "engine/sample/sampling_params.h"
#include "engine/sched/request.h"
#include "structured/grammar_matcher.h"

namespace vllm {

// A request the runner sees for the first time: what it keeps of it until
// the request finishes (vLLM's NewRequestData).  Its tokens after the
// prompt are the ones the runner itself samples.
struct NewRequestData {
  RequestId request_id = 0;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  std::shared_ptr<const LoraAdapter> lora;  // null: the base model
};

// One request's share of a step: a prefill chunk, or a decode token and
// perhaps draft tokens after it (speculative decoding).  The runner takes
// the known tokens from the history it keeps of the request.
// The spans and the grammar point into the scheduler's state and stay valid
// until the next call to schedule() or update_from_output().
struct ScheduledChunk {
  RequestId request_id = 0;
  int32_t num_computed_tokens = 0;           // position of the chunk's first token in the sequence
  int32_t num_known_tokens = 0;              // known tokens computed this step, from num_computed_tokens on
  std::span<const int32_t> draft_token_ids;  // then these guesses, to be verified
  std::span<const BlockId> block_table;      // covers num_computed_tokens + num_new_tokens() tokens
  int32_t num_logits = 0;                    // trailing rows whose logits are wanted
  // The chunk reaches the last known token: its row samples the next token
  // (and each draft's row verifies the draft after it).
  bool sample = false;
  // The request's structured output, when it applies to the token sampled
  // now.  vLLM sends the grammar's token bitmasks; in one process the runner
  // fills them from the scheduler's matcher itself, on the sampler's
  // threads (taking the drafts ahead for their rows, then rolling back);
  // only the scheduler advances the matcher for good (update_from_output).
  structured::GrammarMatcher* grammar = nullptr;

  int32_t num_draft_tokens() const { return static_cast<int32_t>(draft_token_ids.size()); }
  int32_t num_new_tokens() const { return num_known_tokens + num_draft_tokens(); }
};

// What changed since the last step, in the order the runner applies it:
// requests it forgets, requests it meets, then the chunks to run.
struct SchedulerOutput {
  std::vector<RequestId> finished;           // finished or aborted since the last step
  std::vector<NewRequestData> new_requests;  // scheduled for the first time this step
  std::vector<ScheduledChunk> chunks;        // running requests first, then newly admitted ones
  int32_t total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted;  // sent back to the waiting queue this step (the runner keeps them)
  std::vector<RequestId> timed_out;  // finished unscheduled: they waited past max_queue_seconds
};

// What the runner gives back for each chunk, indexed like
// SchedulerOutput::chunks: the new tokens of a chunk that samples (one, or
// with drafts the accepted drafts and one more; empty otherwise) and the
// logprobs of the prompt positions the chunk scored, when its request asks.
struct ModelRunnerOutput {
  std::vector<std::vector<SampledToken>> sampled_tokens;
  std::vector<std::vector<PositionLogprobs>> prompt_logprobs;
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
