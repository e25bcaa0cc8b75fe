// The bodies of POST /v1/completions and /v1/chat/completions (docs/API.md
// §6, §7) as engine inputs.  Unknown fields are ignored, and fields of
// features we do not have yet are refused unless at their default; a known
// field of the wrong type, a value out of range or a conflict is an error
// naming the field.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/chat_output_parser.h"
#include "base/status.h"
#include "engine/prompt_input.h"
#include "engine/sample/sampling_params.h"
#include "server/chat_prompt.h"

namespace vllm::server {

struct CompletionRequest {
  std::vector<PromptInput> prompts;  // choice index = prompt * n + sequence
  SamplingParams params;
  std::string model;  // empty: the default
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;  // every chunk carries the usage so far of its choice
  bool echo = false;
  bool chat = false;           // answer in the chat.completion shapes
  std::string chat_echo_text;  // chat echo: the last message's content when it is the assistant's
  std::string response_role = "assistant";
  // Chat answers with reasoning or tool calls to take apart; none: all content.
  std::optional<api::ChatOutputOptions> chat_output;
};

// What the server reads from chat outputs (serve's --enable-auto-tool-choice,
// --tool-call-parser, --reasoning-parser).
struct ChatOutputConfig {
  std::shared_ptr<const api::ToolCallParser> tool_parser;  // null: tool_choice "auto" is refused
  std::string reasoning_parser;                            // empty: none
  // The reasoning parser's end marker, where the vocabulary has it as one
  // token: a constrained answer starts after it.
  std::optional<int32_t> reasoning_end_token_id;
};

Result<CompletionRequest> parse_completion_request(const std::string& body);

// The messages are rendered with `renderer` into the prompt's text (the
// engine's input processor tokenises it and, unless the request sets
// max_tokens, gives it the rest of the context); the render gives up once
// `stop` is requested.
Result<CompletionRequest> parse_chat_request(const std::string& body, const ChatRenderer& renderer,
                                             const ChatOutputConfig& output_config = {}, std::stop_token stop = {});

}  // namespace vllm::server
