// Chat messages to prompt text (docs/API.md §7.2): the messages are checked
// and normalised (text parts joined with "\n"), then rendered with the
// model's chat template, --chat-template, or the built-in fallback.
#pragma once

#include <optional>
#include <stop_token>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace vllm::server {

struct ChatPrompt {
  OrderedJson messages = OrderedJson::array();
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  Json template_kwargs = Json::object();     // at most a bounded number of keys
  OrderedJson tools = OrderedJson::array();  // the request's tools, for the template (none: not given)
};

// The chat fields of a request body (messages, add_generation_prompt,
// continue_final_message, chat_template_kwargs).  An assistant message's
// tool call arguments sent as JSON text reach the template as objects (vLLM).
Result<ChatPrompt> read_chat_prompt(const Json& body);

class ChatRenderer {
 public:
  // `override_template`: --chat-template, a file path or the template itself.
  static Result<ChatRenderer> create(const Tokenizer& tokenizer, const std::optional<std::string>& override_template);

  // Stops early, with an error, once `stop` is requested (the client left,
  // the server is stopping).
  Result<std::string> render(const ChatPrompt& prompt, std::stop_token stop = {}) const;

 private:
  ChatRenderer(ChatTemplate chat_template, OrderedJson variables)
      : template_(std::move(chat_template)), variables_(std::move(variables)) {}

  ChatTemplate template_;
  OrderedJson variables_;  // bos_token, eos_token, ...
};

}  // namespace vllm::server
