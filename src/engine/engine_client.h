// The engine's front door for a server (vLLM's EngineClient): requests in,
// each with a stream of its outputs back, aborts, the core's counters.  It
// pulls in no model, kernel or runner header (the server is compiled with
// VLLM_ENGINE_FRONT_DOOR_ONLY, which makes those headers an error), so the
// server cannot reach past it; AsyncEngine implements it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine_stats.h"
#include "engine/lora/lora_module.h"
#include "engine/output_processor.h"
#include "engine/prompt_input.h"
#include "engine/sample/sampling_params.h"

namespace vllm {

// One request's outputs, written by the engine thread, read by one consumer.
class RequestStream {
 public:
  // Blocks until the next output; false once the final one has been read.
  bool next(RequestOutput& out);

  // Non-blocking: the next output if one is waiting.
  bool try_next(RequestOutput& out);

  // For consumers that must not block (the server's I/O threads): called
  // after every output is queued, on the engine thread, and at once if some
  // are already waiting.  It should only schedule the reading elsewhere.
  void set_listener(std::function<void()> listener);

  // The engine replica that runs the request (data parallelism), from 0.
  int engine_index() const { return engine_index_; }

 private:
  friend class AsyncEngine;         // the writer of a local request's stream
  friend class DataParallelEngine;  // and of a remote replica's
  void push(RequestOutput out);

  int engine_index_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestOutput> queue_;
  std::function<void()> listener_;
  bool final_read_ = false;
};

class EngineClient {
 public:
  virtual ~EngineClient() = default;

  // Checks the request on the calling thread (tokenisation included: call it
  // off any I/O thread); on success its outputs arrive on the returned
  // stream (as params.output_kind says), ending with the one that has
  // finished = true.
  virtual Result<std::shared_ptr<RequestStream>> add_request(const std::string& request_id, const PromptInput& prompt,
                                                             const SamplingParams& params) = 0;
  // add_request's checks alone: whether it would be accepted (but for a busy queue).
  virtual Status check_request(const PromptInput& prompt, const SamplingParams& params) const = 0;
  // Ends the request before the next step (its stream ends with "abort");
  // nothing if it has already finished.
  virtual void abort(const std::string& request_id) = 0;
  // The core's counters as of the last step (with data parallelism, all
  // replicas' added up).
  virtual EngineCoreStats stats() const = 0;
  // Each replica's counters, by engine index (one without data parallelism).
  virtual std::vector<EngineCoreStats> engine_stats() const { return {stats()}; }

  // LoRA adapters (vLLM's add_lora / remove_lora); refused without --enable-lora.
  // Reads and checks an adapter and serves it under its name: refused when
  // the name is taken and not `replace`, or with why the adapter cannot be
  // served (kNotFound: no adapter in that directory).
  virtual Status load_lora(const LoraModule& module, bool replace) = 0;
  // New requests can no longer name it (kNotFound if none has the name);
  // those that did run to their end with it.
  virtual Status unload_lora(const std::string& name) = 0;
  // The adapters served, in the order they were loaded.
  virtual std::vector<LoraModule> lora_modules() const = 0;

  // Aborts whatever is unfinished and stops; later requests are refused.  Idempotent.
  virtual void shutdown() = 0;
};

}  // namespace vllm
