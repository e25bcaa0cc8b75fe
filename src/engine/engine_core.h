// The engine core: one step = schedule -> execute -> sample -> update.  It
// owns the scheduler, the KV cache manager and the model runner, and is
// driven by one thread (the engine thread); check_request() alone may be
// called from any thread, since it reads only the fixed configuration.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <deque>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "engine/engine_config.h"
#include "engine/engine_stats.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runner/step_runner.h"
#include "engine/sched/scheduler.h"
#include "engine/spec/proposer.h"
#include "model/model.h"

namespace vllm {

struct EngineCoreRequest {
  RequestId request_id = 0;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  std::string cache_salt;
  std::shared_ptr<const LoraAdapter> lora;  // null: the base model
};

class EngineCore {
 public:
  // `model` must outlive the core.
  static Result<std::unique_ptr<EngineCore>> create(Model& model, const EngineConfig& config);

  // Whether the request could ever run: a non-empty prompt of valid ids whose
  // prompt plus max_tokens fits the context length and the whole KV pool.
  Status check_request(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params) const;

  // Queues a request (checked again here); its id must be new.
  Status add_request(EngineCoreRequest request);
  // Frees the request's blocks now; false if it is unknown or finished.
  bool abort_request(RequestId id);

  // One step over everything scheduled; outputs of requests that got a token.
  std::vector<EngineCoreOutput> step();

  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests(); }
  EngineCoreStats stats() const;
  const ResolvedEngineConfig& config() const { return config_; }
  const KVCacheManager& kv_cache() const { return kv_cache_; }
  // The runner's state of the requests it has run: those that finished are
  // dropped at the next step.
  const InputBatch& input_batch() const { return runner_.input_batch(); }
  const std::vector<int32_t>& eos_token_ids() const { return eos_token_ids_; }
  int64_t vocab_size() const { return model_.config().vocab_size; }

 private:
  EngineCore(Model& model, const ResolvedEngineConfig& config, std::unique_ptr<Model> draft_model);
  // step() with a step in flight per pipeline stage.
  std::vector<EngineCoreOutput> step_pipelined();
  // Speculative decoding: drafts for the next step of the requests that the
  // step `scheduled` ran and did not finish (`outputs`), from the runner's state of them.
  void propose_drafts(const SchedulerOutput& scheduled, const std::vector<EngineCoreOutput>& outputs);

  Model& model_;
  ResolvedEngineConfig config_;
  std::vector<int32_t> eos_token_ids_;
  ThreadPool pool_;
  KVCacheManager kv_cache_;
  Scheduler scheduler_;
  StepRunner runner_;
  std::unique_ptr<Model> draft_model_;  // speculative decoding's draft model or EAGLE head, else null
  int64_t target_hidden_width_;         // an EAGLE head's: what it reads of the target per token; else 0
  std::unique_ptr<Proposer> proposer_;  // null without speculative decoding
  // Steps submitted whose outputs have not come back, oldest first: a
  // pipeline's stages each work on one (1: no pipeline, or speculative
  // decoding, whose drafts need the step before).
  int max_steps_in_flight_ = 1;
  std::deque<SchedulerOutput> in_flight_;
  int64_t num_steps_ = 0;
  int64_t num_scheduled_tokens_ = 0;
};

}  // namespace vllm
