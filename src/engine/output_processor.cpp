#include "engine/output_processor.h"

namespace vllm {

void OutputProcessor::add_request(RequestId id, std::string request_id, std::vector<int32_t> prompt_token_ids,
                                  OutputKind output_kind) {
  // The completion is decoded after the prompt, so that its leading space is
  // kept as an OpenAI completion returns it.
  IncrementalDetokenizer detokenizer(tokenizer_, /*skip_special_tokens=*/true, prompt_token_ids);
  states_.emplace(
      id,
      State{std::move(request_id), std::move(prompt_token_ids), output_kind, std::move(detokenizer), {}, {}, false});
}

RequestOutput OutputProcessor::make_output(State& state, std::string new_text, std::vector<int32_t> new_ids,
                                           std::optional<FinishReason> finish_reason) {
  RequestOutput out;
  out.request_id = state.request_id;
  out.finished = finish_reason.has_value();
  CompletionOutput completion;
  completion.finish_reason = finish_reason;
  if (state.output_kind == OutputKind::kDelta) {
    if (!state.sent_prompt) out.prompt_token_ids = state.prompt_token_ids;
    completion.text = std::move(new_text);
    completion.token_ids = std::move(new_ids);
  } else {
    state.text += new_text;
    state.token_ids.insert(state.token_ids.end(), new_ids.begin(), new_ids.end());
    out.prompt_token_ids = state.prompt_token_ids;
    completion.text = state.text;
    completion.token_ids = state.token_ids;
  }
  state.sent_prompt = true;
  out.outputs.push_back(std::move(completion));
  return out;
}

std::vector<RequestOutput> OutputProcessor::process_outputs(const std::vector<EngineCoreOutput>& outputs) {
  std::vector<RequestOutput> results;
  for (const EngineCoreOutput& o : outputs) {
    auto it = states_.find(o.request_id);
    if (it == states_.end()) continue;  // aborted by the front end this step
    State& state = it->second;
    std::string new_text;
    for (int32_t id : o.new_token_ids) new_text += state.detokenizer.push(id);
    if (o.finish_reason) new_text += state.detokenizer.flush();
    if (state.output_kind == OutputKind::kFinalOnly && !o.finish_reason) {
      state.text += new_text;
      state.token_ids.insert(state.token_ids.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      continue;
    }
    results.push_back(make_output(state, std::move(new_text), o.new_token_ids, o.finish_reason));
    if (o.finish_reason) states_.erase(it);
  }
  return results;
}

std::optional<RequestOutput> OutputProcessor::abort_request(RequestId id) {
  auto it = states_.find(id);
  if (it == states_.end()) return std::nullopt;
  RequestOutput out = make_output(it->second, it->second.detokenizer.flush(), {}, FinishReason::kAbort);
  states_.erase(it);
  return out;
}

}  // namespace vllm
