// Data parallelism (vLLM's DP load-balancing client): replicas of the whole
// engine, each on its own ranks (and each maybe tensor- or pipeline-
// parallel), behind one front door.  Replica 0 is this rank's own engine;
// replica r (r >= 1) is led by rank r of the leaders' group, which runs
// serve_replica().  A request lives its whole life on the replica it was
// given: the least loaded as vLLM weighs it (4 x waiting + running, the
// requests sent since the replica last reported counted as waiting), the
// emptier KV cache on a tie, and in turns among equals.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distributed/communicator.h"
#include "engine/async_engine.h"

namespace vllm {

class DataParallelEngine final : public EngineClient {
 public:
  // `local` is replica 0; `leaders` links it (rank 0) to the other replicas'
  // leaders.  `max_waiting_requests` > 0 bounds the waiting requests of all
  // replicas together (`local` should not bound its own).
  DataParallelEngine(std::unique_ptr<AsyncEngine> local, Communicator& leaders, int32_t max_waiting_requests = 0);
  // Calls shutdown().
  ~DataParallelEngine() override;
  DataParallelEngine(const DataParallelEngine&) = delete;
  DataParallelEngine& operator=(const DataParallelEngine&) = delete;

  Result<std::shared_ptr<RequestStream>> add_request(const std::string& request_id, const PromptInput& prompt,
                                                     const SamplingParams& params) override;
  Status check_request(const PromptInput& prompt, const SamplingParams& params) const override {
    return local_->check_request(prompt, params);
  }
  void abort(const std::string& request_id) override;
  EngineCoreStats stats() const override;
  std::vector<EngineCoreStats> engine_stats() const override;

  // On every replica, one after another; the first refusal is the answer
  // (replicas read the same files, so one refuses what all would), and a
  // new adapter a replica refused comes off the others.
  Status load_lora(const LoraModule& module, bool replace) override;
  Status unload_lora(const std::string& name) override;
  std::vector<LoraModule> lora_modules() const override { return local_->lora_modules(); }

  // Every replica aborts what it has unfinished, its last outputs are
  // delivered, and it ends; then the local engine stops.  Idempotent.
  void shutdown() override;

 private:
  struct RemoteRequest {
    int replica = 0;
    std::shared_ptr<RequestStream> stream;
  };

  // The replica a new request goes to; mutex_ held.
  int choose_replica();
  // Queues a message for the message thread to post.
  void post_to(int replica, std::string message);
  // A replica's answer to the LoRA change just posted to it.
  Status await_lora_answer(int replica);
  // The message thread: posts the outbox, and delivers what the replicas send.
  void run_messages();
  // Handles one message from `replica`; false after its last.
  bool receive(int replica, const std::string& bytes);

  std::unique_ptr<AsyncEngine> local_;
  Communicator& leaders_;
  const int num_replicas_;
  const int32_t max_waiting_requests_;

  mutable std::mutex mutex_;                               // guards everything below
  std::condition_variable wake_;                           // the message thread: something to post
  std::condition_variable lora_answer_;                    // load_lora / unload_lora: an answer came
  std::deque<std::pair<int, std::string>> outbox_;         // replica, encoded message
  std::unordered_map<std::string, RemoteRequest> remote_;  // unfinished requests of replicas >= 1
  std::vector<EngineCoreStats> replica_stats_;             // as each last reported (index 0 unused)
  std::vector<int32_t> sent_since_report_;                 // requests sent to each since then
  std::vector<std::optional<Status>> lora_answers_;
  std::mutex lora_mutex_;  // one LoRA change at a time
  int last_chosen_ = -1;   // the replica of the last request
  bool stopping_ = false;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace vllm
