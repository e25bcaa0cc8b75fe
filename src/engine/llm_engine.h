// The engine's front door for one thread (vLLM's LLMEngine): tokenises and
// checks requests, fans a request out into its n sequences (or runs its beam
// search), runs core steps, and turns their tokens into text.  generate() is
// the offline batch API (vLLM's LLM.generate).  AsyncEngine wraps it in an
// engine thread for concurrent callers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/beam_search.h"
#include "engine/engine_core.h"
#include "engine/input_processor.h"
#include "engine/lora/lora_registry.h"
#include "engine/output_processor.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

class LLMEngine {
 public:
  // `model` and `tokenizer` must outlive the engine.
  static Result<std::unique_ptr<LLMEngine>> create(Model& model, const Tokenizer& tokenizer,
                                                   const EngineConfig& config);

  // Tokenises and checks a request; safe to call from any thread.
  Result<ProcessedRequest> process_inputs(const PromptInput& prompt, const SamplingParams& params) const;

  // Queues a request under a caller-chosen id, unique among unfinished ones.
  Status add_request(const std::string& request_id, ProcessedRequest request);
  Status add_request(const std::string& request_id, const PromptInput& prompt, const SamplingParams& params);

  // Ends the request (its blocks are freed now); its final output, with
  // finish_reason "abort", or nullopt if it is unknown or already finished.
  std::optional<RequestOutput> abort_request(const std::string& request_id);

  // One engine step; the outputs it produces.
  std::vector<RequestOutput> step();

  bool has_unfinished_requests() const { return core_->has_unfinished_requests(); }

  // Runs every prompt to completion (params[i], or params[0] for all);
  // outputs in input order.  Fails, running nothing, if any request is invalid.
  Result<std::vector<RequestOutput>> generate(const std::vector<PromptInput>& prompts,
                                              const std::vector<SamplingParams>& params);

  EngineCoreStats stats() const { return core_->stats(); }
  const EngineCore& core() const { return *core_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // The LoRA adapters requests may name (PromptInput::lora_name), null
  // without --enable-lora; thread-safe, as process_inputs is.
  LoraRegistry* loras() const { return loras_.get(); }

 private:
  struct BeamRequest {
    std::unique_ptr<BeamSearch> search;
    std::string cache_salt;
    std::shared_ptr<const LoraAdapter> lora;
    std::vector<RequestId> round;  // core requests of the current round, by beam
  };

  LLMEngine(const Tokenizer& tokenizer, std::unique_ptr<EngineCore> core, std::unique_ptr<LoraRegistry> loras,
            int32_t max_logprobs);
  bool has_request(const std::string& request_id) const;
  Status add_sequences(const std::string& request_id, ProcessedRequest request);
  Status submit_beam_round(const std::string& request_id, BeamRequest& beam);
  // Feeds a round result to its beam search; the request's final output once it is over.
  std::optional<RequestOutput> beam_step(const EngineCoreOutput& output);
  RequestOutput beam_output(const std::string& request_id, const BeamSearch& search,
                            std::optional<FinishReason> override_reason) const;

  const Tokenizer& tokenizer_;
  std::unique_ptr<EngineCore> core_;
  std::unique_ptr<LoraRegistry> loras_;
  InputProcessor inputs_;  // over *core_ and *loras_
  OutputProcessor output_processor_;
  std::unordered_map<std::string, BeamRequest> beam_requests_;
  std::unordered_map<RequestId, std::pair<std::string, size_t>> beam_round_ids_;  // core id -> request, beam
  RequestId next_id_ = 0;
};

}  // namespace vllm
