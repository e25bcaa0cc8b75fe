// Runs one scheduled step, vLLM V1's execute_model: brings the persistent
// input batch up to date with the SchedulerOutput, runs the step's chunks in
// one forward pass (ModelRunner), scores the prompt positions of requests
// that ask for prompt logprobs, samples (rejection sampling where drafts
// ride along) with each request's kept parameters, history and generator,
// and appends the sampled tokens to its history.  The scheduler learns the
// result only from the ModelRunnerOutput.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <optional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/lora/lora_slot_table.h"
#include "engine/runner/input_batch.h"
#include "engine/runner/model_runner.h"
#include "engine/sample/sampler.h"
#include "engine/sched/scheduler_output.h"
#include "model/model.h"

namespace vllm {

class StepRunner {
 public:
  // As ModelRunner's; `eos_token_ids` as the Sampler's; `max_loras` the
  // model's LoRA slots (0: LoRA is off).
  StepRunner(Model& model, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks, bool resident_kv_cache,
             std::optional<HiddenStateTap> tap, std::vector<int32_t> eos_token_ids, int32_t max_loras = 0);

  ModelRunnerOutput execute_model(const SchedulerOutput& step);

  // execute_model in two halves, for a model in pipeline stages: submit()
  // runs the step as far as this rank's stage and hands it on; finish()
  // samples the oldest step submitted (`step` must be it).  Up to
  // max_steps_in_flight() steps may be submitted before the oldest finishes;
  // a step without chunks is never in flight.
  void submit(const SchedulerOutput& step);
  ModelRunnerOutput finish(const SchedulerOutput& step);
  int max_steps_in_flight() const { return forward_.pipeline_stages(); }

  // Of the last step: the kept hidden states of every token, chunk by chunk
  // (ModelRunner::hidden_states).
  std::span<const float> hidden_states() const { return forward_.hidden_states(); }
  const InputBatch& input_batch() const { return batch_; }
  // The proposer's view: it advances a draft model's progress in the state.
  InputBatch& input_batch() { return batch_; }

 private:
  // Appends to `out` the logprobs of the prompt positions that `rows` (the
  // chunk's logits rows) complete and that were not scored before.
  void score_prompt(CachedRequestState& r, const ScheduledChunk& chunk, const float* rows,
                    std::vector<PositionLogprobs>& out) const;

  Model& model_;
  ThreadPool& pool_;
  ModelRunner forward_;
  Sampler sampler_;
  InputBatch batch_;
  LoraSlotTable lora_slots_;
  std::vector<SamplingRow> rows_;       // the step's sampling rows (capacity kept)
  std::vector<size_t> sampled_chunks_;  // the chunk of each row
};

}  // namespace vllm
