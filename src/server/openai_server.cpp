#include "server/openai_server.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <random>

#include "base/clock.h"
#include "base/json.h"
#include "base/logging.h"
#include "server/api_error.h"
#include "server/completion_job.h"
#include "server/lora_adapter_request.h"
#include "server/random_id.h"
#include "server/tokenize_request.h"

namespace vllm::server {
namespace {

// Threads that parse, render and tokenise requests: two, so that one large
// request does not hold up every small one behind it.
constexpr int kNumInputWorkers = 2;

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

bool starts_with_ci(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    hex += two;
  }
  return hex;
}

// Constant time in the key's contents, so that a wrong key's timing tells
// nothing about how much of it was right.
bool same_key(const std::string& given, const std::string& key) {
  return given.size() == key.size() && CRYPTO_memcmp(given.data(), key.data(), key.size()) == 0;
}

}  // namespace

Result<PrefixCacheIsolation> parse_prefix_cache_isolation(const std::string& name) {
  if (name == "none") return PrefixCacheIsolation::kNone;
  if (name == "api-key") return PrefixCacheIsolation::kApiKey;
  if (name == "request") return PrefixCacheIsolation::kRequest;
  return invalid_argument("--prefix-cache-isolation must be none, api-key or request, got '" + name + "'");
}

OpenAIServer::OpenAIServer(EngineClient& engine, const Tokenizer& tokenizer, ChatRenderer chat_renderer,
                           ServerConfig config)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_renderer_(std::move(chat_renderer)),
      config_(std::move(config)),
      created_(now_unix_seconds()),
      metrics_(config_.served_model_names.front(), config_.max_model_len,
               static_cast<int>(engine.engine_stats().size())),
      seeds_(config_.seed),
      input_workers_("vllm-input", kNumInputWorkers) {
  for (const std::string& key : config_.api_keys) tenant_salts_.push_back(sha256_hex(key));
}

void OpenAIServer::shutdown() { stopping_.request_stop(); }

void OpenAIServer::stop_input_work() { input_workers_.stop(); }

std::optional<size_t> OpenAIServer::api_key_of(const HttpRequest& request) const {
  if (!starts_with_ci(request.authorization, "bearer ")) return std::nullopt;
  const std::string given = request.authorization.substr(7);
  std::optional<size_t> found;
  for (size_t i = 0; i < config_.api_keys.size(); ++i) {  // every key compared: no early exit to time
    if (same_key(given, config_.api_keys[i])) found = i;
  }
  return found;
}

std::string OpenAIServer::cache_salt(const std::optional<size_t>& api_key, const std::string& request_salt) const {
  switch (config_.prefix_cache_isolation) {
    case PrefixCacheIsolation::kNone:
      return "";
    case PrefixCacheIsolation::kApiKey:
      // The tenant's part has a fixed length, so no client's salt can spell another tenant's.
      return api_key ? tenant_salts_[*api_key] + ":" + request_salt : request_salt;
    case PrefixCacheIsolation::kRequest:
      return request_salt;
  }
  return request_salt;
}

std::optional<OpenAIServer::ModelChoice> OpenAIServer::resolve_model(const std::string& requested) const {
  if (requested.empty()) return ModelChoice{config_.served_model_names.front(), ""};
  for (const std::string& name : config_.served_model_names) {
    if (name == requested) return ModelChoice{name, ""};
  }
  for (const LoraModule& lora : engine_.lora_modules()) {
    if (lora.name == requested) return ModelChoice{lora.name, lora.name};
  }
  return std::nullopt;
}

namespace {

OrderedJson model_card(const std::string& id, const std::string& root, const std::string& parent,
                       std::optional<int32_t> max_model_len, int64_t created) {
  OrderedJson permission;
  permission["id"] = "modelperm-" + random_hex();
  permission["object"] = "model_permission";
  permission["created"] = created;
  permission["allow_create_engine"] = false;
  permission["allow_sampling"] = true;
  permission["allow_logprobs"] = true;
  permission["allow_search_indices"] = false;
  permission["allow_view"] = true;
  permission["allow_fine_tuning"] = false;
  permission["organization"] = "*";
  permission["group"] = nullptr;
  permission["is_blocking"] = false;
  OrderedJson card;
  card["id"] = id;
  card["object"] = "model";
  card["created"] = created;
  card["owned_by"] = "vllm";
  card["root"] = root;
  card["parent"] = parent.empty() ? OrderedJson(nullptr) : OrderedJson(parent);
  card["max_model_len"] = max_model_len ? OrderedJson(*max_model_len) : OrderedJson(nullptr);
  card["permission"] = OrderedJson::array({std::move(permission)});
  return card;
}

}  // namespace

HttpResponse OpenAIServer::models() const {
  OrderedJson data = OrderedJson::array();
  for (const std::string& name : config_.served_model_names) {
    data.push_back(model_card(name, config_.model_path, "", config_.max_model_len, created_));
  }
  // As vLLM: an adapter's card has its path as root and its base model as parent, and no max_model_len.
  for (const LoraModule& lora : engine_.lora_modules()) {
    const std::string& parent =
        lora.base_model_name.empty() ? config_.served_model_names.front() : lora.base_model_name;
    data.push_back(model_card(lora.name, lora.path, parent, std::nullopt, created_));
  }
  OrderedJson body;
  body["object"] = "list";
  body["data"] = std::move(data);
  return {200, "application/json", dump_json(body)};
}

HttpResponse OpenAIServer::load_lora_adapter(const std::string& body) {
  Result<LoadLoraRequest> request = parse_load_lora_request(body);
  if (!request.is_ok()) return error_response(request.status());
  if (Status s = engine_.load_lora(request->module, request->load_inplace); !s.is_ok()) return error_response(s);
  VLLM_LOG(Info) << "loaded LoRA adapter '" << request->module.name << "' from " << request->module.path;
  return {200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + request->module.name + "' added successfully."};
}

HttpResponse OpenAIServer::unload_lora_adapter(const std::string& body) {
  Result<std::string> name = parse_unload_lora_request(body);
  if (!name.is_ok()) return error_response(name.status());
  if (Status s = engine_.unload_lora(*name); !s.is_ok()) return error_response(s);
  VLLM_LOG(Info) << "unloaded LoRA adapter '" << *name << "'";
  return {200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + *name + "' removed successfully."};
}

void OpenAIServer::generate(Result<CompletionRequest> parsed, const std::optional<size_t>& api_key,
                            const std::shared_ptr<ResponseChannel>& channel) {
  if (!parsed.is_ok()) return channel->respond(error_response(parsed.status()));
  for (PromptInput& prompt : parsed->prompts) prompt.cache_salt = cache_salt(api_key, prompt.cache_salt);
  const std::optional<ModelChoice> model = resolve_model(parsed->model);
  if (!model) {
    return channel->respond(error_response(404, "The model `" + parsed->model + "` does not exist.", "model"));
  }
  for (PromptInput& prompt : parsed->prompts) prompt.lora_name = model->lora_name;
  if (!parsed->params.seed) {  // vLLM: one server-wide generator, seeded by --seed, for requests without a seed
    std::lock_guard lock(seed_mutex_);
    parsed->params.seed = static_cast<int64_t>(seeds_() >> 1);
  }
  parsed->response_role = config_.response_role;
  ResponseIdentity identity{(parsed->chat ? "chatcmpl-" : "cmpl-") + random_hex(), model->name, now_unix_seconds()};
  auto job =
      std::make_shared<CompletionJob>(engine_, tokenizer_, metrics_, channel, std::move(parsed).value(), identity);
  if (Status s = job->start(); !s.is_ok()) {
    if (s.code() == StatusCode::kResourceExhausted) metrics_.observe_rejected(Rejection::kQueueFull);
    channel->respond(error_response(s));
  }
}

HttpResponse OpenAIServer::tokenize(const std::string& body, std::stop_token cancel) const {
  Result<TokenizeRequest> request = parse_tokenize_request(body, chat_renderer_, std::move(cancel));
  if (!request.is_ok()) return error_response(request.status());
  const std::vector<int32_t> ids = tokenizer_.encode(request->text, request->add_special_tokens);
  OrderedJson out;
  out["count"] = ids.size();
  out["max_model_len"] = config_.max_model_len;
  out["tokens"] = ids;
  out["token_strs"] = nullptr;
  if (request->return_token_strs) {
    OrderedJson strs = OrderedJson::array();
    for (int32_t id : ids) strs.push_back(tokenizer_.id_to_token(id));
    out["token_strs"] = std::move(strs);
  }
  return {200, "application/json", dump_json(out)};
}

HttpResponse OpenAIServer::detokenize(const std::string& body) const {
  Result<std::vector<int32_t>> ids = parse_detokenize_request(body, tokenizer_.vocab_size());
  if (!ids.is_ok()) return error_response(ids.status());
  OrderedJson out;
  out["prompt"] = tokenizer_.decode(*ids, /*skip_special_tokens=*/true);
  return {200, "application/json", dump_json(out)};
}

void OpenAIServer::handle(HttpRequest request, std::shared_ptr<ResponseChannel> channel) {
  const std::string path = path_of(request.target);
  const std::optional<size_t> api_key = api_key_of(request);
  if (path.starts_with("/v1") && request.method != "OPTIONS" && !config_.api_keys.empty() && !api_key) {
    return channel->respond({401, "application/json", R"({"error": "Unauthorized"})"});
  }
  struct Route {
    const char* path;
    const char* method;
  };
  static const Route kRoutes[] = {{"/health", "GET"},    {"/version", "GET"},         {"/metrics", "GET"},
                                  {"/v1/models", "GET"}, {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"},
                                  {"/tokenize", "POST"}, {"/detokenize", "POST"}};
  static const Route kLoraRoutes[] = {{"/v1/load_lora_adapter", "POST"}, {"/v1/unload_lora_adapter", "POST"}};
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (path == r.path) route = &r;
  }
  if (config_.allow_runtime_lora_updating) {
    for (const Route& r : kLoraRoutes) {
      if (path == r.path) route = &r;
    }
  }
  if (route == nullptr) return channel->respond(error_response(404, "Not Found: " + path));
  if (request.method != route->method) {
    return channel->respond(error_response(405, "Method " + request.method + " is not allowed for " + path));
  }
  if (path == "/health") return channel->respond({200, "application/json", ""});
  if (path == "/version")
    return channel->respond({200, "application/json", std::string(R"({"version": ")") + kServerVersion + "\"}"});
  if (path == "/v1/models") return channel->respond(models());
  if (path == "/metrics") {
    return channel->respond({200, "text/plain; version=0.0.4", metrics_.render(engine_.engine_stats())});
  }
  input_workers_.post([this, path, api_key, request = std::move(request), channel] {
    std::stop_source cancel;
    channel->on_close([cancel]() mutable { cancel.request_stop(); });
    const std::stop_callback on_shutdown(stopping_.get_token(), [&cancel] { cancel.request_stop(); });
    if (cancel.stop_requested()) return channel->respond(error_response(503, "the server is shutting down"));
    try {
      handle_input(path, request, api_key, channel, cancel.get_token());
    } catch (const std::exception& e) {
      // A bug, not bad input (that is a 4xx): this request fails, the others go on.
      VLLM_LOG(Error) << "internal error answering POST " << path << ": " << e.what();
      channel->respond(error_response(500, "internal server error"));
    }
  });
}

void OpenAIServer::handle_input(const std::string& path, const HttpRequest& request,
                                const std::optional<size_t>& api_key, const std::shared_ptr<ResponseChannel>& channel,
                                std::stop_token cancel) {
  if (path == "/tokenize") return channel->respond(tokenize(request.body, std::move(cancel)));
  if (path == "/detokenize") return channel->respond(detokenize(request.body));
  if (path == "/v1/load_lora_adapter") return channel->respond(load_lora_adapter(request.body));
  if (path == "/v1/unload_lora_adapter") return channel->respond(unload_lora_adapter(request.body));
  if (path == "/v1/chat/completions") {
    return generate(parse_chat_request(request.body, chat_renderer_, config_.chat_output, cancel), api_key, channel);
  }
  generate(parse_completion_request(request.body), api_key, channel);
}

}  // namespace vllm::server
