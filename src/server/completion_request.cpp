#include "server/completion_request.h"

#include "api/json_fields.h"
#include "api/sampling_fields.h"
#include "api/structured_output_fields.h"
#include "server/request_body.h"
#include "server/unsupported_fields.h"

namespace vllm::server {
namespace {

Status bad(const std::string& message, const std::string& param) { return invalid_argument(message).with_param(param); }

// "prompt": "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
Result<std::vector<PromptInput>> read_prompts(const Json& v) {
  std::vector<PromptInput> prompts;
  if (v.is_string()) {
    prompts.push_back(PromptInput::from_text(v.get<std::string>()));
    return prompts;
  }
  if (!v.is_array() || v.empty()) return bad("prompt must be a string, a list of strings or of token ids", "prompt");
  if (v[0].is_number_integer()) {
    VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, api::read_token_ids(v, "prompt"));
    prompts.push_back(PromptInput::from_token_ids(std::move(ids)));
    return prompts;
  }
  for (const Json& p : v) {
    if (p.is_string()) {
      prompts.push_back(PromptInput::from_text(p.get<std::string>()));
    } else if (p.is_array()) {
      VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, api::read_token_ids(p, "prompt"));
      if (ids.empty()) return bad("a token-id prompt must not be empty", "prompt");
      prompts.push_back(PromptInput::from_token_ids(std::move(ids)));
    } else {
      return bad("prompt must be a string, a list of strings or of token ids", "prompt");
    }
  }
  return prompts;
}

// What a request says of how its prompts become tokens and are cached.
struct PromptOptions {
  bool add_special_tokens = true;
  std::string cache_salt;
  std::optional<int32_t> truncate_prompt_tokens;

  void apply(PromptInput& p) const {
    p.add_special_tokens = add_special_tokens;
    p.cache_salt = cache_salt;
    p.truncate_prompt_tokens = truncate_prompt_tokens;
  }
};

// Fields of the endpoint itself rather than of sampling; false if `key` is not one.
Result<bool> read_request_field(CompletionRequest& r, const std::string& key, const Json& v, PromptOptions& options) {
  if (key == "model") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.model, api::read_string(v, key));
    }
  } else if (key == "prompt" && !r.chat) {
    VLLM_ASSIGN_OR_RETURN(r.prompts, read_prompts(v));
  } else if (key == "stream") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.stream, api::read_bool(v, key));
    }
  } else if (key == "stream_options") {
    if (v.is_null()) return true;
    if (!v.is_object()) return bad("field 'stream_options' must be an object", key);
    if (v.contains("include_usage") && !v["include_usage"].is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.include_usage, api::read_bool(v["include_usage"], key));
    }
    if (v.contains("continuous_usage_stats") && !v["continuous_usage_stats"].is_null()) {
      VLLM_ASSIGN_OR_RETURN(r.continuous_usage_stats, api::read_bool(v["continuous_usage_stats"], key));
    }
  } else if (key == "echo") {
    VLLM_ASSIGN_OR_RETURN(r.echo, api::read_bool(v, key));
  } else if (key == "add_special_tokens") {
    VLLM_ASSIGN_OR_RETURN(options.add_special_tokens, api::read_bool(v, key));
  } else if (key == "cache_salt") {
    if (!v.is_null()) {
      VLLM_ASSIGN_OR_RETURN(options.cache_salt, api::read_string(v, key));
    }
  } else if (key == "truncate_prompt_tokens") {
    VLLM_ASSIGN_OR_RETURN(options.truncate_prompt_tokens, api::read_optional_int32(v, key));
  } else if (key == "suffix" && !r.chat) {
    if (!v.is_null()) return bad("suffix is not currently supported", key);
  } else if (r.chat && (key == "messages" || key == "add_generation_prompt" || key == "continue_final_message" ||
                        key == "chat_template_kwargs")) {
    // read_chat_prompt reads these
  } else if (r.chat && key == "max_completion_tokens") {
    // parse_chat_request applies it after max_tokens, which it overrides.
  } else if (r.chat && (key == "logprobs" || key == "top_logprobs")) {
    // Chat's logprobs is a flag with top_logprobs for the count: parse_chat_request reads them.
  } else if (r.chat && (key == "tools" || key == "tool_choice" || key == "parallel_tool_calls")) {
    // parse_chat_request reads these (api::read_tool_request).
  } else {
    return false;
  }
  return true;
}

// The fields both endpoints share, over `r` as the endpoint set it up; the
// prompt options read go to every prompt read, and to `options` for prompts
// the endpoint makes itself.
Status parse_common(const Json& j, CompletionRequest& r, PromptOptions& options) {
  api::SamplingFieldExtras extras;
  for (const auto& [key, value] : j.items()) {
    VLLM_ASSIGN_OR_RETURN(bool known, read_request_field(r, key, value, options));
    if (known) continue;
    VLLM_ASSIGN_OR_RETURN(known, api::read_sampling_field(r.params, extras, key, value));
    if (known) continue;
    // A feature we do not have is refused by name; anything else (user,
    // request_id, fields of no feature) is accepted and ignored (API.md §1).
    VLLM_RETURN_IF_ERROR(check_unsupported_field(key, value));
  }
  VLLM_RETURN_IF_ERROR(api::apply_sampling_extras(r.params, extras));
  if (j.contains("stream_options") && !j["stream_options"].is_null() && !r.stream) {
    return bad("stream_options is only allowed with stream: true", "stream_options");
  }
  if (r.params.logprobs && r.echo) return bad("echo with logprobs is not supported yet", "echo");
  if (r.params.prompt_logprobs && r.stream) {
    return bad("prompt_logprobs are not available when stream is true", "prompt_logprobs");
  }
  for (PromptInput& p : r.prompts) options.apply(p);
  r.params.output_kind = r.stream ? OutputKind::kDelta : OutputKind::kFinalOnly;
  return Status::ok();
}

bool has_tool_fields(const Json& j) {
  return j.contains("tools") || j.contains("tool_choice") || j.contains("parallel_tool_calls");
}

// The tools and the reasoning parser: what the template is shown, what the
// answer is constrained to, and how it is taken apart.  `ordered` is the
// body with its keys in the order sent, when it has tool fields: the
// template prints the tools, and a parameters schema's order is the order
// of the arguments.
Status read_chat_output(const OrderedJson& ordered, const Json& j, const ChatOutputConfig& config, ChatPrompt& chat,
                        CompletionRequest& r) {
  api::ToolRequest tools;
  if (has_tool_fields(j)) {
    VLLM_ASSIGN_OR_RETURN(tools, api::read_tool_request(ordered));
  }
  chat.tools = tools.tools;
  if (tools.choice == api::ToolChoice::kAuto && !config.tool_parser) {
    return bad("\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
               "tool_choice");
  }
  VLLM_ASSIGN_OR_RETURN(std::optional<structured::StructuredOutputSpec> constraint, api::tool_choice_constraint(tools));
  if (constraint) {
    if (r.params.structured_outputs) {
      return bad("tool_choice \"required\" or a named function cannot be combined with " +
                     r.params.structured_outputs->request_field,
                 "tool_choice");
    }
    r.params.structured_outputs = std::move(constraint);
  }
  if (tools.choice == api::ToolChoice::kNone && config.reasoning_parser.empty()) return Status::ok();
  api::ChatOutputOptions output;
  output.tool_choice = tools.choice;
  output.function_name = tools.function_name;
  output.parallel_tool_calls = tools.parallel_tool_calls;
  output.tool_parser = config.tool_parser.get();
  if (tools.choice == api::ToolChoice::kAuto && config.tool_parser->needs_special_tokens()) {
    r.params.skip_special_tokens = false;
  }
  if (!config.reasoning_parser.empty()) {
    VLLM_ASSIGN_OR_RETURN(output.reasoning, api::reasoning_format(config.reasoning_parser, chat.template_kwargs));
    if (output.reasoning->thinking && r.params.structured_outputs) {
      // As vLLM: the thinking is free, the answer after it constrained.
      if (!config.reasoning_end_token_id) {
        return bad(
            "a constrained answer (structured outputs, tool_choice \"required\" or named) after the "
            "thinking needs the reasoning parser's end marker " +
                output.reasoning->end + " to be one token of this model's vocabulary",
            r.params.structured_outputs->request_field);
      }
      r.params.grammar_after_token_id = config.reasoning_end_token_id;
    }
  }
  r.chat_output = std::move(output);
  return Status::ok();
}

}  // namespace

Result<CompletionRequest> parse_completion_request(const std::string& body) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  if (!j.contains("prompt")) return bad("prompt is required", "prompt");
  CompletionRequest r;
  PromptOptions options;
  VLLM_RETURN_IF_ERROR(parse_common(j, r, options));
  api::keep_schema_key_order(body, r.params.structured_outputs);
  return r;
}

Result<CompletionRequest> parse_chat_request(const std::string& body, const ChatRenderer& renderer,
                                             const ChatOutputConfig& output_config, std::stop_token stop) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  VLLM_ASSIGN_OR_RETURN(ChatPrompt chat, read_chat_prompt(j));
  CompletionRequest r;
  r.chat = true;
  PromptOptions options;
  // The template supplies BOS, so by default the rendered text gets no more special tokens.
  options.add_special_tokens = false;
  VLLM_RETURN_IF_ERROR(parse_common(j, r, options));
  // Parsed again, keys in order, once, if a schema or the tools need it.
  const bool schema =
      r.params.structured_outputs && r.params.structured_outputs->kind == structured::ConstraintKind::kJsonSchema;
  const OrderedJson ordered =
      schema || has_tool_fields(j) ? OrderedJson::parse(body, nullptr, false) : OrderedJson(nullptr);
  api::keep_parsed_schema_key_order(ordered, r.params.structured_outputs);
  VLLM_RETURN_IF_ERROR(read_chat_output(ordered, j, output_config, chat, r));
  if (j.contains("max_completion_tokens") && !j["max_completion_tokens"].is_null()) {
    VLLM_ASSIGN_OR_RETURN(r.params.max_tokens, api::read_integer(j["max_completion_tokens"], "max_completion_tokens"));
  }
  bool logprobs = false;
  if (j.contains("logprobs") && !j["logprobs"].is_null()) {
    VLLM_ASSIGN_OR_RETURN(logprobs, api::read_bool(j["logprobs"], "logprobs"));
  }
  int32_t top_logprobs = 0;
  if (j.contains("top_logprobs") && !j["top_logprobs"].is_null()) {
    VLLM_ASSIGN_OR_RETURN(top_logprobs, api::read_int32(j["top_logprobs"], "top_logprobs"));
    if (top_logprobs < 0) return bad("top_logprobs must be at least 0", "top_logprobs");
  }
  if (top_logprobs > 0 && !logprobs) return bad("top_logprobs requires logprobs: true", "top_logprobs");
  if (logprobs) r.params.logprobs = top_logprobs;
  Result<std::string> text = renderer.render(chat, std::move(stop));
  if (!text.is_ok()) return text.status().with_param("messages");
  PromptInput prompt = PromptInput::from_text(std::move(*text));
  options.apply(prompt);
  // Chat's default max_tokens is the rest of the context (vLLM, unlike OpenAI).
  const bool explicit_max = (j.contains("max_tokens") && !j["max_tokens"].is_null()) ||
                            (j.contains("max_completion_tokens") && !j["max_completion_tokens"].is_null());
  r.params.max_tokens_from_context = !explicit_max;
  r.prompts.push_back(std::move(prompt));
  const OrderedJson& last = chat.messages.back();
  if (r.echo && last["role"] == "assistant" && last["content"].is_string()) {
    r.chat_echo_text = last["content"].get<std::string>();
  }
  return r;
}

}  // namespace vllm::server
