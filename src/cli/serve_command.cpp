// `vllm-cpp serve [MODEL]`: the OpenAI-compatible HTTP server.  Loads the
// model, then opens the port; SIGINT or SIGTERM stop it: no new connections,
// in-flight requests end with finish_reason "abort", exit status 0.
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "api/reasoning/reasoning_parser.h"
#include "api/tools/tool_call_parser.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/serve_compat_flags.h"
#include "server/http_server.h"
#include "server/openai_server.h"

namespace vllm::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string model_flag;
  std::string host = "0.0.0.0";
  uint16_t port = 8000;
  std::vector<std::string> api_keys;
  std::vector<std::string> served_model_names;
  uint64_t max_request_body_bytes = 16 << 20;
  size_t max_connections = 0;
  double header_timeout = 30;
  double body_timeout = 60;
  std::optional<double> keep_alive_timeout;
  double write_timeout = 60;
  std::optional<std::string> chat_template;
  bool log_requests = true;
  std::string tokenizer;
  std::string response_role = "assistant";
  std::optional<uint64_t> seed;
  std::string prefix_cache_isolation = "api-key";
  int32_t max_waiting_requests = 0;
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;
  std::string reasoning_parser;
  CompatFlags compat;
  EngineFlags engine;
};

// How long in-flight answers get to end after SIGINT/SIGTERM.
constexpr double kShutdownGraceSeconds = 5.0;

// Whatever is still running (a tokenisation of a huge prompt cannot be
// interrupted), the process is gone a little after the grace period.
void exit_after_grace_period() {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kShutdownGraceSeconds + 2.0));
    std::fprintf(stderr, "shutdown is taking too long; exiting now\n");
    std::_Exit(0);
  }).detach();
}

// SIGINT and SIGTERM are blocked in every thread and taken by sigwait here.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// What chat answers are read for: the model's own tool calls, its thinking.
Result<server::ChatOutputConfig> chat_output_config(const ServeOptions& o) {
  server::ChatOutputConfig config;
  if (o.enable_auto_tool_choice && o.tool_call_parser.empty()) {
    return invalid_argument("--enable-auto-tool-choice needs --tool-call-parser");
  }
  if (!o.tool_call_parser.empty()) {
    VLLM_ASSIGN_OR_RETURN(std::unique_ptr<api::ToolCallParser> parser, api::make_tool_call_parser(o.tool_call_parser));
    // As vLLM: the parser reads answers only where the model may choose.
    if (o.enable_auto_tool_choice) config.tool_parser = std::move(parser);
  }
  if (!o.reasoning_parser.empty()) {
    VLLM_RETURN_IF_ERROR(api::check_reasoning_parser_name(o.reasoning_parser));
    config.reasoning_parser = o.reasoning_parser;
  }
  return config;
}

// The reasoning parser's end marker as one token of the vocabulary (Qwen3's
// and DeepSeek-R1's </think> are added tokens), if it is one.
std::optional<int32_t> reasoning_end_token(const std::string& parser, const Tokenizer& tokenizer) {
  if (parser.empty()) return std::nullopt;
  Result<api::ReasoningFormat> format = api::reasoning_format(parser, Json::object());
  if (!format.is_ok()) return std::nullopt;  // the name was checked at start-up
  const std::vector<int32_t> ids = tokenizer.encode(format->end, /*add_special_tokens=*/false);
  return ids.size() == 1 ? std::optional<int32_t>(ids[0]) : std::nullopt;
}

// vLLM's reading of VLLM_ALLOW_RUNTIME_LORA_UPDATING: "1" or "true", any case, spaces around ignored.
bool runtime_lora_updating_allowed() {
  const char* env = std::getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING");
  if (env == nullptr) return false;
  std::string value = env;
  const size_t first = value.find_first_not_of(" \t\n\r");
  value = first == std::string::npos ? "" : value.substr(first, value.find_last_not_of(" \t\n\r") - first + 1);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value == "1" || value == "true";
}

int run_serve(ServeOptions o) {
  const std::string model_dir = !o.model_flag.empty() ? o.model_flag : !o.model.empty() ? o.model : default_model_dir();
  if (o.api_keys.empty()) {
    if (const char* key = std::getenv("VLLM_API_KEY"); key != nullptr && *key != '\0') o.api_keys.push_back(key);
  }
  if (Status s = check_compat_flags(o.compat); !s.is_ok()) return report_error(s.message());
  Result<server::PrefixCacheIsolation> isolation = server::parse_prefix_cache_isolation(o.prefix_cache_isolation);
  if (!isolation.is_ok()) return report_error(isolation.status().message());
  Result<server::ChatOutputConfig> chat_output = chat_output_config(o);
  if (!chat_output.is_ok()) return report_error(chat_output.status().message());
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts, so all inherit it

  Result<LoadedEngine> loaded = load_engine(model_dir, o.engine, o.tokenizer, Workload::kServing);
  if (!loaded.is_ok()) return report_error(loaded.status().message());
  if (loaded->worker_finished) return 0;
  const int32_t max_model_len = loaded->engine->core().config().config.scheduler.max_model_len;
  Result<std::unique_ptr<EngineClient>> client = start_engine_client(*loaded, o.max_waiting_requests);
  if (!client.is_ok()) return report_error(client.status().message());
  if (*client == nullptr) return 0;  // a data-parallel replica's leader, which rank 0 has stopped
  EngineClient& engine = **client;
  server::ServerConfig config;
  config.served_model_names = o.served_model_names.empty() ? std::vector<std::string>{model_dir} : o.served_model_names;
  config.model_path = model_dir;
  config.api_keys = o.api_keys;
  config.max_model_len = max_model_len;
  config.response_role = o.response_role;
  config.seed = o.seed.value_or(0);
  config.prefix_cache_isolation = *isolation;
  config.chat_output = std::move(chat_output).value();
  config.allow_runtime_lora_updating = runtime_lora_updating_allowed();
  if (config.allow_runtime_lora_updating) {
    std::fprintf(stderr,
                 "LoRA adapters may be loaded and unloaded at run time (VLLM_ALLOW_RUNTIME_LORA_UPDATING): "
                 "POST /v1/load_lora_adapter and /v1/unload_lora_adapter are open to every client\n");
  }
  config.chat_output.reasoning_end_token_id =
      reasoning_end_token(config.chat_output.reasoning_parser, *loaded->tokenizer);
  Result<server::ChatRenderer> chat = server::ChatRenderer::create(*loaded->tokenizer, o.chat_template);
  if (!chat.is_ok()) return report_error(chat.status().message());
  server::OpenAIServer api(engine, *loaded->tokenizer, std::move(chat).value(), config);

  server::HttpServerOptions http;
  http.host = o.host;
  http.port = o.port;
  http.max_body_bytes = o.max_request_body_bytes;
  http.max_connections = o.max_connections;
  http.header_timeout_seconds = o.header_timeout;
  http.body_timeout_seconds = o.body_timeout;
  http.write_timeout_seconds = o.write_timeout;
  if (!o.keep_alive_timeout) {  // vLLM's variable for uvicorn's keep-alive time-out
    if (const char* env = std::getenv("VLLM_HTTP_TIMEOUT_KEEP_ALIVE"); env != nullptr && *env != '\0') {
      o.keep_alive_timeout = std::atof(env);
    }
  }
  http.keep_alive_timeout_seconds = o.keep_alive_timeout.value_or(5.0);
  http.log_requests = o.log_requests && !o.compat.disable_uvicorn_access_log;
  Result<std::unique_ptr<server::HttpServer>> http_server =
      server::HttpServer::start(http, [&api](server::HttpRequest request, std::shared_ptr<server::ResponseChannel> c) {
        api.handle(std::move(request), std::move(c));
      });
  if (!http_server.is_ok()) return report_error(http_server.status().message());
  std::fprintf(stderr, "serving %s as '%s' on http://%s:%u (max_model_len %d)\n", model_dir.c_str(),
               config.served_model_names.front().c_str(), o.host.c_str(), (*http_server)->port(), max_model_len);

  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "%s: shutting down\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  exit_after_grace_period();
  (*http_server)->stop_accepting();
  api.shutdown();     // renders and tokenisations in progress give up
  engine.shutdown();  // in-flight requests end with "abort", delivered through the I/O threads
  if (!(*http_server)->wait_until_idle(kShutdownGraceSeconds)) {
    std::fprintf(stderr, "closing connections still being answered\n");
  }
  api.stop_input_work();  // no request's task keeps a connection past the HTTP server
  http_server->reset();   // then the connections close and the I/O threads stop
  return 0;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("model", o->model, "Hugging Face model directory (default: the embedded stories260k)");
  app.add_option("--model", o->model_flag, "The model directory, as a flag");
  app.add_option("--host", o->host, "Address to listen on")->capture_default_str();
  app.add_option("--port", o->port, "Port to listen on (0: any free port)")->capture_default_str();
  app.add_option("--api-key", o->api_keys, "Require 'Authorization: Bearer KEY' on /v1 (repeatable; env VLLM_API_KEY)");
  app.add_option("--served-model-name", o->served_model_names, "Model names the API answers to (default: MODEL)");
  app.add_option("--max-request-body-bytes", o->max_request_body_bytes, "Larger request bodies get 413")
      ->capture_default_str();
  app.add_option("--max-connections", o->max_connections,
                 "Open connections at most; beyond it idle ones are closed, else 503 (default: from the "
                 "file-descriptor limit)");
  app.add_option("--http-header-timeout", o->header_timeout,
                 "Seconds from a request's first byte to the end of its header (else 408)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-body-timeout", o->body_timeout, "Seconds for a request's body after its header (else 408)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-keep-alive-timeout", o->keep_alive_timeout,
                 "Seconds an idle connection stays open (default 5, or env VLLM_HTTP_TIMEOUT_KEEP_ALIVE)")
      ->check(CLI::PositiveNumber);
  app.add_option("--http-write-timeout", o->write_timeout,
                 "Seconds a client may read nothing of its answer before it is dropped")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--chat-template", o->chat_template, "Chat template: a file, or the Jinja text itself");
  app.add_flag("--enable-log-requests,!--disable-log-requests", o->log_requests,
               "A log line per request: method, path, status, tokens, latency (default: on)");
  app.add_option("--tokenizer", o->tokenizer, "Tokenizer directory (default: MODEL)");
  app.add_option("--response-role", o->response_role, "The role of chat answers")->capture_default_str();
  app.add_option("--seed", o->seed, "Seeds the sampling of requests that bring no seed (default 0)");
  app.add_option("--prefix-cache-isolation", o->prefix_cache_isolation,
                 "Who shares prefix-cache blocks: api-key (each --api-key its own tenant, and cache_salt), "
                 "request (only a request's cache_salt, as vLLM), none (everyone)")
      ->capture_default_str();
  app.add_option("--max-waiting-requests", o->max_waiting_requests,
                 "Requests that may wait to run; beyond it 503 with Retry-After (0: no limit, as vLLM)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--request-timeout", o->engine.max_queue_seconds,
                 "Seconds a request may wait before it first runs; then 503 (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--enable-auto-tool-choice", o->enable_auto_tool_choice,
               "Let requests' tool_choice be \"auto\" (the default with tools): --tool-call-parser reads the calls");
  app.add_option("--tool-call-parser", o->tool_call_parser, "How the model writes tool calls")
      ->check(CLI::IsMember({"hermes", "llama3_json", "mistral", "pythonic"}));
  app.add_option("--reasoning-parser", o->reasoning_parser, "Return the model's thinking apart, as reasoning_content")
      ->check(CLI::IsMember({"deepseek_r1", "qwen3"}));
  add_engine_flags(app, o->engine);
  add_compat_flags(app, o->compat);
  return [o] { return run_serve(*o); };
}

}  // namespace vllm::cli
