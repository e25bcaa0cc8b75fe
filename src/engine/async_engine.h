// The engine for many threads (vLLM's AsyncLLM): one engine thread owns the
// LLMEngine and everything below it; callers tokenise and check their own
// requests, post them to the engine's inbox, and read each request's outputs
// from its own stream.  Aborts go through the inbox too and take effect
// before the next step.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>

#include "engine/engine_client.h"
#include "engine/llm_engine.h"

namespace vllm {

class AsyncEngine final : public EngineClient {
 public:
  // `max_waiting_requests` > 0 bounds the queue: a request that would make
  // more wait is refused (ResourceExhausted).  0: unbounded, as vLLM.
  // `lockstep`: experts placed across data-parallel replicas, whose engines
  // then step together (ExpertExchange), an idle one too.
  explicit AsyncEngine(std::unique_ptr<LLMEngine> engine, int32_t max_waiting_requests = 0,
                       ExpertExchange* lockstep = nullptr);
  // Calls shutdown().
  ~AsyncEngine() override;
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Checks the request on the calling thread; on success its outputs arrive
  // on the returned stream (as params.output_kind says), ending with the
  // one that has finished = true.
  Result<std::shared_ptr<RequestStream>> add_request(const std::string& request_id, const PromptInput& prompt,
                                                     const SamplingParams& params) override;
  Status check_request(const PromptInput& prompt, const SamplingParams& params) const override {
    return process_inputs(prompt, params).status();
  }
  // add_request's two halves: the checks and tokenisation (thread-safe),
  // then the queueing, which refuses a busy queue or an id in use.
  Result<ProcessedRequest> process_inputs(const PromptInput& prompt, const SamplingParams& params) const;
  Result<std::shared_ptr<RequestStream>> add_processed(const std::string& request_id, ProcessedRequest request);
  // Whether a request of this id is unfinished.
  bool has_request(const std::string& request_id) const;

  // Ends the request before the next step (its stream ends with "abort");
  // nothing if it has already finished.
  void abort(const std::string& request_id) override;

  // The core's counters as of the last step; the requests posted since count as waiting.
  EngineCoreStats stats() const override;

  Status load_lora(const LoraModule& module, bool replace) override;
  Status unload_lora(const std::string& name) override;
  std::vector<LoraModule> lora_modules() const override;

  // Aborts whatever is unfinished (streams end with "abort") and joins the
  // engine thread; later requests are refused as unavailable.  Idempotent.
  void shutdown() override;
  // The same without waiting for the engine thread to end.
  void begin_shutdown();

 private:
  struct AddCommand {
    std::string request_id;
    ProcessedRequest request;
  };
  struct AbortCommand {
    std::string request_id;
  };
  using Command = std::variant<AddCommand, AbortCommand>;

  void run_engine_loop();
  // One turn of a loop in lockstep with the other replicas: whether they
  // stepped; nullopt once they all stop.
  std::optional<bool> lockstep_turn(bool stopping);
  void apply(Command& command);
  void deliver(RequestOutput out);

  std::unique_ptr<LLMEngine> engine_;  // touched only by the engine thread, but for process_inputs
  const int32_t max_waiting_requests_;
  ExpertExchange* const lockstep_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  std::deque<Command> inbox_;
  int32_t num_adds_in_inbox_ = 0;  // requests posted that the core has not seen: they wait too
  std::unordered_map<std::string, std::shared_ptr<RequestStream>> streams_;  // unfinished requests
  EngineCoreStats stats_;
  bool stopping_ = false;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace vllm
