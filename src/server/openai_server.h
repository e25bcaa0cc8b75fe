// The OpenAI-compatible HTTP API of docs/API.md over an AsyncEngine: routes,
// API-key checks, and the endpoints.  Its handle() is the HttpServer's
// handler; it never blocks an I/O thread on the engine.
#pragma once

#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "base/work_queue.h"
#include "engine/async_engine.h"
#include "server/chat_prompt.h"
#include "server/completion_request.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace vllm::server {

struct ServerConfig {
  std::vector<std::string> served_model_names;  // the first is the default and the one reported
  std::string model_path;                       // "root" in /v1/models
  std::vector<std::string> api_keys;            // empty: no authentication
  int32_t max_model_len = 0;
  std::string response_role = "assistant";
  uint64_t seed = 0;  // seeds the requests that bring none (--seed)
};

inline constexpr const char* kServerVersion = "0.1.0";

class OpenAIServer {
 public:
  OpenAIServer(AsyncEngine& engine, const Tokenizer& tokenizer, ChatRenderer chat_renderer, ServerConfig config);

  void handle(HttpRequest request, std::shared_ptr<ResponseChannel> channel);

  // Renders and tokenisations still going give up; later requests are refused.
  void shutdown();

 private:
  // The endpoints that parse a body, render a template or tokenise: on an
  // input worker, giving up when the client leaves or the server stops.
  void handle_input(const std::string& path, const HttpRequest& request,
                    const std::shared_ptr<ResponseChannel>& channel, std::stop_token cancel);
  bool authorized(const HttpRequest& request) const;
  HttpResponse models() const;
  // Both generation endpoints: the parsed request runs as a CompletionJob.
  void generate(Result<CompletionRequest> parsed, const std::shared_ptr<ResponseChannel>& channel);
  HttpResponse tokenize(const std::string& body, std::stop_token cancel) const;
  HttpResponse detokenize(const std::string& body) const;
  // The served name a request's "model" selects; empty if it names none.
  std::string resolve_model(const std::string& requested) const;

  AsyncEngine& engine_;
  const Tokenizer& tokenizer_;
  ChatRenderer chat_renderer_;
  ServerConfig config_;
  int64_t created_;
  ServerMetrics metrics_;
  std::mutex seed_mutex_;
  std::mt19937_64 seeds_;
  std::stop_source stopping_;
  WorkQueue input_workers_;  // last: its tasks use everything above
};

}  // namespace vllm::server
