#include "engine/llm_engine.h"

namespace vllm {

Result<std::unique_ptr<LLMEngine>> LLMEngine::create(DecoderModel& model, const Tokenizer& tokenizer,
                                                     const EngineConfig& config) {
  VLLM_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core, EngineCore::create(model, config));
  return std::unique_ptr<LLMEngine>(new LLMEngine(tokenizer, std::move(core)));
}

LLMEngine::LLMEngine(const Tokenizer& tokenizer, std::unique_ptr<EngineCore> core)
    : tokenizer_(tokenizer), core_(std::move(core)), output_processor_(tokenizer) {}

Result<ProcessedRequest> LLMEngine::process_inputs(const PromptInput& prompt, const SamplingParams& params) const {
  ProcessedRequest r;
  r.prompt_token_ids =
      prompt.token_ids ? *prompt.token_ids : tokenizer_.encode(prompt.text, /*add_special_tokens=*/true);
  r.params = params;
  r.cache_salt = prompt.cache_salt;
  VLLM_RETURN_IF_ERROR(core_->check_request(r.prompt_token_ids, r.params));
  return r;
}

Status LLMEngine::add_request(const std::string& request_id, ProcessedRequest request) {
  if (ids_.count(request_id) != 0) return invalid_argument("request id '" + request_id + "' is already in use");
  const RequestId id = next_id_++;
  std::vector<int32_t> prompt = request.prompt_token_ids;
  const OutputKind kind = request.params.output_kind;
  VLLM_RETURN_IF_ERROR(core_->add_request(EngineCoreRequest{id, std::move(request.prompt_token_ids),
                                                            std::move(request.params), std::move(request.cache_salt)}));
  output_processor_.add_request(id, request_id, std::move(prompt), kind);
  ids_.emplace(request_id, id);
  names_.emplace(id, request_id);
  return Status::ok();
}

Status LLMEngine::add_request(const std::string& request_id, const PromptInput& prompt, const SamplingParams& params) {
  VLLM_ASSIGN_OR_RETURN(ProcessedRequest processed, process_inputs(prompt, params));
  return add_request(request_id, std::move(processed));
}

std::optional<RequestOutput> LLMEngine::abort_request(const std::string& request_id) {
  auto it = ids_.find(request_id);
  if (it == ids_.end()) return std::nullopt;
  const RequestId id = it->second;
  core_->abort_request(id);
  ids_.erase(it);
  names_.erase(id);
  return output_processor_.abort_request(id);
}

std::vector<RequestOutput> LLMEngine::step() {
  const std::vector<EngineCoreOutput> core_outputs = core_->step();
  for (const EngineCoreOutput& o : core_outputs) {
    if (!o.finish_reason) continue;
    auto name = names_.find(o.request_id);
    ids_.erase(name->second);
    names_.erase(name);
  }
  return output_processor_.process_outputs(core_outputs);
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
