#include "server/completion_job.h"

#include "api/output_json.h"
#include "base/clock.h"
#include "base/json.h"
#include "server/api_error.h"
#include "server/random_id.h"

namespace vllm::server {
namespace {

OrderedJson chat_message(const std::string& role, const std::string& content) {
  OrderedJson m;
  m["role"] = role;
  m["content"] = content;
  m["refusal"] = nullptr;
  m["annotations"] = nullptr;
  m["audio"] = nullptr;
  m["function_call"] = nullptr;
  m["tool_calls"] = OrderedJson::array();
  // vLLM's name for the thinking (since v0.12), and the name before it, which clients still read.
  m["reasoning"] = nullptr;
  m["reasoning_content"] = nullptr;
  return m;
}

bool only_whitespace(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

CompletionJob::CompletionJob(EngineClient& engine, const Tokenizer& tokenizer, ServerMetrics& metrics,
                             std::shared_ptr<ResponseChannel> channel, CompletionRequest request,
                             ResponseIdentity identity)
    : engine_(engine),
      tokenizer_(tokenizer),
      metrics_(metrics),
      channel_(std::move(channel)),
      request_(std::move(request)),
      identity_(std::move(identity)),
      logprobs_(tokenizer, request_.chat, request_.params.logprobs.value_or(0)),
      arrival_time_(now_seconds()) {}

Status CompletionJob::start() {
  const auto n = static_cast<size_t>(request_.params.n);
  for (size_t p = 0; p < request_.prompts.size(); ++p) {
    const PromptInput& input = request_.prompts[p];
    Prompt prompt;
    prompt.request_id = identity_.id + "-" + std::to_string(p);
    prompt.choices.resize(n);
    // The prompt's last token (known with the first output) is the context of the first generated one's string.
    for (Choice& c : prompt.choices) {
      c.logprobs = logprobs_.empty();
      if (request_.chat_output) c.parser.emplace(*request_.chat_output);
    }
    if (request_.chat) {
      prompt.echo_text = request_.chat_echo_text;
    } else if (request_.echo) {
      prompt.echo_text = input.token_ids ? tokenizer_.decode(*input.token_ids, true) : input.text;
    }
    Result<std::shared_ptr<RequestStream>> stream = engine_.add_request(prompt.request_id, input, request_.params);
    if (!stream.is_ok()) {
      for (const Prompt& added : prompts_) engine_.abort(added.request_id);
      prompts_.clear();
      return request_.prompts.size() > 1 ? stream.status().with_context("prompt " + std::to_string(p))
                                         : stream.status();
    }
    prompt.stream = std::move(stream).value();
    prompts_.push_back(std::move(prompt));
  }
  if (request_.stream) {
    channel_->start_events();
    if (request_.chat) send_role_chunks();
  }
  std::weak_ptr<CompletionJob> weak = weak_from_this();
  channel_->on_close([weak] {
    if (auto self = weak.lock()) {
      for (const Prompt& p : self->prompts_) self->engine_.abort(p.request_id);
    }
  });
  for (size_t p = 0; p < prompts_.size(); ++p) {
    // The stream holds the job alive until its last output is drained.
    prompts_[p].stream->set_listener(
        [self = shared_from_this(), p] { self->channel_->defer([self, p] { self->drain(p); }); });
  }
  return Status::ok();
}

void CompletionJob::drain(size_t p) {
  Prompt& prompt = prompts_[p];
  RequestOutput out;
  while (!failed_ && !prompt.finished && prompt.stream->try_next(out)) {
    if (!out.prompt_token_ids.empty() && prompt.num_prompt_tokens == 0) {
      prompt.num_prompt_tokens = static_cast<int64_t>(out.prompt_token_ids.size());
      metrics_.observe_tokens(prompt.stream->engine_index(), prompt.num_prompt_tokens, 0);
      for (Choice& c : prompt.choices) c.logprobs_cursor.previous_token = out.prompt_token_ids.back();
    }
    if (out.prompt_logprobs && prompt.prompt_logprobs.is_null()) {
      prompt.prompt_logprobs = prompt_logprobs_json(tokenizer_, *out.prompt_logprobs);
    }
    for (double q : out.queue_times) metrics_.observe_queue_time(prompt.stream->engine_index(), q);
    for (const CompletionOutput& c : out.outputs) {
      if (c.finish_reason == FinishReason::kQueueTimeout) return fail_queue_timeout();
      Choice& choice = prompt.choices[static_cast<size_t>(c.index)];
      observe(prompt, choice, c);
      std::string echo;
      if (request_.echo && !choice.echoed) {
        echo = prompt.echo_text;
        choice.echoed = true;
      }
      choice.finish_reason = c.finish_reason;
      choice.stop_reason = c.stop_reason;
      OrderedJson logprobs = output_logprobs(choice, c);
      if (choice.parser) {
        // The echo is the prompt's text, not the model's: no parser reads it.
        api::ChatDelta delta;
        delta.content = std::move(echo);
        delta.append(choice.parser->push(c.text));
        if (c.finish_reason) delta.append(choice.parser->finish());
        OrderedJson json = parsed_delta(choice, std::move(delta));
        if (request_.stream && (!json.empty() || c.finish_reason || !logprobs.is_null())) {
          send_chunk(p, c, std::move(json), logprobs);
        }
        continue;
      }
      std::string text = std::move(echo) + c.text;
      if (request_.stream) {
        if (!text.empty() || c.finish_reason || !logprobs.is_null()) {
          OrderedJson delta = request_.chat ? OrderedJson{{"content", std::move(text)}} : OrderedJson(std::move(text));
          send_chunk(p, c, std::move(delta), logprobs);
        }
      } else {
        choice.text += text;
      }
    }
    if (out.finished) {
      prompt.finished = true;
      prompt.stream->set_listener(nullptr);  // the listener holds this job: let it go
      if (++num_finished_ == prompts_.size()) finish();
    }
  }
}

void CompletionJob::observe(Prompt& prompt, Choice& choice, const CompletionOutput& output) {
  const double now = now_seconds();
  const int engine = prompt.stream->engine_index();
  if (!output.token_ids.empty()) {
    if (choice.num_tokens == 0) {
      metrics_.observe_first_token(engine, now - arrival_time_);
    } else {
      metrics_.observe_inter_token(engine, now - choice.last_token_time);
    }
    choice.last_token_time = now;
    choice.num_tokens += static_cast<int64_t>(output.token_ids.size());
    metrics_.observe_tokens(engine, 0, static_cast<int64_t>(output.token_ids.size()));
  }
  if (output.finish_reason) {
    metrics_.observe_finished(engine, *output.finish_reason, now - arrival_time_, prompt.num_prompt_tokens,
                              choice.num_tokens);
  }
}

OrderedJson CompletionJob::chunk(OrderedJson choice) const {
  OrderedJson chunk;
  chunk["id"] = identity_.id;
  chunk["object"] = request_.chat ? "chat.completion.chunk" : "text_completion";
  chunk["created"] = identity_.created;
  chunk["model"] = identity_.model;
  chunk["choices"] = OrderedJson::array({std::move(choice)});
  if (!request_.chat) chunk["usage"] = nullptr;
  return chunk;
}

// Chat streams open every choice with the assistant's role.
void CompletionJob::send_role_chunks() {
  for (size_t p = 0; p < prompts_.size(); ++p) {
    for (size_t i = 0; i < prompts_[p].choices.size(); ++i) {
      OrderedJson choice;
      choice["index"] = p * prompts_[p].choices.size() + i;
      choice["delta"] = OrderedJson{{"role", request_.response_role}, {"content", ""}};
      choice["logprobs"] = nullptr;
      choice["finish_reason"] = nullptr;
      channel_->send_event(dump_json(chunk(std::move(choice))));
    }
  }
}

OrderedJson CompletionJob::output_logprobs(Choice& choice, const CompletionOutput& output) const {
  if (!request_.params.logprobs || !output.logprobs) return nullptr;
  if (!request_.stream) {
    logprobs_.append(choice.logprobs, output.token_ids, *output.logprobs, choice.logprobs_cursor);
    return nullptr;
  }
  OrderedJson delta = logprobs_.empty();
  logprobs_.append(delta, output.token_ids, *output.logprobs, choice.logprobs_cursor);
  return delta;
}

void CompletionJob::send_chunk(size_t p, const CompletionOutput& output, OrderedJson delta, OrderedJson logprobs) {
  OrderedJson choice;
  choice["index"] = p * prompts_[p].choices.size() + static_cast<size_t>(output.index);
  choice[request_.chat ? "delta" : "text"] = std::move(delta);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason_json(prompts_[p].choices[static_cast<size_t>(output.index)]);
  choice["stop_reason"] = api::stop_reason_json(output.stop_reason);
  OrderedJson c = chunk(std::move(choice));
  if (request_.include_usage && request_.continuous_usage_stats) {
    const Prompt& prompt = prompts_[p];
    const int64_t generated = prompt.choices[static_cast<size_t>(output.index)].num_tokens;
    c["usage"] = OrderedJson{{"prompt_tokens", prompt.num_prompt_tokens},
                             {"completion_tokens", generated},
                             {"total_tokens", prompt.num_prompt_tokens + generated}};
  }
  channel_->send_event(dump_json(c));
}

void CompletionJob::fail_queue_timeout() {
  failed_ = true;
  metrics_.observe_rejected(Rejection::kQueueTimeout);
  for (Prompt& p : prompts_) {
    p.stream->set_listener(nullptr);
    if (!p.finished) engine_.abort(p.request_id);
  }
  HttpResponse error = error_response(
      Status(StatusCode::kResourceExhausted, "the request waited in the queue longer than --request-timeout"));
  if (!request_.stream) return channel_->respond(std::move(error));
  channel_->send_event(error.body);
  channel_->send_event("[DONE]");
  channel_->end_events();
}

OrderedJson CompletionJob::parsed_delta(Choice& choice, api::ChatDelta delta) {
  OrderedJson json = OrderedJson::object();
  if (!delta.reasoning.empty()) {
    json["reasoning"] = delta.reasoning;
    json["reasoning_content"] = delta.reasoning;
    choice.reasoning += delta.reasoning;
  }
  if (!delta.content.empty()) {
    choice.text += delta.content;
    json["content"] = std::move(delta.content);
  }
  if (delta.tool_calls.empty()) return json;
  OrderedJson calls = OrderedJson::array();
  for (api::ToolCallDelta& call : delta.tool_calls) {
    OrderedJson item{{"index", call.index}};
    if (call.opens) {
      const api::ToolCallParser* parser = request_.chat_output->tool_parser;
      std::string id = parser ? parser->make_call_id(random_hex()) : api::default_tool_call_id(random_hex());
      item["id"] = id;
      item["type"] = "function";
      item["function"] = OrderedJson{{"name", call.name}, {"arguments", call.arguments}};
      choice.tool_calls.push_back(
          OrderedJson{{"id", std::move(id)}, {"type", "function"}, {"function", item["function"]}});
    } else {
      item["function"] = OrderedJson{{"arguments", call.arguments}};
      choice.tool_calls[call.index]["function"]["arguments"].get_ref<std::string&>() += call.arguments;
    }
    calls.push_back(std::move(item));
  }
  json["tool_calls"] = std::move(calls);
  return json;
}

OrderedJson CompletionJob::parsed_message(const Choice& choice) const {
  const api::ChatOutputOptions& options = *request_.chat_output;
  OrderedJson m = chat_message(request_.response_role, choice.text);
  // As vLLM: the calls the model chose leave no content but what it wrote
  // before them; a reasoning answer that is all thought has none.
  const bool auto_calls = options.tool_choice == api::ToolChoice::kAuto && choice.parser->chose_tools();
  if ((auto_calls && only_whitespace(choice.text)) ||
      (options.reasoning && choice.text.empty() && options.tool_choice == api::ToolChoice::kNone)) {
    m["content"] = nullptr;
  }
  m["tool_calls"] = choice.tool_calls;
  if (!choice.reasoning.empty()) {
    m["reasoning"] = choice.reasoning;
    m["reasoning_content"] = choice.reasoning;
  }
  return m;
}

OrderedJson CompletionJob::finish_reason_json(const Choice& choice) const {
  // As vLLM: calls the model chose end in "tool_calls"; required ones only if
  // the answer ended by itself (a "length" stays one).
  const bool auto_choice = request_.chat_output && request_.chat_output->tool_choice == api::ToolChoice::kAuto;
  if (choice.finish_reason && choice.parser && choice.parser->chose_tools() &&
      (auto_choice || *choice.finish_reason == FinishReason::kStop)) {
    return "tool_calls";
  }
  return api::finish_reason_json(choice.finish_reason);
}

OrderedJson CompletionJob::usage() const {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const Prompt& p : prompts_) {
    prompt_tokens += p.num_prompt_tokens;
    for (const Choice& c : p.choices) completion_tokens += c.num_tokens;
  }
  OrderedJson u;
  u["prompt_tokens"] = prompt_tokens;
  u["completion_tokens"] = completion_tokens;
  u["total_tokens"] = prompt_tokens + completion_tokens;
  u["prompt_tokens_details"] = nullptr;
  return u;
}

void CompletionJob::finish() {
  const OrderedJson counts = usage();
  channel_->set_log_detail("prompt_tokens=" + counts["prompt_tokens"].dump() +
                           " completion_tokens=" + counts["completion_tokens"].dump());
  OrderedJson body;
  body["id"] = identity_.id;
  body["object"] = request_.chat ? (request_.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  body["created"] = identity_.created;
  body["model"] = identity_.model;
  if (request_.stream) {
    if (request_.include_usage) {
      body["choices"] = OrderedJson::array();
      body["usage"] = usage();
      channel_->send_event(dump_json(body));
    }
    channel_->send_event("[DONE]");
    channel_->end_events();
    return;
  }
  OrderedJson choices = OrderedJson::array();
  for (size_t p = 0; p < prompts_.size(); ++p) {
    for (size_t i = 0; i < prompts_[p].choices.size(); ++i) {
      const Choice& c = prompts_[p].choices[i];
      OrderedJson choice;
      choice["index"] = p * prompts_[p].choices.size() + i;
      if (c.parser) {
        choice["message"] = parsed_message(c);
      } else if (request_.chat) {
        choice["message"] = chat_message(request_.response_role, c.text);
      } else {
        choice["text"] = c.text;
      }
      choice["logprobs"] = request_.params.logprobs ? c.logprobs : OrderedJson(nullptr);
      choice["finish_reason"] = finish_reason_json(c);
      choice["stop_reason"] = api::stop_reason_json(c.stop_reason);
      if (!request_.chat) choice["prompt_logprobs"] = prompts_[p].prompt_logprobs;
      choices.push_back(std::move(choice));
    }
  }
  body["choices"] = std::move(choices);
  body["usage"] = usage();
  body["system_fingerprint"] = nullptr;
  body["service_tier"] = nullptr;
  if (request_.chat) body["prompt_logprobs"] = prompts_.front().prompt_logprobs;
  body["kv_transfer_params"] = nullptr;
  channel_->respond({200, "application/json", dump_json(body)});
}

}  // namespace vllm::server
