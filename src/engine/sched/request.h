// One request as the engine core tracks it: its tokens (prompt, then
// generated), how many of them have keys and values in the KV cache, and its
// place in the scheduler's life cycle.  Owned by the Scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/sample/sampler.h"
#include "engine/sample/sampling_params.h"
#include "structured/grammar_matcher.h"

namespace vllm {

struct LoraAdapter;  // engine/lora/lora_adapter.h

enum class RequestStatus { kWaiting, kRunning, kPreempted, kFinished };

// kQueueTimeout: it waited longer than SchedulerConfig::max_queue_seconds
// without ever being scheduled (an online server answers 503).
enum class FinishReason { kStop, kLength, kAbort, kQueueTimeout };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "abort", "queue_timeout"

struct Request {
  // `lora`: the adapter it runs with, null for the base model.
  Request(RequestId id, std::vector<int32_t> prompt_token_ids, SamplingParams params, std::string cache_salt,
          std::shared_ptr<const LoraAdapter> lora = nullptr);

  int32_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int32_t num_tokens() const { return static_cast<int32_t>(all_token_ids.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  // Tokens known but not yet in the KV cache: the rest of the prompt, or the
  // last sampled token, or everything again after a preemption.
  int32_t num_tokens_to_compute() const { return num_tokens() - num_computed_tokens; }
  std::span<const int32_t> prompt_token_ids() const {
    return std::span<const int32_t>(all_token_ids).first(static_cast<size_t>(num_prompt_tokens_));
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span<const int32_t>(all_token_ids).subspan(static_cast<size_t>(num_prompt_tokens_));
  }
  // Whether its prompt positions still need logits: until its first token,
  // which comes with the prompt logprobs.
  bool wants_prompt_logprobs() const { return params.prompt_logprobs && !prompt_logprobs_sent; }

  RequestId id;
  SamplingParams params;
  std::string cache_salt;                   // extra prefix-cache key: requests with different salts share no blocks
  std::shared_ptr<const LoraAdapter> lora;  // held until the request is gone, even if its name is unloaded
  int64_t lora_id() const;                  // 0: the base model
  const std::string& lora_name() const;     // empty: the base model
  std::vector<int32_t> all_token_ids;       // prompt, then the generated tokens
  // The grammar's matcher once the grammar applies to the output: from its
  // first token, or after params.grammar_after_token_id.
  structured::GrammarMatcher* active_grammar() const { return grammar_started_ ? grammar_matcher_.get() : nullptr; }
  // A token the output took: the grammar's, or perhaps the one it starts after.
  void advance_grammar(int32_t token);
  RequestStatus status = RequestStatus::kWaiting;
  // The runner has been sent the request (NewRequestData) and keeps its
  // state until it hears that the request finished.
  bool sent_to_runner = false;
  int32_t num_computed_tokens = 0;  // leading tokens whose K/V are in the cache
  // Scheduled in a step whose output has not come back yet (pipeline stages
  // keep several in flight): not scheduled again, nor preempted, until it has.
  bool in_flight = false;
  // Aborted while in flight: its blocks are freed once its step is back.
  bool aborted = false;
  // Speculative decoding: the proposer's guesses of the tokens after
  // all_token_ids, verified in the next step (which may schedule fewer).
  std::vector<int32_t> draft_token_ids;
  // Logprobs of prompt tokens 1.. as the runner scores their positions
  // (which it does once, preemption or not).
  std::vector<PositionLogprobs> prompt_logprobs;
  bool prompt_logprobs_sent = false;
  // Queueing, for metrics: when it arrived, and how long it waited before it first ran.
  double arrival_time = 0.0;
  std::optional<double> queue_time;
  bool queue_time_sent = false;

 private:
  int32_t num_prompt_tokens_;
  // Where the output stands in params.grammar, when it has one.
  std::unique_ptr<structured::GrammarMatcher> grammar_matcher_;
  bool grammar_started_;
};

}  // namespace vllm
