// The continuous-batching scheduler (vLLM V1's): there are no prefill and
// decode phases; each step, every request's computed tokens catch up with its
// known tokens as far as one token budget allows.  Running requests go first
// (a decode token, or the next chunk of a long prompt), then waiting requests
// are admitted in arrival order.  When the KV pool runs out, the most
// recently admitted running request is preempted: its blocks are freed and it
// goes back to the front of the waiting queue, to be recomputed later.
// Bookkeeping only: no model, no tensors.  Single-threaded (the engine thread).
#pragma once

#include <deque>
#include <limits>
#include <memory>
#include <unordered_map>

#include "base/status.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/sched/request.h"
#include "engine/sched/scheduler_output.h"
#include "engine/sched/spec_decoding_stats.h"

namespace vllm {

struct SchedulerConfig {
  int32_t max_num_batched_tokens = 2048;  // token budget per step
  int32_t max_num_seqs = 128;             // running requests at most
  int32_t max_model_len = 0;              // prompt + generated tokens at most
  bool enable_chunked_prefill = true;     // off: a prompt is admitted only when it fits the budget whole
  double max_queue_seconds = 0;           // a request never scheduled after this long finishes; 0: no limit
  // KV slots kept allocated past each chunk (vLLM's num_lookahead_tokens): a
  // draft model writes its guesses' keys and values there before the target
  // verifies them.  Never past the last slot the request may need.
  int32_t num_lookahead_tokens = 0;
  // Distinct LoRA adapters among the running requests at most (--max-loras):
  // a waiting request of another adapter is passed over until one is free
  // (base-model requests never are).  0: LoRA is off.
  int32_t max_loras = 0;

  Status validate() const;
};

class Scheduler {
 public:
  // `eos_token_ids` end a request unless it asks to ignore them.
  Scheduler(const SchedulerConfig& config, KVCacheManager& kv_cache, std::vector<int32_t> eos_token_ids);

  // Queues a request the engine has already checked can ever fit.
  void add_request(std::unique_ptr<Request> request);

  // Drops the request wherever it is and frees its blocks; false if unknown.
  bool abort_request(RequestId id);

  // `max_requests`: requests in the step at most (a pipeline's micro-batch).
  SchedulerOutput schedule(int32_t max_requests = std::numeric_limits<int32_t>::max());

  // Advances the computed tokens of every scheduled request (less its
  // rejected drafts, whose cache slots the next step overwrites), appends the
  // sampled tokens one by one until one ends the request (nothing after a
  // stop leaks), finishes those requests and frees their blocks.
  std::vector<EngineCoreOutput> update_from_output(const SchedulerOutput& output, const ModelRunnerOutput& sampled);

  // The proposer's guesses of the tokens after a request's newest one, for its next step.
  void update_draft_token_ids(RequestId id, std::vector<int32_t> draft_token_ids);

  bool has_unfinished_requests() const { return !requests_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }
  const SpecDecodingStats& spec_decoding_stats() const { return spec_decoding_stats_; }
  // The names of the adapters of the running and of the waiting requests, each once, in queue order.
  std::vector<std::string> running_lora_names() const;
  std::vector<std::string> waiting_lora_names() const;
  const Request* find_request(RequestId id) const;
  Request* find_request(RequestId id);

 private:
  struct Scheduled {
    Request* request;
    int32_t num_new_tokens;  // draft tokens included
    int32_t num_draft_tokens;
  };
  // Schedules running requests in order, preempting from the back of the
  // running list when blocks run out.
  void schedule_running(int32_t& budget, int32_t max_requests, std::vector<Scheduled>& scheduled,
                        SchedulerOutput& output);
  // The request to preempt for blocks: the most recently admitted one not in flight.
  Request* preemption_victim() const;
  void preempt(Request* victim, SchedulerOutput& output);
  // KV slots to hold once `num_tokens` of `r` are computed: those, and the lookahead.
  int32_t with_lookahead(const Request& r, int32_t num_tokens) const;
  // Finishes the waiting requests that were never scheduled and have waited
  // past max_queue_seconds (preempted ones have run: they wait on).
  void expire_waiting(SchedulerOutput& output);
  // Admits waiting requests while budget, sequence slots and blocks last.
  void admit_waiting(int32_t& budget, int32_t max_requests, std::vector<Scheduled>& scheduled);
  // The reason `r` ends after its newest token, and the stop token id if one did it.
  std::optional<FinishReason> check_stop(const Request& r, EngineCoreOutput& out) const;
  void finish(Request& r);

  SchedulerConfig config_;
  KVCacheManager& kv_cache_;
  std::vector<int32_t> eos_token_ids_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;  // all unfinished requests
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order
  // Requests the runner has state of that finished since the last schedule(): it forgets them then.
  std::vector<RequestId> finished_since_last_step_;
  int64_t num_preemptions_ = 0;
  SpecDecodingStats spec_decoding_stats_;
};

}  // namespace vllm
