// The runner's own state of every request it has run (vLLM's persistent
// input batch): the token history, the sampling parameters and the request's
// generator live here from its first step to its end, kept up to date from
// each SchedulerOutput (finished ones dropped, new ones added, the sampled
// tokens appended by the runner) instead of being read from the scheduler
// each step.  A preempted request keeps its state, so that its generator
// and the prompt logprobs already scored carry over when it is recomputed.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runner/forward_chunk.h"
#include "engine/sample/sampler.h"
#include "engine/sched/scheduler_output.h"

namespace vllm {

// One request as the runner keeps it (vLLM's CachedRequestState).
struct CachedRequestState {
  explicit CachedRequestState(NewRequestData data);

  std::span<const int32_t> prompt_token_ids() const {
    return std::span<const int32_t>(token_ids).first(static_cast<size_t>(num_prompt_tokens));
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span<const int32_t>(token_ids).subspan(static_cast<size_t>(num_prompt_tokens));
  }

  RequestId id;
  SamplingParams params;
  std::vector<int32_t> token_ids;  // the prompt, then every token the runner sampled for it
  int32_t num_prompt_tokens;
  RequestRng rng;
  std::shared_ptr<const LoraAdapter> lora;  // null: the base model
  int32_t lora_slot = -1;                   // the model's slot that holds `lora` this step (StepRunner)
  int32_t num_scored_prompt_positions = 0;  // prompt logprobs given so far (positions 0 .. this - 1)
  int32_t num_computed_tokens = 0;          // leading tokens in the KV cache after the last step
  // A draft model's progress: leading tokens whose keys and values it has
  // written in its own cache at this request's block ids.  Set to the
  // prefix cache's hit when the request is (re)admitted: whoever computed
  // a cached block had it drafted over (a block that was not only costs
  // acceptance).
  int32_t num_draft_kv_tokens = 0;
  bool admitting = true;  // new, or preempted since its last chunk: its next chunk starts after the cache's hit
};

class InputBatch {
 public:
  // Drops the finished requests, marks the preempted ones and adds the new
  // ones of a step; then finds each chunk's request (submitted()) and takes
  // the chunks' start positions.  A step with chunks is then in flight
  // until finish_oldest().
  void update(const SchedulerOutput& step);

  // The request of the newest step's chunk i (update's).
  CachedRequestState& submitted(size_t i) { return *in_flight_.back()[i]; }

  // The newest step's chunks as forward passes see them, their known tokens
  // taken from the kept history; valid until the next call.
  std::span<const ForwardChunk> forward_chunks(std::span<const ScheduledChunk> chunks);

  // The oldest step in flight is done: scheduled() and computed() are then its.
  void finish_oldest();

  // The request of the finished step's chunk i, until the next finish_oldest().
  CachedRequestState& scheduled(size_t i) { return *scheduled_[i]; }

  // After the step: chunk i's request has its tokens computed, less the
  // rejected drafts, whose cache slots the next step overwrites.
  void computed(size_t i, const ScheduledChunk& chunk, int32_t num_rejected_drafts);

  size_t num_requests() const { return requests_.size(); }

 private:
  CachedRequestState& request(RequestId id);

  std::unordered_map<RequestId, CachedRequestState> requests_;  // its nodes stay put: scheduled_ points at them
  // Per chunk of each step in flight (a pipeline's several), oldest first.
  std::deque<std::vector<CachedRequestState*>> in_flight_;
  std::vector<CachedRequestState*> scheduled_;  // per chunk of the step last finished
  std::vector<ForwardChunk> forward_chunks_;
};

}  // namespace vllm
