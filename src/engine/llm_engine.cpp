#include "engine/llm_engine.h"

#include "base/logging.h"

namespace vllm {
Result<std::unique_ptr<LLMEngine>> LLMEngine::create(Model& model, const Tokenizer& tokenizer,
                                                     const EngineConfig& config) {
  VLLM_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core, EngineCore::create(model, config));
  std::unique_ptr<LoraRegistry> loras =
      config.lora ? std::make_unique<LoraRegistry>(model.lora_targets(), lora_dtype(model.config()), *config.lora)
                  : nullptr;
  return std::unique_ptr<LLMEngine>(new LLMEngine(tokenizer, std::move(core), std::move(loras), config.max_logprobs));
}

LLMEngine::LLMEngine(const Tokenizer& tokenizer, std::unique_ptr<EngineCore> core, std::unique_ptr<LoraRegistry> loras,
                     int32_t max_logprobs)
    : tokenizer_(tokenizer),
      core_(std::move(core)),
      loras_(std::move(loras)),
      inputs_(tokenizer, *core_, loras_.get(), max_logprobs),
      output_processor_(tokenizer) {}

Result<ProcessedRequest> LLMEngine::process_inputs(const PromptInput& prompt, const SamplingParams& params) const {
  return inputs_.process(prompt, params);
}

bool LLMEngine::has_request(const std::string& request_id) const {
  return output_processor_.has_request(request_id) || beam_requests_.count(request_id) != 0;
}

Status LLMEngine::add_request(const std::string& request_id, ProcessedRequest request) {
  if (has_request(request_id)) return invalid_argument("request id '" + request_id + "' is already in use");
  if (!request.params.use_beam_search) return add_sequences(request_id, std::move(request));
  BeamRequest& beam = beam_requests_[request_id];
  beam.search =
      std::make_unique<BeamSearch>(std::move(request.prompt_token_ids), request.params, core_->eos_token_ids());
  beam.cache_salt = std::move(request.cache_salt);
  beam.lora = std::move(request.lora);
  const Status s = submit_beam_round(request_id, beam);
  if (!s.is_ok()) beam_requests_.erase(request_id);
  return s;
}

Status LLMEngine::add_request(const std::string& request_id, const PromptInput& prompt, const SamplingParams& params) {
  VLLM_ASSIGN_OR_RETURN(ProcessedRequest processed, process_inputs(prompt, params));
  return add_request(request_id, std::move(processed));
}

// Sequence i of n is a core request of its own with seed + i; they share the
// prompt's blocks through the prefix cache.  Only the first computes prompt
// logprobs (which turns off cache hits for it).
Status LLMEngine::add_sequences(const std::string& request_id, ProcessedRequest request) {
  const SamplingParams& params = request.params;
  std::vector<RequestId> ids;
  for (int32_t i = 0; i < params.n; ++i) {
    SamplingParams child = params;
    child.n = 1;
    if (params.seed) child.seed = static_cast<int64_t>(static_cast<uint64_t>(*params.seed) + static_cast<uint64_t>(i));
    if (i > 0) child.prompt_logprobs.reset();
    const RequestId id = next_id_++;
    const Status s =
        core_->add_request(EngineCoreRequest{id, request.prompt_token_ids, child, request.cache_salt, request.lora});
    if (!s.is_ok()) {
      for (RequestId added : ids) core_->abort_request(added);
      return s;
    }
    ids.push_back(id);
  }
  output_processor_.add_request(request_id, std::move(request.prompt_token_ids), params, std::move(ids));
  return Status::ok();
}

Status LLMEngine::submit_beam_round(const std::string& request_id, BeamRequest& beam) {
  beam.round.clear();
  std::vector<std::vector<int32_t>> prompts = beam.search->round_prompts();
  for (size_t b = 0; b < prompts.size(); ++b) {
    const RequestId id = next_id_++;
    const Status s = core_->add_request(
        EngineCoreRequest{id, std::move(prompts[b]), beam.search->round_params(b), beam.cache_salt, beam.lora});
    if (!s.is_ok()) {
      for (RequestId added : beam.round) {
        core_->abort_request(added);
        beam_round_ids_.erase(added);
      }
      return s;
    }
    beam_round_ids_.emplace(id, std::make_pair(request_id, beam.round.size()));
    beam.round.push_back(id);
  }
  return Status::ok();
}

RequestOutput LLMEngine::beam_output(const std::string& request_id, const BeamSearch& search,
                                     std::optional<FinishReason> override_reason) const {
  RequestOutput out;
  out.request_id = request_id;
  out.prompt_token_ids = search.prompt_token_ids();
  out.finished = true;
  const std::vector<Beam> beams = search.best();
  for (size_t i = 0; i < beams.size(); ++i) {
    const Beam& beam = beams[i];
    CompletionOutput c;
    c.index = static_cast<int32_t>(i);
    IncrementalDetokenizer detokenizer(tokenizer_, search.params().skip_special_tokens, search.prompt_token_ids());
    for (int32_t id : beam.token_ids) c.text += detokenizer.push(id);
    c.text += detokenizer.flush();
    c.token_ids = beam.token_ids;
    c.cumulative_logprob = beam.cumulative_logprob;
    c.finish_reason = override_reason                                ? *override_reason
                      : beam.ended_with_eos || beam.grammar_complete ? FinishReason::kStop
                                                                     : FinishReason::kLength;
    out.outputs.push_back(std::move(c));
  }
  return out;
}

std::optional<RequestOutput> LLMEngine::beam_step(const EngineCoreOutput& output) {
  auto round_it = beam_round_ids_.find(output.request_id);
  const auto [request_id, beam_index] = round_it->second;
  beam_round_ids_.erase(round_it);
  BeamRequest& beam = beam_requests_.at(request_id);
  if (output.finish_reason == FinishReason::kQueueTimeout) {  // the round never ran: the search ends
    for (RequestId id : beam.round) {
      if (beam_round_ids_.erase(id) != 0) core_->abort_request(id);
    }
    RequestOutput out = beam_output(request_id, *beam.search, FinishReason::kQueueTimeout);
    beam_requests_.erase(request_id);
    return out;
  }
  VLLM_CHECK(output.new_logprobs.size() == 1, "a beam round request returns one token with logprobs");
  beam.search->add_result(beam_index, output.new_logprobs.front());
  if (!beam.search->round_complete()) return std::nullopt;
  if (beam.search->next_round()) {
    const Status s = submit_beam_round(request_id, beam);
    if (s.is_ok()) return std::nullopt;
    // The beams outgrew what check_request allowed at the start: impossible
    // by construction, but end the request rather than leave it hanging.
    VLLM_LOG(Info) << "beam search " << request_id << " stopped: " << s.message();
  }
  RequestOutput out = beam_output(request_id, *beam.search, std::nullopt);
  beam_requests_.erase(request_id);
  return out;
}

std::optional<RequestOutput> LLMEngine::abort_request(const std::string& request_id) {
  auto beam_it = beam_requests_.find(request_id);
  if (beam_it != beam_requests_.end()) {
    for (RequestId id : beam_it->second.round) {
      if (beam_round_ids_.erase(id) != 0) core_->abort_request(id);
    }
    RequestOutput out = beam_output(request_id, *beam_it->second.search, FinishReason::kAbort);
    beam_requests_.erase(beam_it);
    return out;
  }
  std::vector<RequestId> unfinished;
  std::optional<RequestOutput> out = output_processor_.abort_request(request_id, unfinished);
  for (RequestId id : unfinished) core_->abort_request(id);
  return out;
}

std::vector<RequestOutput> LLMEngine::step() {
  std::vector<EngineCoreOutput> core_outputs = core_->step();
  std::vector<RequestOutput> beam_outputs;
  std::erase_if(core_outputs, [&](const EngineCoreOutput& o) {
    if (beam_round_ids_.count(o.request_id) == 0) return false;
    if (std::optional<RequestOutput> out = beam_step(o)) beam_outputs.push_back(std::move(*out));
    return true;
  });
  OutputProcessor::StepOutputs processed = output_processor_.process_outputs(core_outputs);
  for (RequestId id : processed.stopped) core_->abort_request(id);
  for (RequestOutput& out : beam_outputs) processed.outputs.push_back(std::move(out));
  return std::move(processed.outputs);
}

Result<std::vector<RequestOutput>> LLMEngine::generate(const std::vector<PromptInput>& prompts,
                                                       const std::vector<SamplingParams>& params) {
  if (params.size() != 1 && params.size() != prompts.size()) {
    return invalid_argument("generate takes one SamplingParams for all prompts or one per prompt");
  }
  std::vector<ProcessedRequest> processed;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingParams p = params[params.size() == 1 ? 0 : i];
    p.output_kind = OutputKind::kFinalOnly;
    Result<ProcessedRequest> r = process_inputs(prompts[i], p);
    if (!r.is_ok()) return invalid_argument("prompt " + std::to_string(i) + ": " + r.status().message());
    processed.push_back(std::move(r).value());
  }
  // Ids of their own, so that requests added by other callers are left alone.
  const std::string prefix = "generate-" + std::to_string(next_id_) + "-";
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < processed.size(); ++i) {
    const std::string id = prefix + std::to_string(i);
    VLLM_RETURN_IF_ERROR(add_request(id, std::move(processed[i])));
    index.emplace(id, i);
  }
  std::vector<RequestOutput> results(prompts.size());
  size_t remaining = prompts.size();
  while (remaining > 0) {
    for (RequestOutput& out : step()) {
      auto it = index.find(out.request_id);
      if (it == index.end() || !out.finished) continue;
      results[it->second] = std::move(out);
      --remaining;
    }
  }
  return results;
}

}  // namespace vllm
