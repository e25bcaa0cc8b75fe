// One POST /v1/completions or /v1/chat/completions in flight: its prompts run as engine requests,
// their outputs are turned into the OpenAI response on the connection's I/O
// strand (never on the engine thread), whole or as server-sent events, and
// the requests are aborted if the client goes away.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine_client.h"
#include "server/completion_request.h"
#include "server/http_server.h"
#include "server/logprobs_json.h"
#include "server/metrics.h"

namespace vllm::server {

struct ResponseIdentity {
  std::string id;  // "cmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
};

class CompletionJob : public std::enable_shared_from_this<CompletionJob> {
 public:
  CompletionJob(EngineClient& engine, const Tokenizer& tokenizer, ServerMetrics& metrics,
                std::shared_ptr<ResponseChannel> channel, CompletionRequest request, ResponseIdentity identity);

  // Queues every prompt; on an error nothing was sent and nothing stays queued.
  Status start();

 private:
  struct Choice {
    std::string text;
    int64_t num_tokens = 0;
    std::optional<FinishReason> finish_reason;
    StopReason stop_reason;
    bool echoed = false;
    double last_token_time = 0.0;
    OrderedJson logprobs;  // accumulated for a whole (non-streamed) answer
    LogprobsCursor logprobs_cursor;
    // Chat answers with reasoning or tool calls: the text is taken apart as
    // it comes; a whole answer gathers the parts.
    std::optional<api::ChatOutputParser> parser;
    std::string reasoning;
    std::vector<std::string> call_ids;  // per tool call, made when it opens
    OrderedJson tool_calls = OrderedJson::array();
  };
  struct Prompt {
    std::string request_id;
    std::shared_ptr<RequestStream> stream;
    int64_t num_prompt_tokens = 0;
    std::string echo_text;
    std::vector<Choice> choices;  // n
    OrderedJson prompt_logprobs;  // when asked: null until the first output brings them
    bool finished = false;
  };

  void drain(size_t prompt);
  void observe(Prompt& prompt, Choice& choice, const CompletionOutput& output);
  OrderedJson chunk(OrderedJson choice) const;
  void send_role_chunks();
  void send_chunk(size_t prompt, const CompletionOutput& output, OrderedJson delta, OrderedJson logprobs);
  // The delta of a chat answer taken apart (its tool calls get their ids here).
  OrderedJson parsed_delta(Choice& choice, api::ChatDelta delta);
  // A whole chat answer's message: content, reasoning, tool calls.
  OrderedJson parsed_message(const Choice& choice) const;
  // "tool_calls" where the answer is calls the model chose or was required to make.
  OrderedJson finish_reason_json(const Choice& choice) const;
  // This output's logprobs in the endpoint's shape (null when not asked for).
  OrderedJson output_logprobs(Choice& choice, const CompletionOutput& output) const;
  void finish();
  // A prompt waited in the queue past --request-timeout: the whole request
  // fails with 503 (an error event, if its stream has started).
  void fail_queue_timeout();
  OrderedJson usage() const;

  EngineClient& engine_;
  const Tokenizer& tokenizer_;
  ServerMetrics& metrics_;
  std::shared_ptr<ResponseChannel> channel_;
  CompletionRequest request_;
  ResponseIdentity identity_;
  std::vector<Prompt> prompts_;
  LogprobsFormatter logprobs_;
  size_t num_finished_ = 0;
  bool failed_ = false;
  double arrival_time_;
};

}  // namespace vllm::server
