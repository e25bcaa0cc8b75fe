// The OpenAI-compatible HTTP API of docs/API.md over the engine's front door (EngineClient): routes,
// API-key checks, and the endpoints.  Its handle() is the HttpServer's
// handler; it never blocks an I/O thread on the engine.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "base/work_queue.h"
#include "engine/engine_client.h"
#include "server/chat_prompt.h"
#include "server/completion_request.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace vllm::server {

// Who may share prefix-cache blocks.  A prompt's blocks are found only by
// requests with the same cache salt; the time to first token tells a client
// whether a prompt was cached, so a shared cache lets one client learn what
// another asked.
enum class PrefixCacheIsolation {
  kNone,     // everyone shares: a request's cache_salt is not used
  kApiKey,   // each API key is its own tenant (its hash joins the cache_salt); no keys: as kRequest
  kRequest,  // only the request's cache_salt separates (vLLM)
};
Result<PrefixCacheIsolation> parse_prefix_cache_isolation(const std::string& name);  // none|api-key|request

struct ServerConfig {
  std::vector<std::string> served_model_names;  // the first is the default and the one reported
  std::string model_path;                       // "root" in /v1/models
  std::vector<std::string> api_keys;            // empty: no authentication
  int32_t max_model_len = 0;
  std::string response_role = "assistant";
  uint64_t seed = 0;  // seeds the requests that bring none (--seed)
  PrefixCacheIsolation prefix_cache_isolation = PrefixCacheIsolation::kApiKey;
  ChatOutputConfig chat_output;
  // POST /v1/load_lora_adapter and /v1/unload_lora_adapter exist (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING).
  bool allow_runtime_lora_updating = false;
};

inline constexpr const char* kServerVersion = "0.1.0";

class OpenAIServer {
 public:
  OpenAIServer(EngineClient& engine, const Tokenizer& tokenizer, ChatRenderer chat_renderer, ServerConfig config);

  void handle(HttpRequest request, std::shared_ptr<ResponseChannel> channel);

  // Renders and tokenisations still going give up; later requests are refused.
  void shutdown();
  // After shutdown(): drops the requests no input worker has started and
  // waits for the running ones.  Their connections then close while the
  // HTTP server that serves them is still there: a task that outlived it
  // destroyed a connection's timer after its I/O context (caught by UBSan
  // at a SIGTERM).
  void stop_input_work();

 private:
  // The endpoints that parse a body, render a template or tokenise: on an
  // input worker, giving up when the client leaves or the server stops.
  void handle_input(const std::string& path, const HttpRequest& request, const std::optional<size_t>& api_key,
                    const std::shared_ptr<ResponseChannel>& channel, std::stop_token cancel);
  // The index in api_keys of the key the request carries; nullopt if none.
  std::optional<size_t> api_key_of(const HttpRequest& request) const;
  // The prompt's cache salt as the isolation mode makes it, for a request under `api_key`.
  std::string cache_salt(const std::optional<size_t>& api_key, const std::string& request_salt) const;
  HttpResponse models() const;
  // Both generation endpoints: the parsed request runs as a CompletionJob.
  void generate(Result<CompletionRequest> parsed, const std::optional<size_t>& api_key,
                const std::shared_ptr<ResponseChannel>& channel);
  HttpResponse tokenize(const std::string& body, std::stop_token cancel) const;
  HttpResponse detokenize(const std::string& body) const;
  // What a request's "model" selects: a served name (the base model), or
  // a LoRA adapter's name; nullopt if it names neither.
  struct ModelChoice {
    std::string name;       // what responses report
    std::string lora_name;  // empty: the base model
  };
  std::optional<ModelChoice> resolve_model(const std::string& requested) const;
  HttpResponse load_lora_adapter(const std::string& body);
  HttpResponse unload_lora_adapter(const std::string& body);

  EngineClient& engine_;
  const Tokenizer& tokenizer_;
  ChatRenderer chat_renderer_;
  ServerConfig config_;
  std::vector<std::string> tenant_salts_;  // per API key: the hex SHA-256 of the key
  int64_t created_;
  ServerMetrics metrics_;
  std::mutex seed_mutex_;
  std::mt19937_64 seeds_;
  std::stop_source stopping_;
  WorkQueue input_workers_;  // last: its tasks use everything above
};

}  // namespace vllm::server
