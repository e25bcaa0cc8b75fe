#include "engine/output_processor.h"

#include <algorithm>

namespace vllm {

void OutputProcessor::add_request(std::string request_id, std::vector<int32_t> prompt_token_ids,
                                  const SamplingParams& params, std::vector<RequestId> sequence_ids) {
  for (size_t i = 0; i < sequence_ids.size(); ++i) {
    // The completion is decoded after the prompt, so that its leading space is
    // kept as an OpenAI completion returns it.
    sequences_.emplace(sequence_ids[i],
                       Sequence(request_id, static_cast<int32_t>(i),
                                IncrementalDetokenizer(tokenizer_, params.skip_special_tokens, prompt_token_ids),
                                StopStrings(params.stop, params.include_stop_str_in_output), params.min_tokens,
                                params.logprobs.has_value()));
  }
  requests_.emplace(std::move(request_id),
                    Request(std::move(prompt_token_ids), params.output_kind, std::move(sequence_ids)));
}

bool OutputProcessor::update_sequence(Sequence& seq, const EngineCoreOutput& o) {
  if (o.queue_time) seq.queue_time = o.queue_time;
  if (o.stop_token_id) seq.stop_reason = *o.stop_token_id;
  seq.finish_reason = o.finish_reason;
  // Token by token, as without speculative decoding: a stop string that
  // ends at a token ends the output there, whatever tokens came with it.
  const size_t num_tokens = o.new_token_ids.size();
  for (size_t i = 0; i < num_tokens; ++i) {
    const bool last = i + 1 == num_tokens;
    seq.token_ids.push_back(o.new_token_ids[i]);
    seq.cumulative_logprob += o.new_token_logprobs[i];
    if (seq.wants_logprobs) seq.logprobs.push_back(o.new_logprobs[i]);
    std::string new_text;
    if (!(last && o.ended_by_stop_token && !seq.stops.includes_stop_text())) {
      new_text = seq.detokenizer.push(o.new_token_ids[i]);
    }
    if (last && o.finish_reason) new_text += seq.detokenizer.flush();
    seq.text += new_text;

    // vLLM looks for stop strings once the sequence is past min_tokens.
    if (seq.stops.empty() || static_cast<int64_t>(seq.token_ids.size()) <= seq.min_tokens) continue;
    const std::optional<StopStrings::Match> match = seq.stops.find(seq.text, new_text.size());
    if (!match) continue;
    seq.text.resize(std::max(match->text_end, seq.sent_text));
    seq.stop_reason = seq.stops.stop(match->stop_index);
    const bool core_still_runs = !seq.finish_reason;
    seq.finish_reason = FinishReason::kStop;
    return core_still_runs;
  }
  return false;
}

CompletionOutput OutputProcessor::completion(Sequence& seq, OutputKind kind, RequestOutput& out) {
  if (seq.queue_time) out.queue_times.push_back(*std::exchange(seq.queue_time, std::nullopt));
  CompletionOutput c;
  c.index = seq.index;
  c.cumulative_logprob = seq.cumulative_logprob;
  c.finish_reason = seq.finish_reason;
  c.stop_reason = seq.stop_reason;
  const size_t text_end = seq.finish_reason ? seq.text.size() : seq.stops.releasable(seq.text);
  const bool delta = kind == OutputKind::kDelta;
  const size_t text_begin = delta ? seq.sent_text : 0;
  const size_t tokens_begin = delta ? seq.sent_tokens : 0;
  c.text = seq.text.substr(text_begin, text_end - std::min(text_end, text_begin));
  c.token_ids.assign(seq.token_ids.begin() + static_cast<ptrdiff_t>(tokens_begin), seq.token_ids.end());
  if (seq.wants_logprobs) {
    c.logprobs.emplace(seq.logprobs.begin() + static_cast<ptrdiff_t>(tokens_begin), seq.logprobs.end());
  }
  seq.sent_text = std::max(seq.sent_text, text_end);
  seq.sent_tokens = seq.token_ids.size();
  return c;
}

RequestOutput OutputProcessor::request_output(const std::string& request_id, Request& request, bool finished) {
  RequestOutput out;
  out.request_id = request_id;
  out.finished = finished;
  if (request.output_kind != OutputKind::kDelta || !request.sent_prompt) {
    out.prompt_token_ids = request.prompt_token_ids;
    out.prompt_logprobs = request.prompt_logprobs;
  }
  request.sent_prompt = true;
  return out;
}

void OutputProcessor::erase(const std::string& request_id) {
  auto it = requests_.find(request_id);
  for (RequestId id : it->second.sequences) sequences_.erase(id);
  requests_.erase(it);
}

OutputProcessor::StepOutputs OutputProcessor::process_outputs(const std::vector<EngineCoreOutput>& outputs) {
  StepOutputs result;
  for (const EngineCoreOutput& o : outputs) {
    auto seq_it = sequences_.find(o.request_id);
    if (seq_it == sequences_.end()) continue;  // aborted by the front end this step
    Sequence& seq = seq_it->second;
    if (seq.finish_reason) continue;  // a stop string ended it; the core has not heard yet
    const std::string request_id = seq.request_id;
    Request& request = requests_.at(request_id);
    if (o.prompt_logprobs) request.prompt_logprobs = o.prompt_logprobs;
    if (update_sequence(seq, o)) result.stopped.push_back(o.request_id);
    const bool seq_finished = seq.finish_reason.has_value();
    if (seq_finished) --request.num_unfinished;
    const bool finished = request.num_unfinished == 0;

    if (request.output_kind == OutputKind::kFinalOnly) {
      if (!finished) continue;
      RequestOutput out = request_output(request_id, request, true);
      for (RequestId id : request.sequences) {
        out.outputs.push_back(completion(sequences_.at(id), OutputKind::kFinalOnly, out));
      }
      result.outputs.push_back(std::move(out));
    } else {
      RequestOutput out = request_output(request_id, request, finished);
      out.outputs.push_back(completion(seq, request.output_kind, out));
      result.outputs.push_back(std::move(out));
    }
    if (finished) erase(request_id);
  }
  return result;
}

std::optional<RequestOutput> OutputProcessor::abort_request(const std::string& request_id,
                                                            std::vector<RequestId>& unfinished) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return std::nullopt;
  Request& request = it->second;
  RequestOutput out = request_output(request_id, request, true);
  for (RequestId id : request.sequences) {
    Sequence& seq = sequences_.at(id);
    const bool running = !seq.finish_reason;
    if (running) {
      unfinished.push_back(id);
      seq.text += seq.detokenizer.flush();
      seq.finish_reason = FinishReason::kAbort;
    }
    if (running || request.output_kind == OutputKind::kFinalOnly) {
      out.outputs.push_back(completion(seq, request.output_kind, out));
    }
  }
  erase(request_id);
  return out;
}

}  // namespace vllm
